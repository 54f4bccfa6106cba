// cli/cmd_coverage.cpp — `kernelarc coverage PROBLEM...`: per problem, whether its reference is
// captured as an operator graph (and why not), which ops of the graph each backend of the graph
// generator (host, cuda: one per installed generated family's target) does not lower, and which
// kernel families apply. A table, or with --json a list of objects {name, captured, reason,
// ops_not_lowered (host), backends: {host|cuda: {lowered, ops_not_lowered}}, families, shapes,
// per_shape_because} (shapes: how many per-shape graphs, 0 for one symbolic graph). Needs no GPU.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>

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
  size_t shapes = 0;                                           // captured per shape: how many (0: symbolic)
  std::string per_shape_because;                               // why not symbolic
  std::vector<std::string> ops_not_lowered, families;          // ops_not_lowered: the host backend's
  std::map<std::string, std::vector<std::string>> backends;   // target -> ops it does not lower
};

Row coverage_of(const Problem& p, const std::vector<Family>& families) {
  Row r;
  r.name = p.def.name;
  r.reason = "no generated (graph) family is installed";
  for (const auto& f : families) {
    if (f.generator.empty() || r.backends.count(f.target)) continue;
    graph::Lowering l = graph::check_lowering(p, f.whole_source(), f.target);
    r.captured = l.captured;
    r.reason = l.reason;
    r.shapes = l.shapes;
    r.per_shape_because = l.per_shape_because;
    r.backends[f.target] = l.ops_not_lowered;
    if (f.target == "host") r.ops_not_lowered = l.ops_not_lowered;
  }
  if (!r.backends.count("host") && !r.backends.empty()) r.ops_not_lowered = r.backends.begin()->second;
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
  cmd->add_flag("--json", json_out, "Print a JSON list of {name, captured, reason, ops_not_lowered, backends, families, shapes, per_shape_because}");
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
    std::map<std::string, size_t> lowered_by;
    if (!json_out)
      fmt::print("{:<64} {:<8} {:<32} {:<32} {}\n", "problem", "captured", "host: ops not lowered / reason", "cuda: ops not lowered",
                 "families");
    for (const auto& d : dirs) {
      const Problem p = load_problem(d);
      const Row r = coverage_of(p, families);
      if (!emit_dir.empty() && r.captured && r.ops_not_lowered.empty()) emit_candidates(p, families, emit_dir);
      captured += r.captured;
      lowered += r.captured && r.ops_not_lowered.empty();
      nlohmann::json backends = nlohmann::json::object();
      for (const auto& [t, ops] : r.backends) {
        lowered_by[t] += r.captured && ops.empty();
        backends[t] = {{"lowered", r.captured && ops.empty()}, {"ops_not_lowered", ops}};
      }
      if (json_out) {
        out.push_back({{"name", r.name}, {"captured", r.captured}, {"reason", r.reason}, {"ops_not_lowered", r.ops_not_lowered},
                       {"backends", backends}, {"families", r.families}, {"shapes", r.shapes},
                       {"per_shape_because", r.per_shape_because}});
        continue;
      }
      auto cell = [&](const char* t) -> std::string {
        if (!r.captured) return t == std::string("host") ? r.reason : "-";
        auto it = r.backends.find(t);
        if (it == r.backends.end()) return "(no family)";
        return it->second.empty() ? "lowered" : fmt::format("{}", fmt::join(it->second, ","));
      };
      const std::string cap = !r.captured ? "no" : r.shapes == 1 ? "1 shape" : r.shapes ? fmt::format("{} shapes", r.shapes) : "yes";
      fmt::print("{:<64} {:<8} {:<32} {:<32} {}\n", r.name, cap, cell("host"), cell("cuda"),
                 r.families.empty() ? "-" : fmt::format("{}", fmt::join(r.families, ",")));
    }
    if (json_out) {
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("{} problems, {} captured, {} captured and lowered", dirs.size(), captured, lowered);
    for (const auto& [t, n] : lowered_by) fmt::print(", {} lowered for {}", n, t);
    fmt::print("\n");
  });
}

}  // namespace ka::cli
