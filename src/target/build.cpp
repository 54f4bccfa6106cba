// target/build.cpp — candidate compilation with a content-addressed build cache.
#include "target/build.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <mutex>

#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/resources.h"

namespace ka {
namespace {

bool is_compiled(const std::string& p) {
  for (const char* s : {".cu", ".cpp", ".cc", ".cxx", ".c"}) {
    std::string_view suf(s);
    if (p.size() >= suf.size() && p.compare(p.size() - suf.size(), suf.size(), suf) == 0) return true;
  }
  return false;
}

std::string tool_identity(const std::string& tool) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(tool);
  if (it != cache.end()) return it->second;
  RunResult r = run_command({tool, "--version"}, std::chrono::seconds(30));
  return cache[tool] = r.output;
}

std::string nvcc_path() {
  if (const char* n = std::getenv("KERNELARC_NVCC"); n && *n) return n;
  for (const char* p : {"/usr/local/cuda/bin/nvcc"})
    if (fs::exists(p)) return p;
  return "nvcc";
}

std::string cxx_path() {
  if (const char* c = std::getenv("CXX"); c && *c) return c;
  return "c++";
}

bool has_flag_prefix(const std::vector<std::string>& flags, std::string_view pre) {
  for (const auto& f : flags)
    if (f.rfind(pre, 0) == 0) return true;
  return false;
}

// Include and library folders of the Python's torch (only for solutions with the torch binding).
struct TorchPaths {
  std::vector<std::string> include, lib;
  std::string python_libdir, python_lib;  // libpython resolves the Py* symbols pybind11's headers leave
};

const TorchPaths& torch_paths() {
  static TorchPaths tp = [] {
    const char* py = std::getenv("KERNELARC_PYTHON");
    RunResult r = run_command(
        {py && *py ? py : "python3", "-c",
         "import json, sysconfig, torch.utils.cpp_extension as c; "
         "print(json.dumps({'include': c.include_paths(device_type='cuda') + [sysconfig.get_paths()['include']], "
         "'lib': c.library_paths(device_type='cuda'), 'pylibdir': sysconfig.get_config_var('LIBDIR'), "
         "'pylib': sysconfig.get_config_var('LDLIBRARY')}))"},
        std::chrono::seconds(120));
    if (!r.ok()) user_error("a torch-binding solution needs PyTorch's C++ headers, and python3 could not give them: {}",
                            one_line(r.output.substr(0, 300)));
    auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
    TorchPaths t{j["include"].get<std::vector<std::string>>(), j["lib"].get<std::vector<std::string>>(), "", ""};
    std::string lib = j.value("pylib", "");  // e.g. libpython3.12.so
    if (lib.rfind("lib", 0) == 0 && lib.find(".so") != std::string::npos) {
      t.python_libdir = j.value("pylibdir", "");
      t.python_lib = lib.substr(3, lib.find(".so") - 3);
    }
    return t;
  }();
  return tp;
}

}  // namespace

std::vector<std::string> effective_cuda_flags(const Candidate& c, int sm) {
  std::vector<std::string> f;
  std::vector<std::string> user = c.has_compile_options ? c.cuda_cflags : std::vector<std::string>{"-O3"};
  bool arch = false;
  for (const auto& u : user) arch |= u.find("-gencode") != std::string::npos || u.find("-arch") != std::string::npos;
  if (!arch) {
    // Hopper and newer have arch-specific instruction sets (wgmma, setmaxnreg): build for them.
    std::string a = sm >= 90 ? fmt::format("{}a", sm) : std::to_string(sm);
    f.push_back(fmt::format("-gencode=arch=compute_{0},code=sm_{0}", a));
  }
  f.insert(f.end(), user.begin(), user.end());
  // What torch.utils.cpp_extension adds under SOL-ExecBench, so that what builds here builds there.
  for (const char* d : {"-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr"})
    f.emplace_back(d);
  if (!has_flag_prefix(user, "-std=")) f.emplace_back("-std=c++17");
  return f;
}

