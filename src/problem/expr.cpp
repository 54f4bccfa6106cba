// problem/expr.cpp — tokenizer, recursive-descent parser and evaluator for Expr.
#include "problem/expr.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>

namespace ka {

struct ExprNode {
  enum Kind { Num, Name, Unary, Binary, Compare, And, Or, Not } kind;
  std::string op;  // operator text, or the name
  Value num;
  size_t pos = 0;
  std::vector<std::shared_ptr<const ExprNode>> kids;
  std::vector<std::string> cmp_ops;  // for Compare: ops between kids
};

namespace {

using NodeP = std::shared_ptr<const ExprNode>;

struct Token {
  enum Kind { Num, Name, Op, LParen, RParen, End } kind;
  std::string text;
  size_t pos;
  Value num;
};

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    size_t start = i;
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      bool is_float = false;
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      if (i < s.size() && s[i] == '.') {
        is_float = true;
        ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
          is_float = true;
          i = j;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
      }
      std::string text;
      for (size_t k = start; k < i; ++k)
        if (s[k] != '_') text += s[k];
      Token t{Token::Num, text, start, {}};
      if (is_float) {
        t.num = Value::of(std::strtod(text.c_str(), nullptr));  // as Python: 1e999 is inf, 1e-999 is 0.0
      } else {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 10);
        if (errno == ERANGE) throw ExprError(start, fmt::format("integer literal '{}' is out of range", text));
        t.num = Value::of(static_cast<int64_t>(v));
      }
      out.push_back(t);
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      out.push_back({Token::Name, std::string(s.substr(start, i - start)), start, {}});
      continue;
    }
    if (c == '(') {
      out.push_back({Token::LParen, "(", i++, {}});
      continue;
    }
    if (c == ')') {
      out.push_back({Token::RParen, ")", i++, {}});
      continue;
    }
    static const char* two[] = {"**", "//", "==", "!=", "<=", ">="};
    bool matched = false;
    for (const char* op : two) {
      if (s.substr(i, 2) == op) {
        out.push_back({Token::Op, op, i, {}});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string_view("+-*/%<>").find(c) != std::string_view::npos) {
      out.push_back({Token::Op, std::string(1, c), i++, {}});
      continue;
    }
    throw ExprError(i, fmt::format("unexpected character '{}'", c));
  }
  out.push_back({Token::End, "", s.size(), {}});
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> t) : t_(std::move(t)) {}

  NodeP parse_all() {
    if (peek().kind == Token::End) throw ExprError(0, "empty expression");
    NodeP n = parse_or();
    if (peek().kind != Token::End) throw ExprError(peek().pos, fmt::format("unexpected '{}'", peek().text));
    return n;
  }

 private:
  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;

  const Token& peek() const { return t_[i_]; }
  bool is_op(const char* op) const { return peek().kind == Token::Op && peek().text == op; }
  bool is_word(const char* w) const { return peek().kind == Token::Name && peek().text == w; }

  static NodeP node(ExprNode::Kind k, std::string op, size_t pos, std::vector<NodeP> kids) {
    auto n = std::make_shared<ExprNode>();
    n->kind = k;
    n->op = std::move(op);
    n->pos = pos;
    n->kids = std::move(kids);
    return n;
  }

  struct Depth {
    Parser& p;
    explicit Depth(Parser& pp) : p(pp) {
      if (++p.depth_ > 200) throw ExprError(p.peek().pos, "expression nested too deeply");
    }
    ~Depth() { --p.depth_; }
  };

  NodeP parse_or() {
    NodeP l = parse_and();
    while (is_word("or")) {
      size_t pos = peek().pos;
      ++i_;
      l = node(ExprNode::Or, "or", pos, {l, parse_and()});
    }
    return l;
  }
  NodeP parse_and() {
    NodeP l = parse_not();
    while (is_word("and")) {
      size_t pos = peek().pos;
      ++i_;
      l = node(ExprNode::And, "and", pos, {l, parse_not()});
    }
    return l;
  }
  NodeP parse_not() {
    Depth d(*this);
    if (is_word("not")) {
      size_t pos = peek().pos;
      ++i_;
      return node(ExprNode::Not, "not", pos, {parse_not()});
    }
    return parse_cmp();
  }
  NodeP parse_cmp() {
    size_t pos = peek().pos;
    NodeP first = parse_arith();
    std::vector<NodeP> kids{first};
    std::vector<std::string> ops;
    while (peek().kind == Token::Op &&
           (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == "<=" ||
            peek().text == ">" || peek().text == ">=")) {
      ops.push_back(peek().text);
      ++i_;
      kids.push_back(parse_arith());
    }
    if (ops.empty()) return first;
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Compare;
    n->pos = pos;
    n->kids = std::move(kids);
    n->cmp_ops = std::move(ops);
    return n;
  }
  NodeP parse_arith() {
    NodeP l = parse_term();
    while (is_op("+") || is_op("-")) {
      Token op = peek();
      ++i_;
      l = node(ExprNode::Binary, op.text, op.pos, {l, parse_term()});
    }
    return l;
  }
  NodeP parse_term() {
    NodeP l = parse_unary();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      Token op = peek();
      ++i_;
      l = node(ExprNode::Binary, op.text, op.pos, {l, parse_unary()});
    }
    return l;
  }
  NodeP parse_unary() {
    Depth d(*this);
    if (is_op("+") || is_op("-")) {
      Token op = peek();
      ++i_;
      return node(ExprNode::Unary, op.text, op.pos, {parse_unary()});
    }
    return parse_power();
  }
  NodeP parse_power() {
    NodeP base = parse_atom();
    if (is_op("**")) {
      Token op = peek();
      ++i_;
      return node(ExprNode::Binary, "**", op.pos, {base, parse_unary()});  // right-assoc, binds tighter than unary on its left
    }
    return base;
  }
  NodeP parse_atom() {
    Depth d(*this);
    const Token& t = peek();
    if (t.kind == Token::Num) {
      ++i_;
      auto n = std::make_shared<ExprNode>();
      n->kind = ExprNode::Num;
      n->num = t.num;
      n->pos = t.pos;
      return n;
    }
    if (t.kind == Token::Name) {
      if (t.text == "and" || t.text == "or" || t.text == "not")
        throw ExprError(t.pos, fmt::format("unexpected '{}'", t.text));
      ++i_;
      return node(ExprNode::Name, t.text, t.pos, {});
    }
    if (t.kind == Token::LParen) {
      ++i_;
      NodeP inner = parse_or();
      if (peek().kind != Token::RParen) throw ExprError(peek().pos, "missing ')'");
      ++i_;
      return inner;
    }
    if (t.kind == Token::End) throw ExprError(t.pos, "unexpected end of expression");
    throw ExprError(t.pos, fmt::format("unexpected '{}'", t.text));
  }
};

