// report/report.cpp — gathers a campaign's report data (report.h) from its store and out folder,
// and runs the renderer (report/render.py) on it.
#include "report/report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include "problem/problem.h"
#include "store/store.h"
#include "util/error.h"
#include "util/files.h"
#include "util/process.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json read_json_or(const fs::path& f, json fallback) {
  if (!fs::exists(f)) return fallback;
  try {
    return json::parse(read_text(f));
  } catch (const std::exception& e) {
    user_error("{}: not valid JSON: {}", f.string(), e.what());
  }
}

// "batch_size=32": the axes the workload file gives (the var ones), in their order there.
std::string workload_label(const Workload& w) {
  std::string label;
  if (w.raw.contains("axes") && w.raw["axes"].is_object())
    for (const auto& [k, v] : w.raw["axes"].items()) label += fmt::format("{}{}={}", label.empty() ? "" : ", ", k, v.dump());
  return label.empty() ? w.uuid.substr(0, 8) : label;
}

// A candidate's own measurements: those of the GPU that measured it first (later rows on other
// GPUs are per-GPU checks of an incumbent), as the engine ranks it.
std::vector<Measurement> primary_measurements(const Store& store, const std::string& hash) {
  auto ms = store.measurements_of(hash);
  if (ms.empty()) return ms;
  auto first = std::min_element(ms.begin(), ms.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  const std::string gpu = first->gpu;
  std::erase_if(ms, [&](const Measurement& m) { return m.gpu != gpu; });
  return ms;
}

std::string candidate_name(const Store& store, const std::string& hash) {
  auto c = store.candidate(hash);
  return c ? c->solution.value("name", hash) : hash;
}

// The problem's workloads (uuid → label) from its problem.json, else from its measurements.
json workloads_of(const json& meta, const std::vector<Measurement>& ms) {
  if (meta.contains("workloads")) return meta["workloads"];
  json ws = json::array();
  std::set<std::string> seen;
  for (const auto& m : ms)
    if (seen.insert(m.workload).second) ws.push_back({{"uuid", m.workload}, {"label", m.workload.substr(0, 8)}});
  return ws;
}

json best_of(const Store& store, const json& leaderboard, const json& workloads, const json& sol_us) {
  if (leaderboard.empty()) return nullptr;
  const json& top = leaderboard[0];
  if (top.value("workloads", 0) == 0 || top.value("passed_workloads", -1) != top.value("workloads", 0)) return nullptr;
  json best = top;
  std::map<std::string, Measurement> by_workload;
  for (auto& m : primary_measurements(store, top["candidate"].get<std::string>())) by_workload[m.workload] = m;
  json rows = json::array();
  for (const auto& w : workloads) {
    auto it = by_workload.find(w["uuid"].get<std::string>());
    if (it == by_workload.end()) continue;
    const Measurement& m = it->second;
    json row = {{"workload", m.workload},        {"label", w.value("label", m.workload)}, {"verdict", m.verdict},
                {"median_us", m.median_us},      {"spread", m.spread},
                {"reference_us", m.reference_us > 0 ? json(m.reference_us) : json()},
                {"compile_us", m.extra.is_object() && m.extra.contains("compile_us") ? m.extra["compile_us"] : json()},
                {"compile_note", m.extra.is_object() && m.extra.contains("compile_note") ? m.extra["compile_note"] : json()},
                {"sol_us", sol_us.contains(m.workload) ? sol_us[m.workload] : json()}, {"measurement", m.id}};
    rows.push_back(std::move(row));
  }
  best["per_workload"] = rows;
  best["device"] = by_workload.empty() ? "" : by_workload.begin()->second.device;
  best["sources"] = json::array();
  if (auto c = store.candidate(top["candidate"].get<std::string>()); c && c->solution.contains("sources"))
    best["sources"] = c->solution["sources"];
  return best;
}

// Each finding with the measurements it cites (candidate, workload, verdict, times).
json findings_with_citations(const Store& store, const json& findings, const std::map<std::string, std::string>& labels) {
  json out = json::array();
  for (json f : findings) {
    json cited = json::array();
    for (const auto& id : f.value("cites", json::array())) {
      auto m = store.measurement(id.get<int64_t>());
      if (!m) continue;
      auto l = labels.find(m->workload);
      cited.push_back({{"id", m->id}, {"candidate", candidate_name(store, m->candidate)}, {"workload", m->workload},
                       {"label", l == labels.end() ? m->workload.substr(0, 8) : l->second}, {"verdict", m->verdict},
                       {"median_us", m->median_us}, {"reference_us", m->reference_us}, {"device", m->device},
                       {"origin", m->origin}});
    }
    f["cited"] = cited;
    out.push_back(std::move(f));
  }
  return out;
}

struct ProblemDir {
  std::string name;
  fs::path dir;
  int64_t first_id = LLONG_MAX;        // its first measurement (orders problems as they ran)
  std::string first_at, last_at;       // its measurements' time span
};

// The campaign's problems: the folders of OUT with a leaderboard or a problem.json, in the order
// they ran (first measurement), those never measured last.
std::vector<ProblemDir> problem_dirs(const fs::path& out, const Store& store) {
  std::vector<ProblemDir> ps;
  for (const auto& d : fs::directory_iterator(out)) {
    if (!d.is_directory()) continue;
    if (!fs::exists(d.path() / "leaderboard.json") && !fs::exists(d.path() / "problem.json")) continue;
    ProblemDir p;
    p.dir = d.path();
    p.name = read_json_or(d.path() / "problem.json", json::object()).value("name", d.path().filename().string());
    for (const auto& m : store.measurements(p.name)) {
      p.first_id = std::min(p.first_id, m.id);
      if (p.first_at.empty() || m.created_at < p.first_at) p.first_at = m.created_at;
      p.last_at = std::max(p.last_at, m.created_at);
    }
    ps.push_back(std::move(p));
  }
  std::sort(ps.begin(), ps.end(), [](const auto& a, const auto& b) {
    return a.first_id != b.first_id ? a.first_id < b.first_id : a.name < b.name;
  });
  return ps;
}

// The budget log has no problem column: a move belongs to the first problem (in running order)
// whose last measurement is not older than it, else to the last problem measured.
std::map<std::string, json> budget_by_problem(const Store& store, const std::vector<ProblemDir>& ps) {
  std::map<std::string, json> out;
  std::vector<const ProblemDir*> ran;
  for (const auto& p : ps) {
    out[p.name] = json::array();
    if (!p.last_at.empty()) ran.push_back(&p);
  }
  if (ran.empty()) return out;
  for (const auto& m : store.budget_moves()) {
    const ProblemDir* owner = ran.back();
    for (const auto* p : ran)
      if (m.created_at <= p->last_at) {
        owner = p;
        break;
      }
    out[owner->name].push_back({{"at", m.created_at}, {"agent", m.agent}, {"share_before", m.share_before},
                                {"share_after", m.share_after}, {"reason", m.reason}});
  }
  return out;
}

json gather_problem(const Store& store, const ProblemDir& p, json budget) {
  const json meta = read_json_or(p.dir / "problem.json", json::object());
  const json leaderboard = read_json_or(p.dir / "leaderboard.json", json::array());
  const json sol_us = read_json_or(p.dir / "sol.json", json::object());
  const auto ms = store.measurements(p.name);
  const json workloads = workloads_of(meta, ms);
  std::map<std::string, std::string> labels;
  for (const auto& w : workloads) labels[w["uuid"].get<std::string>()] = w.value("label", "");
  json search = json::array();
  for (const auto& row : leaderboard)
    search.push_back({{"seq", row.value("seq", 0)}, {"agent", row.value("agent", "")}, {"name", row.value("name", "")},
                      {"family", row.value("family", "")},
                      {"passed", row.value("workloads", 0) > 0 && row.value("passed_workloads", -1) == row.value("workloads", 0)},
                      {"geomean_us", row.value("geomean_us", 0.0)}});
  std::sort(search.begin(), search.end(), [](const json& a, const json& b) { return a["seq"] < b["seq"]; });
  std::set<std::string> devices;
  for (const auto& m : ms) devices.insert(m.device);
  return {{"name", p.name},
          {"op_type", meta.value("op_type", "")},
          {"description", meta.value("description", "")},
          {"unsolved_reason", meta.value("unsolved_reason", "")},
          {"dir", fs::absolute(p.dir).string()},
          {"devices", devices},
          {"workloads", workloads},
          {"sol_us", sol_us},
          {"leaderboard", leaderboard},
          {"best", best_of(store, leaderboard, workloads, sol_us)},
          {"search", search},
          {"budget_moves", std::move(budget)},
          {"findings", findings_with_citations(store, read_json_or(p.dir / "findings.json", json::array()), labels)}};
}

std::string python() {
  const char* p = std::getenv("KERNELARC_PYTHON");
  return p && *p ? p : "python3";
}

}  // namespace

