// util/files.cpp — whole-file reads and atomic writes.
#include "util/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "util/error.h"

namespace ka {

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) user_error("{}: cannot open: {}", p.string(), std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) user_error("{}: read error", p.string());
  return s;
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  // Straight into the vector: oracle entries can be gigabytes, so no intermediate copy.
  std::ifstream f(p, std::ios::binary | std::ios::ate);
  if (!f) user_error("{}: cannot open: {}", p.string(), std::strerror(errno));
  std::vector<std::byte> v(static_cast<size_t>(f.tellg()));
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size())))
    user_error("{}: read error", p.string());
  return v;
}

void write_atomic(const fs::path& p, const void* data, size_t n) {
  fs::path tmp = p;
  tmp += fmt::format(".tmp{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) user_error("{}: cannot write: {}", tmp.string(), std::strerror(errno));
  const char* c = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      user_error("{}: write failed: {}", tmp.string(), std::strerror(errno));
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  fs::rename(tmp, p);
}

void write_atomic(const fs::path& p, std::string_view data) { write_atomic(p, data.data(), data.size()); }

fs::path make_temp_dir(const std::string& prefix) {
  std::string tmpl = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) user_error("cannot create a temporary directory: {}", std::strerror(errno));
  return tmpl;
}

fs::path cache_root() {
  if (const char* c = std::getenv("KERNELARC_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kernelarc";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kernelarc";
  return fs::temp_directory_path() / "kernelarc-cache";
}

}  // namespace ka
