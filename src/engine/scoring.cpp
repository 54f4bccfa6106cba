// engine/scoring.cpp — a candidate's score from its measurements (engine/scoring.h).
#include "engine/scoring.h"

#include <algorithm>
#include <cmath>

namespace ka {

Scored score(const std::vector<Measurement>& ms) {
  Scored s;
  double lt = 0, lr = 0;
  int nr = 0;
  for (const auto& m : ms) {
    ++s.workloads;
    s.ids.push_back(m.id);
    s.medians.push_back(m.median_us);
    s.workloads_of.push_back(m.workload);
    s.verdicts.push_back(m.verdict);
    if (m.verdict != "passed" || m.median_us <= 0) continue;
    ++s.passed_workloads;
    lt += std::log(m.median_us);
    if (m.reference_us > 0) {
      lr += std::log(m.reference_us);
      ++nr;
    }
  }
  s.passed = s.workloads > 0 && s.passed_workloads == s.workloads;
  if (s.passed) s.geomean_us = std::exp(lt / s.workloads);
  if (s.passed && nr == s.workloads) s.ref_geomean_us = std::exp(lr / nr);
  return s;
}

std::vector<Measurement> primary(std::vector<Measurement> ms) {
  if (ms.empty()) return ms;
  auto first = std::min_element(ms.begin(), ms.end(),
                                [](const Measurement& a, const Measurement& b) { return a.id < b.id; });
  const std::string gpu = first->gpu;
  ms.erase(std::remove_if(ms.begin(), ms.end(), [&](const Measurement& m) { return m.gpu != gpu; }), ms.end());
  return ms;
}

}  // namespace ka
