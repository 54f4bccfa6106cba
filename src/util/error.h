// util/error.h — the two kinds of failure KernelArc distinguishes.
// UserError: something the user can fix (bad file, bad flag, missing GPU). The CLI prints its
// one-line message and exits with code 2. Anything else that escapes is an internal bug.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace ka {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

// Collapse a message onto one line (the CLI promises one-line errors).
std::string one_line(std::string s);

}  // namespace ka
