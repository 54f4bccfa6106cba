// oracle/spec.cpp — the oracle's view of a problem (oracle/spec.h): workloads resolved by the
// problem layer, written as one JSON document per problem.
#include "oracle/spec.h"

#include <algorithm>
#include <tuple>

#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace ka {
namespace {

using ojson = nlohmann::ordered_json;

ojson shape_json(const TensorDef& t, const Workload& w) {
  if (t.scalar) return nullptr;
  return resolve_shape(t, w);
}

ojson input_spec(const Problem& p, const TensorDef& t, const Workload& w) {
  ojson in = {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape_json(t, w)},
              {"description", t.description}};
  const auto it = w.inputs.find(t.name);
  const InputSource src = it == w.inputs.end() ? InputSource{} : it->second;
  switch (src.kind) {
    case InputSource::Random: in["source"] = "random"; break;
    case InputSource::Custom: in["source"] = "custom"; break;
    case InputSource::Scalar:
      in["source"] = "scalar";
      in["value"] = src.value;
      break;
    case InputSource::Safetensors:
      // The problem layer checked the blob (inside the folder, key present, dtype and shape as
      // resolved); the oracle reads it from this absolute path.
      in["source"] = "safetensors";
      in["path"] = std::filesystem::absolute(p.dir / src.path).lexically_normal().string();
      in["tensor_key"] = src.tensor_key;
      break;
  }
  return in;
}

// An axis as definition.json writes it (capture.py copies it into graph.json).
ojson axis_spec(const AxisDef& a) {
  switch (a.kind) {
    case AxisDef::Const: return {{"type", "const"}, {"value", a.value}};
    case AxisDef::Var: return {{"type", "var"}};
    case AxisDef::Derived: return {{"type", "expr"}, {"expression", a.expr->source()}};
  }
  return nullptr;
}

ojson tensor_def_spec(const TensorDef& t) {
  ojson dims = nullptr;
  if (!t.scalar) {
    dims = ojson::array();
    for (const Expr& d : t.dims) dims.push_back(d.source());
  }
  return {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"dims", dims}};
}

// Bytes of a workload's tensor inputs, one byte at least per element (capture's size measure).
int64_t input_bytes(const Problem& p, const Workload& w) {
  int64_t total = 0;
  for (const TensorDef& t : p.def.inputs) {
    if (t.scalar) continue;
    int64_t n = 1;
    for (int64_t d : resolve_shape(t, w)) n *= d;
    total += n * std::max(1, dtype_bits(t.dtype) / 8);
  }
  return total;
}

}  // namespace

nlohmann::ordered_json oracle_workload_spec(const Problem& p, const Workload& w) {
  ojson ins = ojson::array(), outs = ojson::array(), axes = ojson::object();
  for (const AxisDef& a : p.def.axes) axes[a.name] = w.axes.at(a.name);  // definition order
  for (const TensorDef& t : p.def.inputs) ins.push_back(input_spec(p, t, w));
  for (const TensorDef& t : p.def.outputs)
    outs.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape_json(t, w)}});
  return {{"uuid", w.uuid}, {"axes", axes}, {"inputs", ins}, {"outputs", outs}, {"unavailable", w.unavailable}};
}

Workload capture_workload(const Problem& p) {
  constexpr int64_t kMinVarAxis = 2;
  std::vector<std::string> var;  // var axes that size an input
  for (const AxisDef& a : p.def.axes) {
    if (a.kind != AxisDef::Var) continue;
    const bool used = std::any_of(p.def.inputs.begin(), p.def.inputs.end(), [&](const TensorDef& t) {
      return std::any_of(t.dims.begin(), t.dims.end(), [&](const Expr& d) { return d.source() == a.name; });
    });
    if (used) var.push_back(a.name);
  }
  const Workload* best = nullptr;
  std::tuple<size_t, int64_t, std::string> best_key;
  for (const Workload& w : p.workloads) {
    const size_t small = std::count_if(var.begin(), var.end(), [&](const std::string& a) { return w.axes.at(a) < kMinVarAxis; });
    auto key = std::make_tuple(small, input_bytes(p, w), w.uuid);
    if (!best || key < best_key) best = &w, best_key = std::move(key);
  }
  if (!best) user_error("{}: no workload to capture", p.dir.string());
  Workload w = *best;
  if (std::get<0>(best_key) == 0) return w;
  std::map<std::string, int64_t> vars;
  for (const AxisDef& a : p.def.axes)
    if (a.kind == AxisDef::Var) vars[a.name] = std::find(var.begin(), var.end(), a.name) != var.end()
                                                   ? std::max(w.axes.at(a.name), kMinVarAxis)
                                                   : w.axes.at(a.name);
  w.axes = resolve_axes(p.def, vars, fmt::format("{} (capture workload {})", p.dir.string(), w.uuid));
  return w;
}

nlohmann::ordered_json oracle_spec(const Problem& p) {
  ojson axes = ojson::object(), ins = ojson::array(), outs = ojson::array();
  for (const AxisDef& a : p.def.axes) axes[a.name] = axis_spec(a);
  for (const TensorDef& t : p.def.inputs) ins.push_back(tensor_def_spec(t));
  for (const TensorDef& t : p.def.outputs) outs.push_back(tensor_def_spec(t));
  ojson workloads = ojson::array();
  for (const Workload& w : p.workloads) workloads.push_back(oracle_workload_spec(p, w));
  return {{"format", kOracleSpecFormat},
               {"name", p.def.name},
               {"op_type", p.def.op_type},
               {"reference", p.def.reference},
               {"custom_inputs_entrypoint", p.def.custom_inputs_entrypoint ? ojson(*p.def.custom_inputs_entrypoint) : ojson()},
               {"axes", axes},
               {"inputs", ins},
               {"outputs", outs},
               {"workloads", workloads},
               {"capture", oracle_workload_spec(p, capture_workload(p))}};
}

std::filesystem::path write_oracle_spec(const Problem& p, const std::filesystem::path& dir) {
  const std::string text = oracle_spec(p).dump(1);
  const std::filesystem::path file = dir / (sha256_hex(text).substr(0, 40) + ".json");
  if (!std::filesystem::exists(file)) {
    std::filesystem::create_directories(dir);
    write_atomic(file, text);
  }
  return file;
}

}  // namespace ka
