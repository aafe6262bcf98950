#pragma once
// The small template language of node presets (docs/presets.md): integer expressions, `{EXPR}`
// substitution in strings, and `for` loops over inclusive ranges.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace collkit::topo::tmpl {

using Env = std::map<std::string, std::int64_t, std::less<>>;

/// Evaluates an integer expression; throws std::invalid_argument with a short reason.
std::int64_t eval(std::string_view expr, const Env& env);

/// Replaces every {EXPR} in text by its value; throws std::invalid_argument.
std::string expand(std::string_view text, const Env& env);

/// One loop variable and its inclusive range expressions.
struct Loop {
  std::string var;
  std::string from;
  std::string to;
};
/// Parses "i in 0..7, j in 0..n-1"; throws std::invalid_argument.
std::vector<Loop> parse_loops(std::string_view text);

/// Every binding of the loops (row-major, last loop innermost), each extending `env`.
std::vector<Env> bindings(const std::vector<Loop>& loops, const Env& env);

}  // namespace collkit::topo::tmpl
