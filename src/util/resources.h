// util/resources.h — finds the files KernelArc ships beside its binary (the oracle script, the
// ABI header): $KERNELARC_HOME, then the source tree the binary was built from (build/src/kernelarc
// → repo root), then the configure-time source dir.
#pragma once
#include <filesystem>
#include <string>

namespace ka {

std::filesystem::path resource_path(const std::string& relative);
std::filesystem::path self_executable();
// The source tree this binary was configured from (tests use it to find fixtures).
std::filesystem::path source_root();

}  // namespace ka
