// solution/solution.h — candidates and SOL-ExecBench solution.json files.
//
// A Candidate is what the judge builds and runs: sources, an entry file and symbol, a language
// (cuda_cpp for the cuda target, cpp for host) and compile options. Its `binding` says how the
// entry is called: "kernelarc" (the native ABI of include/kernelarc/abi.h) or "torch"
// (SOL-ExecBench's convention: torch::Tensor arguments registered with PYBIND11_MODULE).
// Reading accepts both; writing a native candidate for SOL-ExecBench adds a generated torch
// binding so that the file runs unchanged under its evaluator (docs/sol-execbench-rules.md §1.5).
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "problem/problem.h"

namespace ka {

struct SourceFile {
  std::string path;     // relative, no ".."
  std::string content;
};

struct Candidate {
  std::string name = "candidate";
  std::string definition;  // the definition's name
  std::string author = "kernelarc";
  std::string description;
  std::string language = "cuda_cpp";  // cuda_cpp | cpp
  std::string binding = "kernelarc";  // kernelarc | torch
  std::vector<SourceFile> sources;
  std::string entry_file, entry_symbol = "run";
  bool destination_passing_style = true;
  std::vector<std::string> cflags, cuda_cflags, ld_flags;
  bool has_compile_options = false;  // solution.json had "compile_options"
  std::string target() const { return language == "cpp" ? "host" : "cuda"; }
};

// Reads a solution.json, or a bare .cu/.cpp source (entry `run`, native ABI). UserError on faults.
Candidate read_candidate(const std::filesystem::path& p);
Candidate parse_solution_json(const nlohmann::json& j, const std::string& where);
// The candidate as KernelArc's own solution.json (native binding kept; read back by read_candidate).
nlohmann::json to_native_json(const Candidate& c);
// The SOL-ExecBench solution.json for a candidate (native candidates get a torch binding).
nlohmann::json to_solution_json(const Candidate& c, const Definition& def);
// The native candidate's SOL-ExecBench source tree: candidate sources under kernelarc/src/ (its
// device-layer headers, paths under kernelarc/, at their own path), the ABI header, and a
// top-level binding file with PYBIND11_MODULE.
std::vector<SourceFile> torch_binding_sources(const Candidate& c, const Definition& def);

}  // namespace ka
