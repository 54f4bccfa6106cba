// util/files.h — whole-file reads and atomic writes; the only place that touches raw file I/O.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace ka {

namespace fs = std::filesystem;

// Reads a whole file; throws UserError naming the path when it cannot.
std::string read_text(const fs::path& p);
std::vector<std::byte> read_bytes(const fs::path& p);
// Writes via a temporary file and rename, so a reader never sees half a file.
void write_atomic(const fs::path& p, std::string_view data);
void write_atomic(const fs::path& p, const void* data, size_t n);
// A fresh private temporary directory (removed by the caller).
fs::path make_temp_dir(const std::string& prefix);
// Where KernelArc keeps its caches: $KERNELARC_CACHE, else $XDG_CACHE_HOME/kernelarc, else ~/.cache/kernelarc.
fs::path cache_root();

}  // namespace ka
