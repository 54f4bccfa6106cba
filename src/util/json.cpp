// util/json.cpp — JSON text from users (util/json.h).
#include "util/json.h"

#include <fmt/format.h>

#include "util/error.h"

namespace ka {

std::string line_col(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("line {}, column {}", line, col);
}

nlohmann::ordered_json parse_user_json(std::string_view text, const std::string& where) {
  using json = nlohmann::ordered_json;
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    auto p = msg.find("parse error");
    if (p != std::string::npos) msg = msg.substr(p);
    user_error("{}: malformed JSON at {}: {}", where, line_col(text, e.byte > 0 ? e.byte - 1 : 0), one_line(msg));
  } catch (const json::exception& e) {  // e.g. out_of_range 406: a number like 1e999 overflows a double
    user_error("{}: malformed JSON: {}", where, one_line(e.what()));
  }
}

}  // namespace ka
