// oracle/spec.h — what the Python oracle is told about a problem. The problem layer (src/problem)
// is the one reader of definition.json and workload.jsonl: it resolves every workload's axes,
// shapes and input sources, and this file turns the result into the JSON document the oracle's
// scripts read (`--spec FILE`), so that no Python parses a definition or evaluates an expression.
// docs/oracle-protocol.md describes the document.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>

#include "problem/problem.h"

namespace ka {

// The document's "format" field: part of the oracle's version (Oracle::version), so that a change
// to what the oracle is told changes every cache key with it.
inline constexpr const char* kOracleSpecFormat = "kernelarc-oracle-spec-1";

// One workload as the oracle receives it: {"uuid", "axes", "inputs": [...], "outputs": [...],
// "unavailable": [...]}, inputs and outputs in definition order, each with its concrete shape
// (null for a scalar input) and, for an input, where its value comes from.
nlohmann::ordered_json oracle_workload_spec(const Problem& p, const Workload& w);

// The workload capture.py traces: the smallest of those with the fewest var axes (of the input
// shapes) below 2, with those axes raised to 2 (an axis traced at 1 would be specialised) and the
// expr axes and shapes resolved again.
Workload capture_workload(const Problem& p);

// The whole document: problem fields (name, op_type, reference, custom_inputs_entrypoint), the
// definition's symbolic axes and tensor dims (capture only), every workload, and "capture".
nlohmann::ordered_json oracle_spec(const Problem& p);

// Writes oracle_spec(p) under dir, named by its content's hash (written once, atomically), and
// returns the file's path.
std::filesystem::path write_oracle_spec(const Problem& p, const std::filesystem::path& dir);

}  // namespace ka
