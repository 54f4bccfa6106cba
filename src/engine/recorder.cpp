// engine/recorder.cpp — a problem's store writes (engine/recorder.h).
#include "engine/recorder.h"

#include <fmt/format.h>

namespace ka {

nlohmann::json recorded_knobs(const Proposal& p) {
  nlohmann::json k = nlohmann::json(p.knobs);
  for (const auto& [n, v] : p.defines) k[n] = v;
  return k;
}

CandidateRecord candidate_record(const Candidate& c, const std::string& hash, const std::string& family,
                                 nlohmann::json knobs, const std::string& agent, int64_t seq) {
  CandidateRecord rec;
  rec.hash = hash;
  rec.problem = c.definition;
  rec.family = family;
  rec.knobs = std::move(knobs);
  rec.agent = agent;
  rec.seq = seq;
  rec.solution = to_native_json(c);
  return rec;
}

std::vector<Measurement> job_measurements(const Job& job, const std::string& hash, const std::string& problem,
                                          const RunnerIdentity& runner, double cut_slow, bool check) {
  std::vector<Measurement> ms;
  for (const auto& w : job.workloads) {
    Measurement m;
    m.candidate = hash;
    m.problem = problem;
    m.workload = w.uuid;
    m.verdict = w.verdict;
    m.message = w.message;
    m.median_us = w.median_us;
    m.spread = w.spread;
    m.reference_us = w.reference_us;
    m.device = runner.device;
    m.gpu = runner.gpu;
    m.extra = {{"build_cached", job.build.cached}, {"attempts", w.attempts}, {"runner", job.runner}};
    if (w.compile_us > 0) m.extra["compile_us"] = w.compile_us;
    if (!w.compile_note.empty()) m.extra["compile_note"] = w.compile_note;
    if (w.timings_borrowed) m.extra["reference_timed"] = "earlier (oracle-timings cache)";
    if (w.cut) m.extra["cut"] = fmt::format("probe of 1 + 3 calls: slower than {}x the reference", cut_slow);
    if (check) m.extra["check"] = "incumbent";
    ms.push_back(std::move(m));
  }
  return ms;
}

std::vector<Measurement> Recorder::record(const std::string& hash, const Job& job,
                                          const std::optional<CandidateRecord>& rec) {
  const RunnerIdentity& runner = runners_.at(static_cast<size_t>(job.runner));
  std::vector<Measurement> ms = job_measurements(job, hash, problem_, runner, cut_slow_, !rec);
  store_.record_judged(rec, ms);
  if (rec) build_s_ += job.build.seconds;
  gpu_s_ += job.seconds;
  return ms;
}

}  // namespace ka
