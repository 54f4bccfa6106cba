// tests/test_support.h — small helpers the test files share: substring checks, the message of an
// expected UserError, and the dev RMSNorm problem the campaign tests run on.
#pragma once
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "util/error.h"

namespace ka {

inline bool has(const std::string& s, const std::string& frag) { return s.find(frag) != std::string::npos; }

// The UserError message of `f()`; fails the test when nothing (or something else) is thrown.
template <typename F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a UserError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected a UserError, nothing was thrown";
  return {};
}

// FlashInfer-Bench's 022_rmsnorm_h512 from the shared dev problems, else the shipped rmsnorm_h128.
inline std::filesystem::path dev_rmsnorm_problem() {
  const std::filesystem::path root = ka::source_root();
  std::filesystem::path p = root / ".." / "shared" / "problems" / "sol-execbench" / "FlashInfer-Bench" / "022_rmsnorm_h512";
  return std::filesystem::exists(p) ? p : root / "examples" / "problems" / "rmsnorm_h128";
}

}  // namespace ka
