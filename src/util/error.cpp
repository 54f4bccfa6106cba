// util/error.cpp — helpers for user-facing errors.
#include "util/error.h"

namespace ka {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace ka
