// problem/problem.h — the problem data model (SOL-ExecBench / FlashInfer-Trace layout) and its
// loader: definition.json (axes, inputs, outputs, constraints, reference), workload.jsonl (one
// workload per line: var axes, input sources, tolerance) and the safetensors blobs they name.
// Everything a user can get wrong becomes a UserError naming the file, the line or field, and what
// is wrong.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "problem/dtype.h"
#include "problem/expr.h"

namespace ka {

struct AxisDef {
  enum Kind { Const, Var, Derived } kind = Var;
  std::string name;
  int64_t value = 0;           // Const
  std::optional<Expr> expr;    // Derived ("expr")
  std::string description;
};

struct TensorDef {
  std::string name;
  DType dtype = DType::f32;
  bool scalar = false;         // shape: null
  std::vector<Expr> dims;      // each an axis name, an integer, or an expression over axes
  std::string description;
};

struct Definition {
  std::string name, description, op_type;
  std::vector<AxisDef> axes;   // in file order
  std::vector<TensorDef> inputs, outputs;
  std::vector<Expr> constraints;
  std::string reference;
  std::optional<std::string> custom_inputs_entrypoint;
  nlohmann::json raw;          // the file as read
  std::string hash;            // sha256 of the canonical JSON
  const AxisDef* axis(const std::string& n) const;
};

struct InputSource {
  enum Kind { Random, Scalar, Safetensors, Custom } kind = Random;
  nlohmann::json value;        // Scalar
  std::string path, tensor_key;  // Safetensors (path relative to the problem folder)
};

// SOL-ExecBench's tolerance fields and defaults.
struct Tolerance {
  double max_atol = 1e-2;
  double max_rtol = 1e-2;
  double required_matched_ratio = 0.99;
  std::optional<double> max_error_cap;
  bool allow_negative_inf = false;
};

struct Workload {
  std::string uuid;
  int line = 0;                          // 1-based line in workload.jsonl
  std::map<std::string, int64_t> axes;   // every axis resolved (const, var and expr)
  std::map<std::string, InputSource> inputs;
  Tolerance tolerance;
  nlohmann::json raw;
  std::vector<std::string> unavailable;  // inputs whose blob is missing or unreadable, with why
  // What a graph traced with static shapes depends on: every axis and every scalar input's value,
  // as one canonical JSON text. Two workloads with the same binding share a static capture.
  std::string shape_binding() const;
};

struct Problem {
  std::filesystem::path dir;
  Definition def;
  std::vector<Workload> workloads;
  bool all_inputs_available() const;
};

// Takes an ordered_json so that `axes`, `inputs` and `outputs` keep the file's order (inputs are
// the calling order); a plain nlohmann::json converts, but has already sorted its keys.
Definition parse_definition(const nlohmann::ordered_json& j, const std::string& where);
Definition parse_definition_text(std::string_view text, const std::string& where);
// Parses one workload line against its definition; `dir` resolves blob paths (may be empty to skip
// blob checks).
Workload parse_workload_line(const Definition& def, std::string_view line, const std::string& where, int line_no,
                             const std::filesystem::path& dir);
// Loads a problem folder. Blob problems are recorded in Workload::unavailable, not thrown.
Problem load_problem(const std::filesystem::path& dir);
// Throws a UserError naming the first unavailable input of the workload.
void require_inputs_available(const Problem& p, const Workload& w);
// Every axis's value (const, var and expr, in dependency order) given the var axes' values;
// UserError (prefixed by `where`) for a missing var axis, an unknown name, a cycle or a
// non-integer expression.
std::map<std::string, int64_t> resolve_axes(const Definition& def, const std::map<std::string, int64_t>& vars,
                                            const std::string& where);
// Concrete shape of a tensor for a workload ([] for scalars and 0-D tensors).
std::vector<int64_t> resolve_shape(const TensorDef& t, const Workload& w);
// Finds problem folders (those holding a definition.json) at or below `root`, sorted.
std::vector<std::filesystem::path> find_problem_dirs(const std::filesystem::path& root);
// The workloads a `--workloads` selection names: "" every one; a number N the first N; else a
// comma list of uuid prefixes, each matching exactly one workload (UserError otherwise).
std::vector<const Workload*> select_workloads(const Problem& p, const std::string& sel);

}  // namespace ka
