// problem/expr.h — the expression language of axis `expression`s and `constraints`: Python
// semantics for integers and floats (+ - * / // % **, parentheses, unary ±), comparisons
// (== != < <= > >=, chained as in Python) and `and` / `or` / `not`.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ka {

struct ExprError : std::runtime_error {
  size_t pos;  // 0-based character offset of the problem in the source
  ExprError(size_t p, const std::string& m) : std::runtime_error(m), pos(p) {}
};

// A value: an exact 64-bit integer, or a double (after `/`, `**` with a negative exponent, or a
// float literal). Booleans are integers 0/1 as in Python.
struct Value {
  bool is_int = true;
  int64_t i = 0;
  double f = 0;
  static Value of(int64_t v) { return {true, v, 0}; }
  static Value of(double v) { return {false, 0, v}; }
  double as_double() const { return is_int ? static_cast<double>(i) : f; }
  bool truthy() const { return is_int ? i != 0 : f != 0; }
};

struct ExprNode;

class Expr {
 public:
  static Expr parse(std::string_view src);  // throws ExprError
  using Lookup = std::function<std::optional<Value>(const std::string&)>;
  // Throws ExprError for unknown names, division by zero, overflow.
  Value eval(const Lookup& lookup) const;
  // Names the expression refers to, in first-use order, without repeats.
  std::vector<std::string> names() const;
  const std::string& source() const { return src_; }

 private:
  std::string src_;
  std::shared_ptr<const ExprNode> root_;
};

}  // namespace ka
