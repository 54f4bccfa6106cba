// cli/cmd_problems.cpp — `kernelarc problems PATH...`: lists problems with op type, dtypes,
// workload count and whether every input is available; `--oracle-spec` prints what the oracle's
// scripts are told about each problem instead (oracle/spec.h).
#include <fmt/format.h>

#include <set>

#include "cli/commands.h"
#include "oracle/spec.h"
#include "problem/problem.h"
#include "util/error.h"

namespace ka::cli {

void register_problems(CLI::App& app) {
  auto* cmd = app.add_subcommand("problems", "List the problems in folders (SOL-ExecBench layout) and check they load");
  static std::vector<std::string> paths;
  static bool show_missing = false, strict = false, oracle_spec_out = false;
  cmd->add_option("PATH", paths, "A problem folder, or a folder holding problem folders")->required();
  cmd->add_flag("--why", show_missing, "Say which input is unavailable for problems that have one");
  cmd->add_flag("--strict", strict, "Treat an unavailable input (missing or bad blob) as an error (exit 2)");
  cmd->add_flag("--oracle-spec", oracle_spec_out,
                "Print each problem's oracle spec (the resolved workloads the oracle's scripts read), one JSON "
                "document per line, instead of the table");
  cmd->callback([] {
    std::vector<std::filesystem::path> dirs;
    for (const auto& p : paths)
      for (auto& d : find_problem_dirs(p)) dirs.push_back(d);
    if (dirs.empty()) user_error("no problem folders (with a definition.json) under {}", fmt::join(paths, ", "));
    if (oracle_spec_out) {
      for (const auto& d : dirs) fmt::print("{}\n", oracle_spec(load_problem(d)).dump());
      return;
    }
    fmt::print("{:<62} {:<20} {:<34} {:>9} {}\n", "problem", "op type", "dtypes", "workloads", "inputs");
    size_t unavailable = 0;
    for (const auto& d : dirs) {
      Problem p = load_problem(d);
      if (strict)
        for (const auto& w : p.workloads) require_inputs_available(p, w);
      std::set<std::string> dts;
      for (const auto* sec : {&p.def.inputs, &p.def.outputs})
        for (const auto& t : *sec) dts.insert(std::string(dtype_name(t.dtype)));
      bool ok = p.all_inputs_available();
      unavailable += !ok;
      fmt::print("{:<62} {:<20} {:<34} {:>9} {}\n", p.def.name, p.def.op_type, fmt::format("{}", fmt::join(dts, ",")),
                 p.workloads.size(), ok ? "all available" : "MISSING");
      if (!ok && show_missing)
        for (const auto& w : p.workloads)
          for (const auto& u : w.unavailable) fmt::print("    workload {} (line {}): {}\n", w.uuid, w.line, u);
    }
    fmt::print("{} problems, {} with unavailable inputs\n", dirs.size(), unavailable);
  });
}

}  // namespace ka::cli
