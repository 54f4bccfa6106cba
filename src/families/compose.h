// families/compose.h — piecewise candidates: one solution that serves ranges of a problem's varying
// axis with different candidates, chosen from their measured per-workload times (e.g. for a GEMM,
// the custom family's swap-AB kernel for M ≤ 13 and the library agent's cuBLASLt table above).
// No family can express that alone: each is one source with its own knobs. The campaign composes
// the incumbent with the candidates that beat it on some workloads, once the search has spent its
// budget (engine/campaign.h), and judges the result like any other candidate.
//
// Source layout of a piecewise candidate (one file, its own entry `ka_piecewise_run`):
//   - the `#include <...>` lines of every part, hoisted to the top in first-seen order, so that
//     each header is expanded once at global scope (the copies left in the parts are commented
//     out; an include a part made conditionally becomes unconditional);
//   - each distinct part's whole source (its `#define KA_*` lines included) inside `namespace
//     ka_piece<i>`, between `#pragma push_macro` / `pop_macro` of every macro the part defines, so
//     the next part sees only its own and the headers' macros keep their meaning (a part serving two
//     ranges appears once);
//   - the entry: the definition's inputs then outputs (tensors as `const ka::TensorArg&`, scalar
//     inputs as double, int64_t or bool, as the ABI passes them), reading the axis from one input
//     tensor's dimension and calling the part whose range holds it.
// Parts must be candidates of the same language whose entry is the ABI's (any name); besides the
// entry a part may carry device-layer headers (paths under kernelarc/), which the result carries once.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "problem/problem.h"
#include "solution/solution.h"

namespace ka {

// Where the varying axis is read at run time: dimension `dim` of input tensor number `input`.
struct DispatchAxis {
  std::string axis;
  int input = 0, dim = 0;
};
// Every axis a piecewise candidate can dispatch on: the definition's var axes that are a plain
// dimension (the axis name itself, not an expression) of an input tensor, in the definition's
// order. A problem with several (ragged attention: batch size, query tokens, KV tokens) is
// composed on the one whose ranges the measured winners follow best (the campaign plans each).
std::vector<DispatchAxis> dispatch_axes(const Definition& d);
// The axis when the definition has exactly one var axis and it is dispatchable (what the agents
// organise their range findings by); nullopt otherwise.
std::optional<DispatchAxis> dispatch_axis(const Definition& d);

// One part: serves axis values ≤ hi that no earlier part serves (the last part serves the rest).
struct Piece {
  Candidate part;
  int64_t hi = std::numeric_limits<int64_t>::max();
};
// The piecewise candidate (UserError when there are fewer than two pieces, the his do not
// increase, a part has several sources or the torch binding, or languages differ). Its name is `name`; compile options are the parts' union.
Candidate compose_pieces(const std::vector<Piece>& pieces, const DispatchAxis& ax, const Definition& d,
                         const std::string& name);

// A candidate's median µs per workload, by axis value (all candidates given to plan_pieces passed
// every workload, so they have the same values and counts).
struct AxisTimes {
  std::string id;                                  // e.g. the candidate hash
  std::map<int64_t, std::vector<double>> us_at;    // axis value → medians of its workloads
};
struct PiecePlan {
  std::vector<std::pair<std::string, int64_t>> pieces;  // (id, hi) in range order; last hi = max
  double estimated_geomean_us = 0;  // geometric mean over workloads of the chosen parts' medians
};
// The plan: per axis value, the candidate with the least summed log time there, unless it beats
// the incumbent (cands[incumbent]) by less than min_gain on that value's geometric mean; at most
// max_parts distinct candidates (those with the least total gain over the incumbent are dropped
// and their values re-assigned); equal neighbours merged. A boundary between values a < b of
// different parts lies at floor(sqrt(a·b)), so unseen values go to the part of the nearer value
// on a log scale. Ties go to the earlier candidate. One piece when nothing beats the incumbent.
PiecePlan plan_pieces(const std::vector<AxisTimes>& cands, size_t incumbent, double min_gain = 0.02,
                      int max_parts = 4);
// Of plans made on different axes of one problem (plans[i] on an axis that takes distinct[i]
// values over its workloads), the index of the one to compose: the least estimated geomean; when
// two are within 0.1%, the axis that tells more workloads apart (for ragged attention the token
// count, not the batch size that a few large workloads happen to share with no small one); then
// the earlier axis.
size_t best_axis_plan(const std::vector<PiecePlan>& plans, const std::vector<size_t>& distinct);
// Whether a plan is worth a candidate: two pieces or more (each already beats the incumbent by
// plan_pieces' min_gain on its own values) and an estimate below the incumbent's geomean. No
// aggregate threshold on top: a part that is 10% faster on the two largest of fifteen workloads
// moves the geomean by ~1.3%, and those are often the calls a user pays most for.
bool plan_worth_judging(const PiecePlan& plan, double incumbent_geomean_us);

}  // namespace ka
