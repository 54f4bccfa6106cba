// tests/test_support.h — small helpers the test files share: substring checks, the message of an
// expected exception (a UserError, or another type), and the dev RMSNorm problem the campaign
// tests run on.
#pragma once
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "util/error.h"

namespace ka {

inline bool has(const std::string& s, const std::string& frag) { return s.find(frag) != std::string::npos; }

// The message of the E (named `name` in failures) that `f()` throws; fails the test when nothing
// (or something else) is thrown.
template <typename E, typename F>
std::string error_of(F&& f, const char* name) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a " << name << ", got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected a " << name << ", nothing was thrown";
  return {};
}
template <typename F>
std::string user_error_of(F&& f) {
  return error_of<UserError>(std::forward<F>(f), "UserError");
}

// FlashInfer-Bench's 022_rmsnorm_h512 from the shared dev problems, else the shipped rmsnorm_h128.
inline std::filesystem::path dev_rmsnorm_problem() {
  const std::filesystem::path root = ka::source_root();
  std::filesystem::path p = root / ".." / "shared" / "problems" / "sol-execbench" / "FlashInfer-Bench" / "022_rmsnorm_h512";
  return std::filesystem::exists(p) ? p : root / "examples" / "problems" / "rmsnorm_h128";
}

}  // namespace ka
