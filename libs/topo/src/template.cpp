#include "template.h"

#include <cctype>
#include <cstdint>
#include <stdexcept>

#include "collkit/core/limits.h"

namespace collkit::topo::tmpl {

namespace {

// Recursive descent, lowest precedence first: || && (== !=) (< <= > >=) (+ -) (* / %) unary.
// Arithmetic is checked: an overflow (INT64_MIN / -1 included) is an error, never undefined
// behaviour, and nesting stops at limits::kTemplateDepth before the recursion can exhaust the stack.
class Parser {
 public:
  Parser(std::string_view s, const Env& env) : s_(s), env_(env) {}

  std::int64_t parse() {
    std::int64_t v = logical_or();
    skip();
    if (pos_ != s_.size()) fail("unexpected \"" + std::string(s_.substr(pos_)) + "\"");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("in \"" + std::string(s_) + "\": " + why);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view op) {
    skip();
    if (s_.substr(pos_, op.size()) == op) {
      pos_ += op.size();
      return true;
    }
    return false;
  }
  std::int64_t logical_or() {
    std::int64_t v = logical_and();
    while (eat("||")) { std::int64_t r = logical_and(); v = (v || r) ? 1 : 0; }
    return v;
  }
  std::int64_t logical_and() {
    std::int64_t v = equality();
    while (eat("&&")) { std::int64_t r = equality(); v = (v && r) ? 1 : 0; }
    return v;
  }
  std::int64_t equality() {
    std::int64_t v = relational();
    for (;;) {
      if (eat("==")) v = v == relational();
      else if (eat("!=")) v = v != relational();
      else return v;
    }
  }
  std::int64_t relational() {
    std::int64_t v = additive();
    for (;;) {
      if (eat("<=")) v = v <= additive();
      else if (eat(">=")) v = v >= additive();
      else if (eat("<")) v = v < additive();
      else if (eat(">")) v = v > additive();
      else return v;
    }
  }
  std::int64_t additive() {
    std::int64_t v = multiplicative();
    for (;;) {
      if (eat("+")) v = add(v, multiplicative());
      else if (eat("-")) v = sub(v, multiplicative());
      else return v;
    }
  }
  std::int64_t multiplicative() {
    std::int64_t v = unary();
    for (;;) {
      if (eat("*")) {
        v = mul(v, unary());
      } else if (eat("/") || eat("%")) {
        bool div = s_[pos_ - 1] == '/';
        std::int64_t r = unary();
        if (r == 0) fail("division by zero");
        if (r == -1) v = div ? sub(0, v) : 0;  // INT64_MIN / -1 overflows, INT64_MIN % -1 traps
        else v = div ? v / r : v % r;
      } else {
        return v;
      }
    }
  }
  std::int64_t unary() {
    Nest nest(*this);
    if (eat("-")) return sub(0, unary());
    if (eat("!")) return unary() == 0 ? 1 : 0;
    return primary();
  }
  std::int64_t primary() {
    skip();
    if (eat("(")) {
      std::int64_t v = logical_or();
      if (!eat(")")) fail("missing \")\"");
      return v;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      std::int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        v = add(mul(v, 10), s_[pos_++] - '0');
      }
      return v;
    }
    std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) fail(pos_ < s_.size() ? "unexpected \"" + std::string(1, s_[pos_]) + "\"" : "expression ends early");
    std::string_view name = s_.substr(start, pos_ - start);
    auto it = env_.find(name);
    if (it == env_.end()) fail("unknown variable \"" + std::string(name) + "\"");
    return it->second;
  }

  std::int64_t add(std::int64_t a, std::int64_t b) const {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) overflow();
    return r;
  }
  std::int64_t sub(std::int64_t a, std::int64_t b) const {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) overflow();
    return r;
  }
  std::int64_t mul(std::int64_t a, std::int64_t b) const {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) overflow();
    return r;
  }
  [[noreturn]] void overflow() const { fail("integer overflow (values are 64-bit)"); }

  // Counts the nesting of unary() (every parenthesis and unary operator passes through it).
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > limits::kTemplateDepth)
        p_.fail("nested deeper than " + std::to_string(limits::kTemplateDepth) + " levels (the limit on expression depth)");
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    Parser& p_;
  };

  std::string_view s_;
  const Env& env_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::int64_t eval(std::string_view expr, const Env& env) { return Parser(expr, env).parse(); }

std::string expand(std::string_view text, const Env& env) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '}') throw std::invalid_argument("in \"" + std::string(text) + "\": \"}\" without \"{\"");
    if (text[i] != '{') {
      out += text[i++];
      continue;
    }
    std::size_t close = text.find('}', i);
    if (close == std::string_view::npos) throw std::invalid_argument("in \"" + std::string(text) + "\": \"{\" without \"}\"");
    out += std::to_string(eval(text.substr(i + 1, close - i - 1), env));
    i = close + 1;
  }
  return out;
}

std::vector<Loop> parse_loops(std::string_view text) {
  std::vector<Loop> loops;
  auto bad = [&] { return std::invalid_argument("expected \"VAR in A..B\", got \"" + std::string(text) + "\""); };
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view part = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    std::size_t in = part.find(" in ");
    std::size_t dots = part.find("..");
    if (in == std::string_view::npos || dots == std::string_view::npos || dots < in) throw bad();
    Loop l{std::string(trim(part.substr(0, in))), std::string(trim(part.substr(in + 4, dots - in - 4))),
           std::string(trim(part.substr(dots + 2)))};
    if (l.var.empty() || l.from.empty() || l.to.empty()) throw bad();
    for (char c : l.var)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') throw bad();
    loops.push_back(std::move(l));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return loops;
}

std::vector<Env> bindings(const std::vector<Loop>& loops, const Env& env) {
  std::vector<Env> out{env};
  for (const Loop& l : loops) {
    std::vector<Env> next;
    for (const Env& e : out) {
      const std::int64_t from = eval(l.from, e), to = eval(l.to, e);
      if (to < from) continue;
      // to - from + 1 bindings, counted in unsigned so that no range overflows, checked before
      // any is made.
      const std::uint64_t span = static_cast<std::uint64_t>(to) - static_cast<std::uint64_t>(from);
      if (span >= static_cast<std::uint64_t>(limits::kTemplateBindings) - next.size())
        throw std::invalid_argument("\"" + l.var + " in " + l.from + ".." + l.to + "\" makes more than " +
                                    std::to_string(limits::kTemplateBindings) + " bindings (the limit on one entry's loops)");
      for (std::int64_t v = from;; ++v) {
        Env x = e;
        x[l.var] = v;
        next.push_back(std::move(x));
        if (v == to) break;
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace collkit::topo::tmpl
