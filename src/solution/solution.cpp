// solution/solution.cpp — reading and writing solution.json; the generated torch binding.
#include "solution/solution.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/files.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;

bool has_suffix(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

std::vector<std::string> str_list(const json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) user_error("{}: spec.compile_options.{} must be a list of strings", where, key);
  for (const auto& v : j[key]) {
    if (!v.is_string()) user_error("{}: spec.compile_options.{} must be a list of strings", where, key);
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::string read_abi_header() { return read_text(resource_path("include/kernelarc/abi.h")); }

}  // namespace

Candidate parse_solution_json(const json& j, const std::string& where) {
  if (!j.is_object()) user_error("{}: a solution must be a JSON object", where);
  Candidate c;
  auto str = [&](const json& o, const char* k, bool required) -> std::string {
    if (!o.contains(k) || o[k].is_null()) {
      if (required) user_error("{}: missing field '{}'", where, k);
      return {};
    }
    if (!o[k].is_string()) user_error("{}: field '{}' must be a string", where, k);
    return o[k].get<std::string>();
  };
  c.name = str(j, "name", true);
  c.definition = str(j, "definition", true);
  c.author = str(j, "author", true);
  c.description = str(j, "description", false);
  if (!j.contains("spec") || !j["spec"].is_object()) user_error("{}: missing object 'spec'", where);
  const json& spec = j["spec"];
  if (!spec.contains("languages") || !spec["languages"].is_array() || spec["languages"].empty())
    user_error("{}: spec.languages must be a non-empty list", where);
  std::vector<std::string> langs;
  for (const auto& l : spec["languages"]) langs.push_back(l.is_string() ? l.get<std::string>() : "");
  static const char* kCuda[] = {"cuda_cpp", "cutlass", "cudnn", "cublas"};
  bool cuda = false, cpp = false;
  for (const auto& l : langs) {
    for (const char* k : kCuda) cuda |= (l == k);
    cpp |= (l == "cpp");
  }
  if (cuda == cpp)
    user_error("{}: spec.languages {} is not supported: KernelArc runs C++ solutions (cuda_cpp, cutlass, cudnn, cublas for "
               "the cuda target; cpp for host)",
               where, spec["languages"].dump());
  c.language = cuda ? "cuda_cpp" : "cpp";
  std::string ep = str(spec, "entry_point", true);
  auto sep = ep.find("::");
  if (sep == std::string::npos || ep.find("::", sep + 2) != std::string::npos)
    user_error("{}: spec.entry_point '{}' must be FILE::SYMBOL", where, ep);
  c.entry_file = ep.substr(0, sep);
  c.entry_symbol = ep.substr(sep + 2);
  c.destination_passing_style = spec.value("destination_passing_style", true);
  std::string binding = spec.contains("binding") && spec["binding"].is_string() ? spec["binding"].get<std::string>() : "torch";
  if (binding != "torch" && binding != "kernelarc")
    user_error("{}: spec.binding '{}' is not supported (torch or kernelarc)", where, binding);
  c.binding = binding;
  if (spec.contains("compile_options") && spec["compile_options"].is_object()) {
    c.has_compile_options = true;
    const json& co = spec["compile_options"];
    c.cflags = str_list(co, "cflags", where);
    c.cuda_cflags = co.contains("cuda_cflags") ? str_list(co, "cuda_cflags", where) : std::vector<std::string>{"-O3", "--use_fast_math"};
    c.ld_flags = co.contains("ld_flags") ? str_list(co, "ld_flags", where) : std::vector<std::string>{"-lcuda"};
  }
  if (!j.contains("sources") || !j["sources"].is_array() || j["sources"].empty())
    user_error("{}: 'sources' must be a non-empty list", where);
  for (const auto& s : j["sources"]) {
    SourceFile f;
    if (!s.is_object() || !s.contains("path") || !s.contains("content") || !s["path"].is_string() || !s["content"].is_string())
      user_error("{}: each source needs string 'path' and 'content'", where);
    f.path = s["path"];
    f.content = s["content"];
    if (f.path.empty() || f.path[0] == '/' || f.path.find("..") != std::string::npos)
      user_error("{}: source path '{}' must be relative and must not contain '..'", where, f.path);
    for (const auto& o : c.sources)
      if (o.path == f.path) user_error("{}: source path '{}' appears twice", where, f.path);
    c.sources.push_back(std::move(f));
  }
  bool found = false;
  for (const auto& s : c.sources) found |= (s.path == c.entry_file);
  if (!found) user_error("{}: the entry file '{}' is not among the sources", where, c.entry_file);
  if (c.binding == "torch" && !c.destination_passing_style)
    user_error("{}: solutions that return their outputs (destination_passing_style: false) are not supported yet", where);
  return c;
}

Candidate read_candidate(const fs::path& p) {
  std::string ext = p.extension().string();
  if (ext == ".json") {
    std::string text = read_text(p);
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      user_error("{}: malformed JSON: {}", p.string(), one_line(e.what()));
    }
    return parse_solution_json(j, p.string());
  }
  if (ext != ".cu" && ext != ".cpp" && ext != ".cc" && ext != ".cxx")
    user_error("{}: a solution is a solution.json or a single .cu/.cpp source", p.string());
  Candidate c;
  c.name = p.stem().string();
  c.language = ext == ".cu" ? "cuda_cpp" : "cpp";
  c.binding = "kernelarc";
  c.entry_file = p.filename().string();
  c.sources.push_back({c.entry_file, read_text(p)});
  return c;
}

