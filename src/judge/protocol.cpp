// judge/protocol.cpp — framing of judge/worker messages.
#include "judge/protocol.h"

#include <unistd.h>

#include <cerrno>

namespace ka::wire {

std::string encode_header(const nlohmann::json& header) {
  std::string h = header.dump();
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + h;
}

bool read_full(int fd, void* data, size_t n) {
  char* c = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_full(int fd, const void* data, size_t n) {
  const char* c = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_header(int fd, nlohmann::json& header) {
  unsigned char len[8];
  if (!read_full(fd, len, 8)) return false;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > (64u << 20)) return false;
  std::string h(n, '\0');
  if (!read_full(fd, h.data(), n)) return false;
  header = nlohmann::json::parse(h, nullptr, false);
  return !header.is_discarded();
}

bool write_message(int fd, const nlohmann::json& header, const std::vector<std::pair<const void*, size_t>>& payload) {
  std::string h = encode_header(header);
  if (!write_full(fd, h.data(), h.size())) return false;
  for (const auto& [p, n] : payload)
    if (!write_full(fd, p, n)) return false;
  return true;
}

}  // namespace ka::wire