BuildResult build_candidate(const Candidate& c, int sm) {
  BuildResult r;
  const bool cuda = c.language == "cuda_cpp";
  const bool torch = c.binding == "torch";
  if (torch && !cuda) user_error("candidate '{}': the torch binding is supported for cuda_cpp solutions only", c.name);
  const fs::path include_dir = resource_path("include");
  std::string abi = read_text(include_dir / "kernelarc" / "abi.h");
  if (torch) abi += read_text(include_dir / "kernelarc" / "torch_shim.h");
  const std::string tramp_name = torch ? "kernelarc_entry.cpp" : cuda ? "kernelarc_entry.cu" : "kernelarc_entry.cpp";
  // Native: compile the entry file through a trampoline that appends KA_ENTRY. Torch binding
  // (SOL-ExecBench solutions): compile every top-level source as that harness does, and call the
  // function the solution registered under the entry symbol.
  const std::string tramp =
      torch ? fmt::format("// generated by KernelArc\n#include <kernelarc/torch_shim.h>\n"
                          "extern \"C\" int kernelarc_entry(const ka::TensorArg* a, int n) {{\n"
                          "  auto& r = ka::torch_shim::registry();\n  auto it = r.find(\"{}\");\n"
                          "  return it == r.end() ? -2 : it->second.caller(it->second.fn, a, n);\n}}\n",
                          c.entry_symbol)
            : fmt::format("// generated by KernelArc\n#include \"{}\"\nKA_ENTRY({})\n", c.entry_file, c.entry_symbol);

  std::vector<std::string> flags;
  std::string compiler;
  if (cuda) {
    compiler = nvcc_path();
    flags = effective_cuda_flags(c, sm);
    flags.insert(flags.begin(), {"-shared", "-Xcompiler", "-fPIC", "-cudart", "shared"});
    for (const auto& h : c.cflags) {
      flags.push_back("-Xcompiler");
      flags.push_back(h);
    }
    if (torch) {
      for (const auto& d : torch_paths().include) flags.push_back("-I" + d);
      for (const char* d : {"-DTORCH_EXTENSION_NAME=benchmark_kernel", "-DTORCH_API_INCLUDE_EXTENSION_H",
                            "-D_GLIBCXX_USE_CXX11_ABI=1", "-include", "kernelarc/torch_shim.h"})
        flags.emplace_back(d);
    }
  } else {
    compiler = cxx_path();
    flags = {"-shared", "-fPIC"};
    std::vector<std::string> user = c.has_compile_options ? c.cflags : std::vector<std::string>{"-O3"};
    if (!has_flag_prefix(user, "-std=")) flags.emplace_back("-std=c++20");
    flags.insert(flags.end(), user.begin(), user.end());
  }

  // Content key: everything that can change the library.
  std::string key_src = fmt::format("v1\n{}\n{}\n{}\n{}\n{}\n", compiler, tool_identity(compiler), sm, abi, tramp);
  for (const auto& f : flags) key_src += f + "\n";
  for (const auto& l : c.ld_flags) key_src += "ld:" + l + "\n";
  for (const auto& s : c.sources) key_src += fmt::format("{}\n{}\n{}\n", s.path, s.content.size(), s.content);
  r.key = sha256_hex(key_src).substr(0, 32);
  const fs::path root = cache_root() / "builds";
  const fs::path dir = root / r.key;
  r.library = dir / "candidate.so";
  if (fs::exists(dir / "build.json") && fs::exists(r.library)) {
    auto j = nlohmann::json::parse(read_text(dir / "build.json"));
    r.ok = true;
    r.cached = true;
    r.command = j.value("command", std::vector<std::string>{});
    r.log = j.value("log", "");
    return r;
  }
  fs::create_directories(root);
  fs::path work = make_temp_dir((root / "tmp-").string());
  for (const auto& s : c.sources) {
    fs::create_directories((work / s.path).parent_path());
    write_atomic(work / s.path, s.content);
  }
  write_atomic(work / tramp_name, tramp);
  std::vector<std::string> cmd{compiler};
  cmd.insert(cmd.end(), flags.begin(), flags.end());
  cmd.push_back("-I" + work.string());
  cmd.push_back("-I" + include_dir.string());
  cmd.push_back("-o");
  cmd.push_back((work / "candidate.so").string());
  cmd.push_back((work / tramp_name).string());
  for (const auto& s : c.sources)
    if ((torch || s.path != c.entry_file) && is_compiled(s.path) && s.path.find('/') == std::string::npos)
      cmd.push_back((work / s.path).string());
  cmd.insert(cmd.end(), c.ld_flags.begin(), c.ld_flags.end());
  if (torch) {
    for (const auto& d : torch_paths().lib) {
      cmd.push_back("-L" + d);
      cmd.push_back("-Xlinker");
      cmd.push_back("-rpath=" + d);
    }
    // --no-as-needed: libtorch_cuda registers CUDA with ATen when loaded, without any symbol of it
    // being referenced; an as-needed link drops it ("Cannot initialize CUDA without ATen_cuda").
    cmd.emplace_back("-Xlinker");
    cmd.emplace_back("--no-as-needed");
    for (const char* l : {"-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch"}) cmd.emplace_back(l);
    if (!torch_paths().python_lib.empty()) {
      cmd.push_back("-L" + torch_paths().python_libdir);
      cmd.push_back("-Xlinker");
      cmd.push_back("-rpath=" + torch_paths().python_libdir);
      cmd.push_back("-l" + torch_paths().python_lib);
    }
  }
  if (cuda) {
    for (const char* stubs : {"/usr/local/cuda/lib64/stubs", "/usr/local/cuda/targets/x86_64-linux/lib/stubs"})
      if (fs::exists(stubs)) cmd.push_back(std::string("-L") + stubs);
  }
  RunResult rr = run_command(cmd, std::chrono::seconds(120));
  r.command = cmd;
  r.seconds = rr.seconds;
  r.log = rr.output;
  if (rr.timed_out) r.log += "\ncompilation timed out after 120 s";
  if (!rr.ok()) {
    fs::remove_all(work);
    return r;
  }
  write_atomic(work / "build.json", nlohmann::json{{"command", cmd}, {"log", rr.output}, {"seconds", rr.seconds}}.dump(1));
  std::error_code ec;
  fs::rename(work, dir, ec);
  if (ec) fs::remove_all(work);  // another process built the same key first
  r.ok = fs::exists(r.library);
  return r;
}

}  // namespace ka