std::vector<SourceFile> torch_binding_sources(const Candidate& c, const Definition& def) {
  std::vector<SourceFile> out;
  // Device-layer headers (paths under kernelarc/) keep their path, so that <kernelarc/device/...>
  // resolves from the solution's root as <kernelarc/abi.h> does; the rest goes under kernelarc/src.
  for (const auto& s : c.sources)
    out.push_back({s.path.rfind("kernelarc/", 0) == 0 ? s.path : "kernelarc/src/" + s.path, s.content});
  out.push_back({"kernelarc/abi.h", read_abi_header()});
  std::string params, args;
  int i = 0;
  auto add = [&](const TensorDef& t) {
    std::string n = fmt::format("a{}", i);
    if (!params.empty()) params += ", ";
    if (t.scalar) {
      const char* ty = dtype_is_float(t.dtype) ? "double" : (t.dtype == DType::boolean ? "bool" : "int64_t");
      params += fmt::format("{} {}", ty, n);
      args += fmt::format("  ka::TensorArg {0}_arg = kernelarc_scalar({0});\n", n);
    } else {
      params += fmt::format("torch::Tensor {}", n);
      args += fmt::format("  ka::TensorArg {0}_arg = kernelarc_tensor({0});\n", n);
    }
    ++i;
  };
  for (const auto& t : def.inputs) add(t);
  for (const auto& t : def.outputs) add(t);
  std::string list;
  for (int k = 0; k < i; ++k) list += fmt::format("{}a{}_arg", k ? ", " : "", k);
  std::string includes;
  for (const auto& s : c.sources) {
    if (s.path.rfind("kernelarc/", 0) == 0) continue;
    if (has_suffix(s.path, ".cu") || has_suffix(s.path, ".cpp") || has_suffix(s.path, ".cc") || has_suffix(s.path, ".cxx"))
      includes += fmt::format("#include \"kernelarc/src/{}\"\n", s.path);
  }
  std::string binding = fmt::format(R"(// kernelarc_binding.cu — generated by KernelArc. Adapts SOL-ExecBench's torch calling convention
// (destination-passing style: inputs, then outputs, in definition order) to the native KernelArc
// ABI of kernelarc/abi.h. The candidate sources under kernelarc/src are compiled through the
// includes below (SOL-ExecBench compiles only top-level files).
#include <torch/extension.h>

{includes}
static ka::TensorArg kernelarc_tensor(const torch::Tensor& t) {{
  ka::TensorArg a{{}};
  a.data = t.data_ptr();
  switch (t.scalar_type()) {{
    case torch::kFloat64: a.dtype = ka::kFloat64; break;
    case torch::kFloat32: a.dtype = ka::kFloat32; break;
    case torch::kFloat16: a.dtype = ka::kFloat16; break;
    case torch::kBFloat16: a.dtype = ka::kBFloat16; break;
    case torch::kFloat8_e4m3fn: a.dtype = ka::kFloat8E4M3fn; break;
    case torch::kFloat8_e5m2: a.dtype = ka::kFloat8E5M2; break;
    case torch::kInt64: a.dtype = ka::kInt64; break;
    case torch::kInt32: a.dtype = ka::kInt32; break;
    case torch::kInt16: a.dtype = ka::kInt16; break;
    case torch::kInt8: a.dtype = ka::kInt8; break;
    case torch::kUInt8: a.dtype = ka::kUInt8; break;
    case torch::kBool: a.dtype = ka::kBool; break;
    default: a.dtype = ka::kFloat4E2M1fnX2; break;
  }}
  TORCH_CHECK(t.dim() <= ka::kMaxDims, "too many dimensions");
  a.ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {{
    a.shape[d] = t.size(d);
    a.strides[d] = t.stride(d);
  }}
  return a;
}}

template <typename T>
static ka::TensorArg kernelarc_scalar(T& v) {{
  ka::TensorArg a{{}};
  a.data = &v;
  a.ndim = -1;
  a.dtype = std::is_same_v<T, double> ? ka::kFloat64 : std::is_same_v<T, bool> ? ka::kBool : ka::kInt64;
  return a;
}}

void kernelarc_torch_entry({params}) {{
{args}  const ka::TensorArg all[] = {{{list}}};
  const int rc = ka::detail::invoke(&{symbol}, all, {n}, std::make_index_sequence<ka::detail::arity(&{symbol})>{{}});
  TORCH_CHECK(rc == 0, "argument count mismatch");
  const cudaError_t err = cudaGetLastError();  // a failed launch is an error, not a wrong answer
  TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
}}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("run", &kernelarc_torch_entry); }}
)",
                                    fmt::arg("includes", includes), fmt::arg("symbol", c.entry_symbol),
                                    fmt::arg("params", params), fmt::arg("args", args), fmt::arg("list", list),
                                    fmt::arg("n", i));
  out.push_back({"kernelarc_binding.cu", binding});
  return out;
}

