// problem/safetensors.h — a small, validated safetensors reader and writer (the format has no
// packaged C++ library). Every structural fault becomes a UserError naming the file and the fault.
#pragma once
#include <filesystem>
#include <map>
#include <span>
#include <string>

#include "problem/tensor.h"

namespace ka {

struct SafeTensors {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// `what` names the source in error messages (usually the path).
SafeTensors parse_safetensors(std::span<const std::byte> bytes, const std::string& what);
SafeTensors read_safetensors(const std::filesystem::path& p);
std::string serialize_safetensors(const SafeTensors& st);
void write_safetensors(const std::filesystem::path& p, const SafeTensors& st);

}  // namespace ka
