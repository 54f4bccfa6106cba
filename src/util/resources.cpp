// util/resources.cpp — locating shipped files relative to the running binary.
#include "util/resources.h"

#include <cstdlib>
#include <vector>

#include "util/error.h"

namespace ka {

std::filesystem::path source_root() { return KA_SOURCE_DIR; }

std::filesystem::path self_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::filesystem::path resource_path(const std::string& relative) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* h = std::getenv("KERNELARC_HOME"); h && *h) roots.emplace_back(h);
  fs::path exe_dir = self_executable().parent_path();
  roots.push_back(exe_dir / ".." / "..");
  roots.push_back(exe_dir / ".." / "share" / "kernelarc");
  roots.push_back(source_root());
  for (const auto& r : roots)
    if (fs::exists(r / relative)) return fs::weakly_canonical(r / relative);
  user_error("cannot find {} (set KERNELARC_HOME to the KernelArc source folder)", relative);
}

}  // namespace ka
