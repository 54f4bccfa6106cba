// graph/load.cpp — graph.json → Graph: values, inputs/outputs, constants (inline or from
// constants.safetensors) and nodes with their encoded arguments; checks SSA and references.
#include "graph/load.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "problem/safetensors.h"
#include "util/error.h"
#include "util/files.h"

namespace ka::graph {
namespace {

using json = nlohmann::json;

double parse_float(const json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  user_error("{}: bad float {}", where, v.dump());
}

DType parse_dtype_field(const json& v, const std::string& where, bool* complex = nullptr) {
  if (!v.is_string()) user_error("{}: dtype must be a string", where);
  if (complex && (v == "complex64" || v == "complex128")) {
    *complex = true;
    return v == "complex64" ? DType::f32 : DType::f64;
  }
  auto d = parse_dtype(v.get<std::string>());
  if (!d) user_error("{}: unknown dtype '{}'", where, v.get<std::string>());
  return *d;
}

std::vector<Dim> parse_dims(const json& j, const std::string& where) {
  std::vector<Dim> out;
  if (!j.is_array()) user_error("{}: must be a list of dimension expressions", where);
  for (const auto& d : j) {
    if (d.is_number_integer()) out.push_back({std::to_string(d.get<int64_t>()), std::nullopt});
    else if (d.is_string()) out.push_back({d.get<std::string>(), std::nullopt});
    else user_error("{}: a dimension must be a string expression, got {}", where, d.dump());
  }
  return out;
}

Value parse_value(const json& v, size_t index, const std::string& where) {
  const std::string at = fmt::format("{}: values[{}]", where, index);
  if (!v.is_object() || !v.contains("id") || !v["id"].is_number_integer()) user_error("{}: needs an integer 'id'", at);
  Value out;
  out.id = v["id"].get<int>();
  if (out.id != static_cast<int>(index)) user_error("{}: id {} out of order (ids are 0, 1, 2, ...)", at, out.id);
  const std::string kind = v.value("kind", std::string("tensor"));
  if (kind != "tensor" && kind != "scalar") user_error("{}: kind must be tensor or scalar", at);
  out.kind = kind == "tensor" ? Value::Tensor : Value::Scalar;
  out.type.dtype = parse_dtype_field(v.value("dtype", json("float32")), at + ".dtype", &out.type.complex);
  if (out.kind == Value::Tensor) {
    out.type.shape = parse_dims(v.value("shape", json::array()), at + ".shape");
    if (v.contains("strides") && !v["strides"].is_null()) out.type.strides = parse_dims(v["strides"], at + ".strides");
  }
  return out;
}

std::vector<NamedValue> parse_named(const json& j, const char* key, const std::string& where, size_t nvalues) {
  std::vector<NamedValue> out;
  if (!j.contains(key) || !j[key].is_array()) user_error("{}: missing list '{}'", where, key);
  for (const auto& e : j[key]) {
    if (!e.is_object() || !e.contains("name") || !e.contains("value") || !e["value"].is_number_integer())
      user_error("{}: {} entries are {{\"name\", \"value\"}}", where, key);
    NamedValue n{e["name"].get<std::string>(), e["value"].get<int>(), e.value("specialized", json())};
    if (n.value < 0 || static_cast<size_t>(n.value) >= nvalues) user_error("{}: {} '{}' names unknown value {}", where, key, n.name, n.value);
    out.push_back(n);
  }
  return out;
}

void load_constants(Graph& g, const json& j, const std::string& where, const std::filesystem::path& dir) {
  if (!j.contains("constants")) return;
  std::optional<SafeTensors> st;
  for (const auto& c : j["constants"]) {
    Constant k;
    k.value = c.value("value", -1);
    if (k.value < 0 || static_cast<size_t>(k.value) >= g.values.size()) user_error("{}: constant names unknown value", where);
    if (c.contains("data")) {
      const json& d = c["data"];
      if (d.is_array())
        for (const auto& x : d) k.data.push_back(x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : parse_float(x, where + ": constant data"));
      else
        k.data.push_back(d.is_boolean() ? (d.get<bool>() ? 1.0 : 0.0) : parse_float(d, where + ": constant data"));
    } else if (c.contains("key")) {
      k.key = c["key"].get<std::string>();
      if (!st) st = read_safetensors(dir / "constants.safetensors");
      auto it = st->tensors.find(k.key);
      if (it == st->tensors.end()) user_error("{}: constant key '{}' is not in constants.safetensors", where, k.key);
      const Tensor& t = it->second;
      k.data.resize(static_cast<size_t>(t.num_values()));
      for (int64_t i = 0; i < t.num_values(); ++i) k.data[static_cast<size_t>(i)] = t.value(i);
    } else {
      user_error("{}: constant for value {} has neither 'data' nor 'key'", where, k.value);
    }
    g.constants.push_back(std::move(k));
  }
}

Node parse_node(const json& n, size_t index, const std::string& where, size_t nvalues) {
  const std::string at = fmt::format("{}: nodes[{}]", where, index);
  if (!n.is_object() || !n.contains("op") || !n["op"].is_string()) user_error("{}: needs a string 'op'", at);
  Node node;
  node.op = n["op"].get<std::string>();
  for (const auto& a : n.value("args", json::array())) node.args.push_back(parse_arg(a, at + " (" + node.op + ")"));
  if (n.contains("kwargs") && n["kwargs"].is_object())
    for (const auto& [k, a] : n["kwargs"].items()) node.kwargs[k] = parse_arg(a, at + " (" + node.op + ")." + k);
  for (const auto& o : n.value("outputs", json::array())) {
    if (o.is_null()) node.outputs.push_back(-1);
    else if (o.is_number_integer() && o.get<int64_t>() >= 0 && static_cast<size_t>(o.get<int64_t>()) < nvalues)
      node.outputs.push_back(o.get<int>());
    else user_error("{}: bad output {}", at, o.dump());
  }
  if (n.contains("source") && n["source"].is_string()) node.source = n["source"].get<std::string>();
  return node;
}

// Every value is defined once (input, constant or node output) before it is read.
void check_ssa(Graph& g, const std::string& where) {
  std::vector<char> defined(g.values.size(), 0);
  for (const auto& i : g.inputs) defined[static_cast<size_t>(i.value)] = 1;
  for (const auto& c : g.constants) defined[static_cast<size_t>(c.value)] = 1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.node_inputs(g.nodes[i])) {
      if (v < 0 || static_cast<size_t>(v) >= g.values.size())
        user_error("{}: nodes[{}] ({}) reads unknown value {}", where, i, g.nodes[i].op, v);
      if (!defined[static_cast<size_t>(v)]) user_error("{}: nodes[{}] ({}) reads value {} before it is defined", where, i, g.nodes[i].op, v);
    }
    for (int o : g.nodes[i].outputs) {
      if (o < 0) continue;
      if (defined[static_cast<size_t>(o)]) user_error("{}: value {} is defined twice (nodes[{}])", where, o, i);
      defined[static_cast<size_t>(o)] = 1;
      g.value(o).producer = static_cast<int>(i);
    }
  }
  for (const auto& o : g.outputs)
    if (!defined[static_cast<size_t>(o.value)]) user_error("{}: output '{}' (value {}) is never defined", where, o.name, o.value);
}

}  // namespace