void record_problems(const fs::path& out, const std::vector<ReportProblem>& problems) {
  for (const auto& rp : problems) {
    Problem p = load_problem(rp.dir);
    std::vector<const Workload*> order;  // by the values of the axes the workload file gives
    for (const auto& w : p.workloads) order.push_back(&w);
    auto key = [](const Workload* w) {
      std::vector<int64_t> k;
      if (w->raw.contains("axes") && w->raw["axes"].is_object())
        for (const auto& [n, v] : w->raw["axes"].items()) k.push_back(v.is_number_integer() ? v.get<int64_t>() : 0);
      return k;
    };
    std::stable_sort(order.begin(), order.end(), [&](const Workload* a, const Workload* b) { return key(a) < key(b); });
    json ws = json::array();
    for (const auto* w : order) ws.push_back({{"uuid", w->uuid}, {"label", workload_label(*w)}, {"axes", w->axes}});
    json meta = {{"name", p.def.name},          {"op_type", p.def.op_type}, {"description", p.def.description},
                 {"problem_dir", fs::absolute(p.dir).string()}, {"workloads", ws}, {"unsolved_reason", rp.unsolved_reason}};
    fs::create_directories(out / p.def.name);
    write_atomic(out / p.def.name / "problem.json", meta.dump(1) + "\n");
  }
}

