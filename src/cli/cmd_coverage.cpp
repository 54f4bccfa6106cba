// cli/cmd_coverage.cpp — `kernelarc coverage PROBLEM...`: per problem, whether its reference is
// captured as an operator graph (and why not), which ops of the graph no backend lowers, and which
// kernel families apply. A table, or with --json a list of objects {name, captured, reason,
// ops_not_lowered, families}. Needs no GPU.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "families/family.h"
#include "graph/generate.h"
#include "problem/problem.h"
#include "util/error.h"
#include "util/files.h"

namespace ka::cli {
namespace {

struct Row {
  std::string name;
  bool captured = false;
  std::string reason;
  std::vector<std::string> ops_not_lowered, families;
};

Row coverage_of(const Problem& p, const std::vector<Family>& families) {
  Row r;
  r.name = p.def.name;
  const Family* gen = nullptr;
  for (const auto& f : families)
    if (!f.generator.empty() && (!gen || f.target == "host")) gen = &f;
  if (gen) {
    graph::Lowering l = graph::check_lowering(p, gen->whole_source());
    r.captured = l.captured;
    r.reason = l.reason;
    r.ops_not_lowered = l.ops_not_lowered;
  } else {
    r.reason = "no generated (graph) family is installed";
  }
  for (const auto& f : families)
    if (f.applies_to(p)) r.families.push_back(f.name);
  return r;
}

// Writes the first valid point of each applying generated family as DIR/<problem>.<family>.json.
void emit_candidates(const Problem& p, const std::vector<Family>& families, const std::string& dir) {
  for (const auto& f : families) {
    if (f.generator.empty() || !f.applies_to(p)) continue;
    const auto space = f.space(p);
    if (space.empty()) continue;
    const Candidate c = f.instantiate(space.front(), p);
    std::filesystem::create_directories(dir);
    write_atomic(std::filesystem::path(dir) / (p.def.name + "." + f.name + ".json"), to_native_json(c).dump(1));
  }
}

}  // namespace

void register_coverage(CLI::App& app) {
  auto* cmd = app.add_subcommand("coverage", "Per problem: captured as a graph or not (why), ops not lowered, families that apply");
  static std::vector<std::string> paths;
  static bool json_out = false;
  static std::string families_dir, emit_dir;
  cmd->add_option("PROBLEM", paths, "A problem folder, or a folder holding problem folders")->required();
  cmd->add_flag("--json", json_out, "Print a JSON list of {name, captured, reason, ops_not_lowered, families}");
  cmd->add_option("--families", families_dir, "Folder of kernel families (default: the shipped ones)");
  cmd->add_option("--emit", emit_dir, "Also write each lowered problem's generated candidate (solution.json) into this folder");
  cmd->callback([] {
    std::vector<std::filesystem::path> dirs;
    for (const auto& p : paths)
      for (auto& d : find_problem_dirs(p)) dirs.push_back(d);
    if (dirs.empty()) user_error("no problem folders (with a definition.json) under {}", fmt::join(paths, ", "));
    const std::vector<Family> families = load_families(families_dir);
    nlohmann::json out = nlohmann::json::array();
    size_t captured = 0, lowered = 0;
    if (!json_out) fmt::print("{:<64} {:<8} {:<40} {}\n", "problem", "captured", "ops not lowered / reason", "families");
    for (const auto& d : dirs) {
      const Problem p = load_problem(d);
      const Row r = coverage_of(p, families);
      if (!emit_dir.empty() && r.captured && r.ops_not_lowered.empty()) emit_candidates(p, families, emit_dir);
      captured += r.captured;
      lowered += r.captured && r.ops_not_lowered.empty();
      if (json_out) {
        out.push_back({{"name", r.name}, {"captured", r.captured}, {"reason", r.reason},
                       {"ops_not_lowered", r.ops_not_lowered}, {"families", r.families}});
        continue;
      }
      const std::string what = !r.captured ? r.reason : fmt::format("{}", fmt::join(r.ops_not_lowered, ","));
      fmt::print("{:<64} {:<8} {:<40} {}\n", r.name, r.captured ? "yes" : "no", what.empty() ? "-" : what,
                 r.families.empty() ? "-" : fmt::format("{}", fmt::join(r.families, ",")));
    }
    if (json_out) fmt::print("{}\n", out.dump(2));
    else fmt::print("{} problems, {} captured, {} captured and lowered\n", dirs.size(), captured, lowered);
  });
}

}  // namespace ka::cli
