// cli/cmd_export.cpp — `kernelarc export PROBLEM --solution FILE -o OUT.json`: writes a solution in
// SOL-ExecBench's solution.json format (native candidates get the generated torch binding).
#include <fmt/format.h>

#include "cli/commands.h"
#include "problem/problem.h"
#include "solution/solution.h"
#include "util/files.h"

namespace ka::cli {

void register_export(CLI::App& app) {
  static std::string problem, solution, out;
  auto* cmd = app.add_subcommand("export", "Write a solution as a SOL-ExecBench solution.json (torch binding)");
  cmd->add_option("PROBLEM", problem, "Problem folder the solution is for")->required();
  cmd->add_option("--solution,-s", solution, "solution.json or a single .cu source")->required();
  cmd->add_option("-o,--output", out, "Where to write the SOL-ExecBench solution.json")->required();
  cmd->callback([] {
    Problem p = load_problem(problem);
    Candidate c = read_candidate(solution);
    write_atomic(out, to_solution_json(c, p.def).dump(2) + "\n");
    fmt::print("wrote {} ({} for {})\n", out, c.name, p.def.name);
  });
}

}  // namespace ka::cli