json gather_report(const fs::path& out) {
  if (!fs::exists(out / "campaign.db")) user_error("{}: no campaign here (no campaign.db)", out.string());
  auto store = Store::open_agent(out / "campaign.db", "report");
  const auto ps = problem_dirs(out, *store);
  auto budget = budget_by_problem(*store, ps);
  json problems = json::array();
  for (const auto& p : ps) problems.push_back(gather_problem(*store, p, std::move(budget[p.name])));
  return {{"campaign", store->campaign()}, {"out", fs::absolute(out).string()}, {"problems", problems}};
}

fs::path write_report(const fs::path& out) {
  const json data = gather_report(out);
  write_atomic(out / "report.json", data.dump(1) + "\n");
  const fs::path html = out / "report.html";
  auto r = run_command({python(), resource_path("src/report/render.py").string(), (out / "report.json").string(), html.string()},
                       std::chrono::minutes(5));
  if (!r.ok())
    user_error("the report renderer failed ({}): {}", r.timed_out ? "timed out" : fmt::format("exit {}", r.exit_code),
               one_line(r.output.size() > 600 ? r.output.substr(r.output.size() - 600) : r.output));
  return html;
}

fs::path report_after_campaign(const fs::path& out, const std::vector<ReportProblem>& problems) {
  try {
    record_problems(out, problems);
    return write_report(out);
  } catch (const std::exception& e) {
    spdlog::warn("no campaign report: {} (the same report: `kernelarc report {}`)", one_line(e.what()), out.string());
    return {};
  }
}

}  // namespace ka
