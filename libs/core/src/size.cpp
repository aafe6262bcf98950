#include "collkit/core/size.h"

#include <charconv>
#include <limits>

#include "collkit/core/error.h"

namespace collkit {

std::uint64_t parse_size_bytes(std::string_view text) {
  auto bad = [&](const char* why) {
    return InputError("invalid size \"" + std::string(text) + "\": " + why);
  };
  if (text.empty()) throw bad("empty");
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) throw bad("too large");
  if (ec != std::errc() || ptr == text.data()) throw bad("expected a number with an optional K, M, G or T suffix");
  std::string_view rest(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
  if (!rest.empty() && (rest.back() == 'B' || rest.back() == 'b')) rest.remove_suffix(1);
  unsigned shift = 0;
  if (rest.size() == 1) {
    switch (rest[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: throw bad("unknown suffix (use K, M, G or T, 1024-based)");
    }
  } else if (!rest.empty()) {
    throw bad("unknown suffix (use K, M, G or T, 1024-based)");
  }
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) throw bad("too large");
  return value << shift;
}

std::string format_size_bytes(std::uint64_t bytes) {
  static constexpr struct { unsigned shift; char suffix; } kUnits[] = {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}};
  for (auto u : kUnits) {
    std::uint64_t unit = std::uint64_t{1} << u.shift;
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes >> u.shift) + u.suffix;
  }
  return std::to_string(bytes);
}

}  // namespace collkit
