// engine/scoring.h — what a candidate's measurements say about it: passed on every workload or not,
// and its geometric-mean time (the campaign's score), against the reference's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace ka {

struct Scored {
  bool passed = false;  // every workload passed (and there is at least one)
  double geomean_us = 0, ref_geomean_us = 0;  // 0 unless passed (ref: unless every one was timed)
  int passed_workloads = 0, workloads = 0;
  std::vector<int64_t> ids;
  std::vector<double> medians;
  std::vector<std::string> workloads_of, verdicts;  // per measurement, in ids' order
};

Scored score(const std::vector<Measurement>& ms);

// A candidate's own measurements: those of the GPU that measured it first. (The per-GPU check of
// an incumbent adds measurements on other GPUs; they are not its score.)
std::vector<Measurement> primary(std::vector<Measurement> ms);

}  // namespace ka
