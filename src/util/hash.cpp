// util/hash.cpp — SHA-256 through OpenSSL's EVP interface.
#include "util/hash.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "util/error.h"

namespace ka {
namespace {

struct Digest {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  Digest() { EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr); }
  void update(const void* d, size_t n) { EVP_DigestUpdate(ctx.get(), d, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &n);
    static const char* k = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < n; ++i) {
      s += k[md[i] >> 4];
      s += k[md[i] & 15];
    }
    return s;
  }
};

}  // namespace

std::string sha256_hex(std::string_view data) {
  Digest d;
  d.update(data.data(), data.size());
  return d.hex();
}

std::string sha256_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) user_error("{}: cannot open for hashing", p.string());
  Digest d;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.update(buf.data(), static_cast<size_t>(f.gcount()));
  }
  return d.hex();
}

}  // namespace ka
