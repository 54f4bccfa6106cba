// test_expr.cpp — the expression language of axis `expression`s and `constraints` (problem/expr.h):
// Python semantics for + - * / // % ** (right-associative, binding tighter than a unary minus on
// its left), unary ±, parentheses, true division giving a float, floor division and modulo of
// negatives, chained comparisons, and/or/not (returning operands, short-circuiting), name lookup,
// Expr::names(), and errors that carry the 0-based position of the fault.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "problem/expr.h"

namespace ka {
namespace {

std::optional<Value> lookup(const std::string& n) {
  static const std::map<std::string, int64_t> vars = {{"a", 3}, {"b", 4}, {"batch", 8}, {"zero", 0}, {"neg", -7}};
  auto it = vars.find(n);
  if (it == vars.end()) return std::nullopt;
  return Value::of(it->second);
}

Value ev(const std::string& s) { return Expr::parse(s).eval(lookup); }

int64_t ev_int(const std::string& s) {
  Value v = ev(s);
  EXPECT_TRUE(v.is_int) << s << " should give an int";
  return v.i;
}

double ev_float(const std::string& s) {
  Value v = ev(s);
  EXPECT_FALSE(v.is_int) << s << " should give a float";
  return v.f;
}

// The ExprError thrown while parsing or evaluating `s`; fails the test when nothing is thrown.
ExprError err(const std::string& s) {
  try {
    ev(s);
  } catch (const ExprError& e) {
    return e;
  }
  ADD_FAILURE() << "'" << s << "' should not evaluate";
  return ExprError(std::string::npos, "");
}

#define EXPECT_EXPR_ERROR(src, position, fragment)                                     \
  do {                                                                                 \
    ExprError e_ = err(src);                                                           \
    EXPECT_EQ(e_.pos, static_cast<size_t>(position)) << "for '" << (src) << "': " << e_.what(); \
    EXPECT_NE(std::string(e_.what()).find(fragment), std::string::npos)                \
        << "for '" << (src) << "': got '" << e_.what() << "'";                        \
  } while (0)

TEST(Expr, IntegerLiteralsAndArithmetic) {
  EXPECT_EQ(ev_int("42"), 42);
  EXPECT_EQ(ev_int("1_000"), 1000);
  EXPECT_EQ(ev_int("1 + 2 * 3"), 7);
  EXPECT_EQ(ev_int("(1 + 2) * 3"), 9);
  EXPECT_EQ(ev_int("10 - 2 - 3"), 5);       // left-associative
  EXPECT_EQ(ev_int("100 // 10 // 3"), 3);   // left-associative
  EXPECT_EQ(ev_int("2 * 3 % 4"), 2);        // same precedence, left to right
  EXPECT_EQ(ev_int("  7\t*\n6 "), 42);      // whitespace anywhere between tokens
}

TEST(Expr, FloatLiterals) {
  EXPECT_DOUBLE_EQ(ev_float("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(ev_float(".5"), 0.5);
  EXPECT_DOUBLE_EQ(ev_float("1e3"), 1000.0);
  EXPECT_DOUBLE_EQ(ev_float("2.5e-1"), 0.25);
  EXPECT_DOUBLE_EQ(ev_float("1 + 0.5"), 1.5);  // int op float -> float
}

TEST(Expr, UnaryPlusMinus) {
  EXPECT_EQ(ev_int("-3"), -3);
  EXPECT_EQ(ev_int("+3"), 3);
  EXPECT_EQ(ev_int("--3"), 3);
  EXPECT_EQ(ev_int("-+-3"), 3);
  EXPECT_EQ(ev_int("2 - -3"), 5);
  EXPECT_EQ(ev_int("-a"), -3);
}

TEST(Expr, PowerIsRightAssociativeAndBindsTighterThanUnaryMinus) {
  EXPECT_EQ(ev_int("2 ** 3 ** 2"), 512);  // 2 ** (3 ** 2)
  EXPECT_EQ(ev_int("(2 ** 3) ** 2"), 64);
  EXPECT_EQ(ev_int("-2 ** 2"), -4);       // -(2 ** 2)
  EXPECT_EQ(ev_int("(-2) ** 2"), 4);
  EXPECT_EQ(ev_int("2 * 3 ** 2"), 18);
  EXPECT_EQ(ev_int("0 ** 0"), 1);
  EXPECT_EQ(ev_int("(-2) ** 63"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ev_int("1 ** 1000000000000000000"), 1);
  EXPECT_EQ(ev_int("(-1) ** 1000000000000000001"), -1);
  EXPECT_DOUBLE_EQ(ev_float("2 ** -1"), 0.5);  // negative exponent gives a float
  EXPECT_DOUBLE_EQ(ev_float("2 ** -2 ** 1"), 0.25);
  EXPECT_DOUBLE_EQ(ev_float("4 ** 0.5"), 2.0);
}

TEST(Expr, TrueDivisionGivesFloat) {
  EXPECT_DOUBLE_EQ(ev_float("7 / 2"), 3.5);
  EXPECT_DOUBLE_EQ(ev_float("4 / 2"), 2.0);  // still a float, as in Python
  EXPECT_DOUBLE_EQ(ev_float("-7 / 2"), -3.5);
  EXPECT_DOUBLE_EQ(ev_float("batch / 16"), 0.5);
}

TEST(Expr, FloorDivisionAndModuloOfNegatives) {
  EXPECT_EQ(ev_int("7 // 2"), 3);
  EXPECT_EQ(ev_int("-7 // 2"), -4);
  EXPECT_EQ(ev_int("7 // -2"), -4);
  EXPECT_EQ(ev_int("-7 // -2"), 3);
  EXPECT_EQ(ev_int("-8 // 2"), -4);
  EXPECT_EQ(ev_int("7 % 2"), 1);
  EXPECT_EQ(ev_int("-7 % 2"), 1);
  EXPECT_EQ(ev_int("7 % -2"), -1);
  EXPECT_EQ(ev_int("-7 % -2"), -1);
  EXPECT_EQ(ev_int("-8 % 2"), 0);
  EXPECT_EQ(ev_int("neg // 2"), -4);
  EXPECT_EQ(ev_int("(-9223372036854775807 - 1) % -1"), 0);
  EXPECT_DOUBLE_EQ(ev_float("7.5 // 2"), 3.0);
  EXPECT_DOUBLE_EQ(ev_float("-7.5 // 2"), -4.0);
  EXPECT_DOUBLE_EQ(ev_float("-7.5 % 2"), 0.5);
  EXPECT_DOUBLE_EQ(ev_float("7.5 % -2"), -0.5);
}

// Python: 1 // 0.1 == 9.0 and 1 % 0.1 == 0.09999999999999995 (floor of the exact quotient, not of
// the rounded 1 / 0.1 == 10.0). Disabled until float floor division follows CPython's float_divmod.
TEST(Expr, FloatFloorDivisionUsesExactQuotient) {
  EXPECT_DOUBLE_EQ(ev_float("1 // 0.1"), 9.0);
  EXPECT_DOUBLE_EQ(ev_float("1 % 0.1"), 0.09999999999999995);
}

// Found by fuzz_expr (fuzz/corpus/fuzz_expr/crash-float-literal-overflow): std::stod throws
// std::out_of_range for "7e777", which escapes as an internal error. Python reads 1e999 as inf and
// 1e-999 as 0.0. Disabled until the tokenizer uses strtod.
TEST(Expr, OutOfRangeFloatLiteralsFollowPython) {
  EXPECT_TRUE(std::isinf(ev_float("1e999")));
  EXPECT_EQ(ev_float("1e-999"), 0.0);
}

TEST(Expr, Comparisons) {
  EXPECT_EQ(ev_int("1 < 2"), 1);
  EXPECT_EQ(ev_int("2 < 1"), 0);
  EXPECT_EQ(ev_int("2 <= 2"), 1);
  EXPECT_EQ(ev_int("2 >= 3"), 0);
  EXPECT_EQ(ev_int("3 > 2"), 1);
  EXPECT_EQ(ev_int("3 == 3"), 1);
  EXPECT_EQ(ev_int("3 != 3"), 0);
  EXPECT_EQ(ev_int("1 == 1.0"), 1);
  EXPECT_EQ(ev_int("7 / 2 == 3.5"), 1);
  EXPECT_EQ(ev_int("a + 1 == b"), 1);  // arithmetic binds tighter
}

TEST(Expr, ChainedComparisons) {
  EXPECT_EQ(ev_int("1 < 2 < 3"), 1);
  EXPECT_EQ(ev_int("3 > 2 > 2"), 0);   // (3 > 2) and (2 > 2), not (3 > 2) > 2
  EXPECT_EQ(ev_int("1 < 3 > 2"), 1);
  EXPECT_EQ(ev_int("1 == 1 == 1"), 1);
  EXPECT_EQ(ev_int("2 == 2 == 1"), 0);  // not (2 == 2) == 1
  EXPECT_EQ(ev_int("0 < a < b <= 4"), 1);
  // Chains stop at the first false link: the unknown name after it is never looked up.
  EXPECT_EQ(ev_int("2 < 1 < unknown"), 0);
}

TEST(Expr, BooleanOperatorsReturnOperandsAndShortCircuit) {
  EXPECT_EQ(ev_int("0 or 5"), 5);
  EXPECT_EQ(ev_int("2 or 5"), 2);
  EXPECT_EQ(ev_int("2 and 3"), 3);
  EXPECT_EQ(ev_int("0 and 5"), 0);
  EXPECT_EQ(ev_int("not 0"), 1);
  EXPECT_EQ(ev_int("not 7"), 0);
  EXPECT_EQ(ev_int("not not 7"), 1);
  EXPECT_EQ(ev_int("0 and unknown"), 0);  // right side never evaluated
  EXPECT_EQ(ev_int("1 or unknown"), 1);
  EXPECT_EQ(ev_int("1 or 0 and 0"), 1);   // and binds tighter than or
  EXPECT_EQ(ev_int("not 1 == 2"), 1);     // not (1 == 2)
  EXPECT_EQ(ev_int("a == 3 and b == 4"), 1);
  EXPECT_EQ(ev_int("a == 3 and b == 5"), 0);
  EXPECT_DOUBLE_EQ(ev_float("0 or 0.5"), 0.5);
}

TEST(Expr, NameLookup) {
  EXPECT_EQ(ev_int("batch * a + b"), 28);
  EXPECT_EQ(ev_int("batch // (a - 1)"), 4);
  EXPECT_EQ(ev_int("zero"), 0);
  // The lookup is called on every evaluation: different lookups give different values.
  Expr e = Expr::parse("x * 2");
  EXPECT_EQ(e.eval([](const std::string&) { return std::optional<Value>(Value::of(int64_t{5})); }).i, 10);
  EXPECT_EQ(e.eval([](const std::string&) { return std::optional<Value>(Value::of(int64_t{6})); }).i, 12);
  EXPECT_EQ(e.source(), "x * 2");
}

TEST(Expr, Names) {
  EXPECT_EQ(Expr::parse("a + b * a - c").names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Expr::parse("len_indptr == batch_size + 1").names(),
            (std::vector<std::string>{"len_indptr", "batch_size"}));
  EXPECT_EQ(Expr::parse("not (x < y) or x").names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(Expr::parse("1 + 2").names().empty());
  EXPECT_EQ(Expr::parse("_a1").names(), (std::vector<std::string>{"_a1"}));
}

TEST(ExprErrors, UnknownName) {
  EXPECT_EXPR_ERROR("a + zz", 4, "unknown name 'zz'");
  EXPECT_EXPR_ERROR("missing", 0, "unknown name 'missing'");
}

TEST(ExprErrors, DivisionByZero) {
  EXPECT_EXPR_ERROR("1 / 0", 2, "division by zero");
  EXPECT_EXPR_ERROR("7 // zero", 2, "division by zero");
  EXPECT_EXPR_ERROR("1.0 // 0", 4, "division by zero");
  EXPECT_EXPR_ERROR("7 % 0", 2, "by zero");
  EXPECT_EXPR_ERROR("7.5 % 0.0", 4, "by zero");
  EXPECT_EXPR_ERROR("1 / 0.0", 2, "division by zero");
  EXPECT_EXPR_ERROR("0 ** -1", 2, "zero to a negative power");
}

TEST(ExprErrors, NoRealValue) { EXPECT_EXPR_ERROR("(-8) ** 0.5", 5, "no real value"); }

TEST(ExprErrors, UnbalancedParentheses) {
  EXPECT_EXPR_ERROR("(1 + 2", 6, "missing ')'");
  EXPECT_EXPR_ERROR("((1)", 4, "missing ')'");
  EXPECT_EXPR_ERROR("1 + 2)", 5, "unexpected ')'");
  EXPECT_EXPR_ERROR(")", 0, "unexpected ')'");
  EXPECT_EXPR_ERROR("()", 1, "unexpected ')'");
}

TEST(ExprErrors, TrailingGarbage) {
  EXPECT_EXPR_ERROR("1 2", 2, "unexpected '2'");
  EXPECT_EXPR_ERROR("a b", 2, "unexpected 'b'");
  EXPECT_EXPR_ERROR("1 $", 2, "unexpected character '$'");
  EXPECT_EXPR_ERROR("a = 1", 2, "unexpected character '='");
  EXPECT_EXPR_ERROR("a.b", 1, "unexpected character '.'");
  EXPECT_EXPR_ERROR("f(1)", 1, "unexpected '('");  // calls are not part of the grammar
}

TEST(ExprErrors, IncompleteExpressions) {
  EXPECT_EXPR_ERROR("1 +", 3, "unexpected end");
  EXPECT_EXPR_ERROR("not", 3, "unexpected end");
  EXPECT_EXPR_ERROR("1 and", 5, "unexpected end");
  EXPECT_EXPR_ERROR("* 2", 0, "unexpected '*'");
  EXPECT_EXPR_ERROR("and", 0, "unexpected 'and'");
  EXPECT_EXPR_ERROR("1 < < 2", 4, "unexpected '<'");
}

TEST(ExprErrors, Empty) {
  EXPECT_EXPR_ERROR("", 0, "empty expression");
  EXPECT_EXPR_ERROR("   ", 0, "empty expression");
}

TEST(ExprErrors, IntegerOverflow) {
  EXPECT_EQ(ev_int("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ev_int("-9223372036854775807 - 1"), std::numeric_limits<int64_t>::min());
  EXPECT_EXPR_ERROR("9223372036854775808", 0, "out of range");
  EXPECT_EXPR_ERROR("1 + 99999999999999999999", 4, "out of range");
  EXPECT_EXPR_ERROR("9223372036854775807 + 1", 20, "integer overflow");
  EXPECT_EXPR_ERROR("-9223372036854775807 - 2", 21, "integer overflow");
  EXPECT_EXPR_ERROR("4611686018427387904 * 2", 20, "integer overflow");
  EXPECT_EXPR_ERROR("2 ** 63", 2, "integer overflow");
  EXPECT_EXPR_ERROR("3 ** 1000000000000", 2, "integer overflow");
  EXPECT_EXPR_ERROR("-(-9223372036854775807 - 1)", 0, "integer overflow");
  EXPECT_EXPR_ERROR("(-9223372036854775807 - 1) // -1", 27, "integer overflow");
}

TEST(ExprErrors, DeepNestingIsAnErrorNotACrash) {
  std::string ok = std::string(40, '(') + "1" + std::string(40, ')');
  EXPECT_EQ(ev_int(ok), 1);
  std::string deep = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_NE(std::string(err(deep).what()).find("nested too deeply"), std::string::npos);
  EXPECT_NE(std::string(err(std::string(5000, '-') + "1").what()).find("nested too deeply"), std::string::npos);
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_NE(std::string(err(nots + "1").what()).find("nested too deeply"), std::string::npos);
  std::string pow = "2";
  for (int i = 0; i < 5000; ++i) pow += "**1";
  EXPECT_NE(std::string(err(pow).what()).find("nested too deeply"), std::string::npos);
}

TEST(ExprErrors, ParseErrorsDoNotNeedALookup) {
  // Syntax errors are raised by parse(), before any evaluation.
  EXPECT_THROW(Expr::parse("1 +"), ExprError);
  EXPECT_THROW(Expr::parse("(a"), ExprError);
  EXPECT_NO_THROW(Expr::parse("unknown_name + 1"));  // names are only resolved by eval()
}

}  // namespace
}  // namespace ka
