// util/hash.h — SHA-256 (OpenSSL) for content addressing and integrity checks.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace ka {

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& p);

}  // namespace ka