json to_native_json(const Candidate& c) {
  json sources = json::array();
  for (const auto& s : c.sources) sources.push_back({{"path", s.path}, {"content", s.content}});
  json spec = {{"languages", {c.language}},
               {"target_hardware", {"LOCAL"}},
               {"entry_point", c.entry_file + "::" + c.entry_symbol},
               {"destination_passing_style", c.destination_passing_style},
               {"binding", c.binding},
               {"dependencies", json::array()}};
  if (c.has_compile_options)
    spec["compile_options"] = {{"cflags", c.cflags}, {"cuda_cflags", c.cuda_cflags}, {"ld_flags", c.ld_flags}};
  return {{"name", c.name}, {"definition", c.definition}, {"author", c.author}, {"description", c.description},
          {"spec", spec},   {"sources", sources}};
}

json to_solution_json(const Candidate& c, const Definition& def) {
  json spec = {{"languages", {c.language == "cpp" ? "cpp" : "cuda_cpp"}},
               {"target_hardware", {"LOCAL"}},
               {"destination_passing_style", true},
               {"dependencies", json::array()}};
  json sources = json::array();
  if (c.binding == "kernelarc" && c.language == "cuda_cpp") {
    spec["binding"] = "torch";
    spec["entry_point"] = "kernelarc_binding.cu::run";
    for (const auto& s : torch_binding_sources(c, def)) sources.push_back({{"path", s.path}, {"content", s.content}});
  } else {
    spec["binding"] = c.binding;
    spec["entry_point"] = c.entry_file + "::" + c.entry_symbol;
    for (const auto& s : c.sources) sources.push_back({{"path", s.path}, {"content", s.content}});
  }
  // Explicit options: with none, SOL-ExecBench would compile without -O3. Its own gencode flag for
  // the GPU at hand is still injected when these name no architecture.
  const std::vector<std::string> def_cuda{"-O3"};
  spec["compile_options"] = {{"cflags", c.cflags},
                             {"cuda_cflags", c.has_compile_options ? c.cuda_cflags : def_cuda},
                             {"ld_flags", c.ld_flags}};
  return {{"name", c.name},     {"definition", def.name}, {"author", c.author},
          {"description", c.description}, {"spec", spec},   {"sources", sources}};
}

}  // namespace ka
