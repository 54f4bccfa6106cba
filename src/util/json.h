// util/json.h — parsing JSON text that a user wrote: a syntax error is a UserError naming the file
// and the line and column where the parser stopped.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ka {

// Parses `text` (object keys kept in file order); `where` names it in errors.
nlohmann::ordered_json parse_user_json(std::string_view text, const std::string& where);

// "line L, column C" of a byte offset in text.
std::string line_col(std::string_view text, size_t byte);

}  // namespace ka