Arg parse_arg(const json& j, const std::string& where) {
  Arg a;
  if (j.is_null()) return a;
  if (!j.is_object() || j.size() != 1) user_error("{}: an argument is null or a one-key object, got {}", where, j.dump());
  const auto& [key, v] = *j.items().begin();
  if (key == "value") { a.kind = Arg::ValueRef; a.value = v.get<int>(); }
  else if (key == "int") { a.kind = Arg::Int; a.i = v.get<int64_t>(); }
  else if (key == "float") { a.kind = Arg::Float; a.f = parse_float(v, where); }
  else if (key == "bool") { a.kind = Arg::Bool; a.i = v.get<bool>() ? 1 : 0; }
  else if (key == "str") { a.kind = Arg::Str; a.s = v.get<std::string>(); }
  else if (key == "dtype") { a.kind = Arg::DTypeArg; a.dtype = parse_dtype_field(v, where); }
  else if (key == "sym") { a.kind = Arg::Sym; a.s = v.is_string() ? v.get<std::string>() : v.dump(); }
  else if (key == "device") { a.kind = Arg::Device; a.s = v.get<std::string>(); }
  else if (key == "layout") { a.kind = Arg::Layout; a.s = v.get<std::string>(); }
  else if (key == "memory_format") { a.kind = Arg::MemoryFormat; a.s = v.is_string() ? v.get<std::string>() : ""; }
  else if (key == "list") {
    a.kind = Arg::List;
    for (const auto& x : v) a.list.push_back(parse_arg(x, where));
  } else user_error("{}: unknown argument kind '{}'", where, key);
  return a;
}

Graph parse_graph(const json& j, const std::string& where, const std::filesystem::path& dir) {
  if (!j.is_object() || j.value("format", std::string()) != "kernelarc-graph")
    user_error("{}: not a kernelarc-graph file (field 'format')", where);
  if (j.value("version", 0) != 1) user_error("{}: unsupported version {} (this KernelArc reads 1)", where, j.value("version", 0));
  Graph g;
  g.problem = j.value("problem", std::string());
  g.axes = j.value("axes", json::object());
  if (!j.contains("values") || !j["values"].is_array()) user_error("{}: missing list 'values'", where);
  for (size_t i = 0; i < j["values"].size(); ++i) g.values.push_back(parse_value(j["values"][i], i, where));
  g.inputs = parse_named(j, "inputs", where, g.values.size());
  g.outputs = parse_named(j, "outputs", where, g.values.size());
  load_constants(g, j, where, dir);
  if (!j.contains("nodes") || !j["nodes"].is_array()) user_error("{}: missing list 'nodes'", where);
  for (size_t i = 0; i < j["nodes"].size(); ++i) g.nodes.push_back(parse_node(j["nodes"][i], i, where, g.values.size()));
  check_ssa(g, where);
  return g;
}

Graph load_graph(const std::filesystem::path& dir) {
  const auto file = dir / "graph.json";
  json j;
  try {
    j = json::parse(read_text(file));
  } catch (const json::parse_error& e) {
    user_error("{}: malformed JSON: {}", file.string(), one_line(e.what()));
  } catch (const json::type_error& e) {
    user_error("{}: {}", file.string(), one_line(e.what()));
  }
  try {
    return parse_graph(j, file.string(), dir);
  } catch (const json::exception& e) {
    user_error("{}: {}", file.string(), one_line(e.what()));
  }
}

}  // namespace ka::graph
