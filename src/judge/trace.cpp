// judge/trace.cpp — serialising evaluations.
#include "judge/trace.h"

#include <fmt/chrono.h>

#include <chrono>
#include <cmath>

namespace ka {
namespace {

using json = nlohmann::json;

json tolerance_json(const json& workload) {
  Tolerance d;
  json t = {{"max_atol", d.max_atol}, {"max_rtol", d.max_rtol}, {"required_matched_ratio", d.required_matched_ratio},
            {"max_error_cap", nullptr}, {"allow_negative_inf", d.allow_negative_inf}};
  if (workload.contains("tolerance") && workload["tolerance"].is_object())
    for (auto it = workload["tolerance"].begin(); it != workload["tolerance"].end(); ++it)
      if (t.contains(it.key())) t[it.key()] = it.value();
  return t;
}

double finite_or(double v, double alt) { return std::isfinite(v) ? v : alt; }

}  // namespace

json to_trace(const Definition& def, const Candidate& c, const CandidateEval& ev, const WorkloadEval& w) {
  json wl = {{"axes", w.workload.value("axes", json::object())},
             {"inputs", w.workload.value("inputs", json::object())},
             {"uuid", w.uuid},
             {"tolerance", tolerance_json(w.workload)}};
  std::string status(verdict_trace_status(w.verdict));
  json correctness = nullptr, performance = nullptr;
  if (w.verdict == Verdict::passed || w.verdict == Verdict::wrong_answer)
    correctness = {{"max_relative_error", finite_or(w.max_rel_err, 1e30)}, {"max_absolute_error", finite_or(w.max_abs_err, 1e30)},
                   {"has_nan", w.has_nan}, {"has_inf", w.has_inf}, {"extra", nullptr}};
  if (w.verdict == Verdict::passed) {
    double ms = w.timing ? w.timing->median_us / 1000.0 : 0.0;
    double ref = w.reference_us ? *w.reference_us / 1000.0 : 0.0;
    performance = {{"latency_ms", ms}, {"reference_latency_ms", ref}, {"speedup_factor", ms > 0 ? ref / ms : 0.0}};
  }
  auto now = std::chrono::system_clock::now();
  json eval = {{"status", status},
               {"environment", {{"hardware", ev.device.value("name", ev.target)}, {"libs", {{"kernelarc", KA_VERSION_STRING}}}}},
               {"timestamp", fmt::format("{:%Y-%m-%dT%H:%M:%S}", now)},
               {"log", w.message},
               {"correctness", correctness},
               {"performance", performance}};
  return {{"definition", def.name}, {"workload", wl}, {"solution", c.name}, {"evaluation", eval}};
}

json to_report(const Definition& def, const Candidate& c, const CandidateEval& ev) {
  json ws = json::array();
  for (const auto& w : ev.workloads) {
    json j = {{"uuid", w.uuid},
              {"axes", w.workload.value("axes", json::object())},
              {"verdict", verdict_name(w.verdict)},
              {"message", w.message},
              {"max_abs_err", finite_or(w.max_abs_err, 1e30)},
              {"max_rel_err", finite_or(w.max_rel_err, 1e30)},
              {"matched_ratio", w.matched_ratio},
              {"reference_us", w.reference_us ? json(*w.reference_us) : json(nullptr)}};
    if (w.timings_borrowed) j["reference_timed"] = "earlier, on a GPU of the same name (oracle-timings cache)";
    if (w.timing) {
      const auto& t = *w.timing;
      j["timing"] = {{"median_us", t.median_us}, {"mean_us", t.mean_us}, {"min_us", t.min_us}, {"max_us", t.max_us},
                     {"p25_us", t.p25_us},       {"p75_us", t.p75_us},   {"spread", t.spread},  {"attempts", t.attempts}, {"cut", t.cut},
                     {"samples", t.samples_us.size()}, {"activity", t.activity}};
      if (w.reference_us && t.median_us > 0) j["speedup"] = *w.reference_us / t.median_us;
    }
    ws.push_back(j);
  }
  return {{"definition", def.name},
          {"solution", c.name},
          {"target", ev.target},
          {"device", ev.device},
          {"build", {{"ok", ev.build.ok}, {"cached", ev.build.cached}, {"command", ev.build.command}, {"seconds", ev.build.seconds}}},
          {"worker_restarts", ev.worker_restarts},
          {"host_set_bytes", ev.host_set_bytes},
          {"sets_loaded_ahead", ev.sets_loaded_ahead},
          {"workloads", ws}};
}

}  // namespace ka
