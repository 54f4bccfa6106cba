// problem/safetensors.cpp — safetensors: 8-byte little-endian header length, JSON header, data.
#include "problem/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "util/files.h"

namespace ka {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
constexpr uint64_t kMaxHeader = 100u << 20;
}

SafeTensors parse_safetensors(std::span<const std::byte> bytes, const std::string& what) {
  if (bytes.size() < 8) user_error("{}: truncated safetensors file ({} bytes, no header length)", what, bytes.size());
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeader) user_error("{}: safetensors header length {} is implausible", what, n);
  if (8 + n > bytes.size())
    user_error("{}: truncated safetensors file (header says {} bytes, file has {})", what, n, bytes.size() - 8);
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()) + 8,
                              reinterpret_cast<const char*>(bytes.data()) + 8 + n);
  } catch (const nlohmann::json::exception& e) {
    user_error("{}: safetensors header is not valid JSON: {}", what, one_line(e.what()));
  }
  if (!h.is_object()) user_error("{}: safetensors header is not a JSON object", what);
  const size_t data_size = bytes.size() - 8 - n;
  const std::byte* data = bytes.data() + 8 + n;
  SafeTensors st;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const auto& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) user_error("{}: __metadata__ is not an object", what);
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string()) user_error("{}: __metadata__ value '{}' is not a string", what, m.key());
        st.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      user_error("{}: tensor '{}' needs dtype, shape and data_offsets", what, name);
    if (!e["dtype"].is_string()) user_error("{}: tensor '{}' dtype is not a string", what, name);
    auto code = e["dtype"].get<std::string>();
    auto dt = parse_safetensors_code(code);
    if (!dt) user_error("{}: tensor '{}' has unknown dtype '{}'", what, name, code);
    Tensor t;
    t.dtype = *dt;
    if (!e["shape"].is_array()) user_error("{}: tensor '{}' shape is not an array", what, name);
    int64_t numel = 1;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        user_error("{}: tensor '{}' has a bad dimension {}", what, name, d.dump());
      int64_t v = d.get<int64_t>();
      if (v != 0 && numel > (int64_t{1} << 50) / v) user_error("{}: tensor '{}' is impossibly large", what, name);
      numel *= v;
      t.shape.push_back(v);
    }
    const auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      user_error("{}: tensor '{}' data_offsets must be two non-negative integers", what, name);
    uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    if (b > en || en > data_size)
      user_error("{}: tensor '{}' data [{}, {}) lies outside the {} data bytes (truncated file?)", what, name, b, en,
                 data_size);
    if (en - b != t.nbytes())
      user_error("{}: tensor '{}' holds {} bytes but {} {} needs {}", what, name, en - b, dtype_name(t.dtype),
                 shape_str(t.shape), t.nbytes());
    ranges.emplace_back(b, en);
    t.data.assign(data + b, data + en);
    st.tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) user_error("{}: tensors overlap in the data section", what);
  return st;
}

SafeTensors read_safetensors(const std::filesystem::path& p) {
  auto bytes = read_bytes(p);
  return parse_safetensors(bytes, p.string());
}

std::string serialize_safetensors(const SafeTensors& st) {
  nlohmann::json h = nlohmann::json::object();
  if (!st.metadata.empty()) h["__metadata__"] = st.metadata;
  uint64_t off = 0;
  for (const auto& [name, t] : st.tensors) {
    h[name] = {{"dtype", dtype_safetensors_code(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  std::string header = h.dump();
  while ((header.size() + 8) % 8) header += ' ';
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += header;
  for (const auto& [name, t] : st.tensors) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

void write_safetensors(const std::filesystem::path& p, const SafeTensors& st) {
  write_atomic(p, serialize_safetensors(st));
}

}  // namespace ka