int64_t checked(bool overflow, int64_t v, size_t pos) {
  if (overflow) throw ExprError(pos, "integer overflow");
  return v;
}

int64_t floordiv(int64_t a, int64_t b, size_t pos) {
  if (b == 0) throw ExprError(pos, "division by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) throw ExprError(pos, "integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t pymod(int64_t a, int64_t b, size_t pos) {
  if (b == 0) throw ExprError(pos, "modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's float floor division (CPython float_floor_div): floor of the exact quotient, so that
// 1 // 0.1 == 9.0, consistent with 1 % 0.1.
double pyfloordiv(double a, double b, size_t pos) {
  if (b == 0) throw ExprError(pos, "division by zero");
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

double pyfmod(double a, double b, size_t pos) {
  if (b == 0) throw ExprError(pos, "modulo by zero");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Value binary(const std::string& op, Value a, Value b, size_t pos) {
  bool ints = a.is_int && b.is_int;
  if (op == "+") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_add_overflow(a.i, b.i, &r)) throw ExprError(pos, "integer overflow");
      return Value::of(r);
    }
    return Value::of(a.as_double() + b.as_double());
  }
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_sub_overflow(a.i, b.i, &r)) throw ExprError(pos, "integer overflow");
      return Value::of(r);
    }
    return Value::of(a.as_double() - b.as_double());
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_mul_overflow(a.i, b.i, &r)) throw ExprError(pos, "integer overflow");
      return Value::of(r);
    }
    return Value::of(a.as_double() * b.as_double());
  }
  if (op == "/") {
    if (b.as_double() == 0) throw ExprError(pos, "division by zero");
    return Value::of(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (ints) return Value::of(floordiv(a.i, b.i, pos));
    return Value::of(pyfloordiv(a.as_double(), b.as_double(), pos));
  }
  if (op == "%") {
    if (ints) return Value::of(pymod(a.i, b.i, pos));
    return Value::of(pyfmod(a.as_double(), b.as_double(), pos));
  }
  if (op == "**") {
    if (ints && b.i >= 0) {
      int64_t r = 1, base = a.i, e = b.i;
      while (e > 0) {
        if (e & 1) checked(__builtin_mul_overflow(r, base, &r), r, pos);
        e >>= 1;
        if (e > 0) checked(__builtin_mul_overflow(base, base, &base), base, pos);
      }
      return Value::of(r);
    }
    if (a.as_double() == 0 && b.as_double() < 0) throw ExprError(pos, "zero to a negative power");
    double r = std::pow(a.as_double(), b.as_double());
    if (std::isnan(r)) throw ExprError(pos, "power has no real value");
    return Value::of(r);
  }
  throw ExprError(pos, "unknown operator " + op);
}

bool compare(const std::string& op, Value a, Value b) {
  if (a.is_int && b.is_int) {
    if (op == "==") return a.i == b.i;
    if (op == "!=") return a.i != b.i;
    if (op == "<") return a.i < b.i;
    if (op == "<=") return a.i <= b.i;
    if (op == ">") return a.i > b.i;
    return a.i >= b.i;
  }
  double x = a.as_double(), y = b.as_double();
  if (op == "==") return x == y;
  if (op == "!=") return x != y;
  if (op == "<") return x < y;
  if (op == "<=") return x <= y;
  if (op == ">") return x > y;
  return x >= y;
}

Value eval_node(const ExprNode& n, const Expr::Lookup& lookup) {
  switch (n.kind) {
    case ExprNode::Num: return n.num;
    case ExprNode::Name: {
      auto v = lookup(n.op);
      if (!v) throw ExprError(n.pos, fmt::format("unknown name '{}'", n.op));
      return *v;
    }
    case ExprNode::Unary: {
      Value v = eval_node(*n.kids[0], lookup);
      if (n.op == "+") return v;
      if (v.is_int) {
        if (v.i == std::numeric_limits<int64_t>::min()) throw ExprError(n.pos, "integer overflow");
        return Value::of(-v.i);
      }
      return Value::of(-v.f);
    }
    case ExprNode::Binary:
      return binary(n.op, eval_node(*n.kids[0], lookup), eval_node(*n.kids[1], lookup), n.pos);
    case ExprNode::Compare: {
      Value left = eval_node(*n.kids[0], lookup);
      for (size_t k = 0; k < n.cmp_ops.size(); ++k) {
        Value right = eval_node(*n.kids[k + 1], lookup);
        if (!compare(n.cmp_ops[k], left, right)) return Value::of(int64_t{0});
        left = right;
      }
      return Value::of(int64_t{1});
    }
    case ExprNode::And: {
      Value l = eval_node(*n.kids[0], lookup);
      return l.truthy() ? eval_node(*n.kids[1], lookup) : l;
    }
    case ExprNode::Or: {
      Value l = eval_node(*n.kids[0], lookup);
      return l.truthy() ? l : eval_node(*n.kids[1], lookup);
    }
    case ExprNode::Not: return Value::of(int64_t{eval_node(*n.kids[0], lookup).truthy() ? 0 : 1});
  }
  return {};
}

void collect(const ExprNode& n, std::vector<std::string>& out) {
  if (n.kind == ExprNode::Name) {
    for (const auto& s : out)
      if (s == n.op) return;
    out.push_back(n.op);
  }
  for (const auto& k : n.kids) collect(*k, out);
}

}  // namespace

Expr Expr::parse(std::string_view src) {
  Expr e;
  e.src_ = std::string(src);
  e.root_ = Parser(tokenize(src)).parse_all();
  return e;
}

Value Expr::eval(const Lookup& lookup) const { return eval_node(*root_, lookup); }

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  collect(*root_, out);
  return out;
}

}  // namespace ka
