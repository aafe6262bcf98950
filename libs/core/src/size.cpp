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
  // A fraction (1.5M, as nccl-tests takes it): digits after a point, whole bytes rounded down.
  std::uint64_t frac = 0, frac_scale = 1;
  bool has_frac = false;
  if (!rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0) throw bad("expected digits after the point");
    if (digits > 9) throw bad("more than 9 digits after the point");
    for (std::size_t i = 0; i < digits; ++i) {
      frac = frac * 10 + static_cast<unsigned>(rest[i] - '0');
      frac_scale *= 10;
    }
    rest.remove_prefix(digits);
    has_frac = true;
  }
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
  if (has_frac && shift == 0) throw bad("a fraction of a byte: give a K, M, G or T suffix (1.5M)");
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) throw bad("too large");
  std::uint64_t bytes = value << shift;
  // frac / scale of 2^shift, exactly, without overflow: 2^shift = q scale + r, frac < scale <= 10^9.
  const std::uint64_t unit = std::uint64_t{1} << shift, q = unit / frac_scale, r = unit % frac_scale;
  const std::uint64_t part = frac * q + frac * r / frac_scale;  // < 2^shift
  if (part > std::numeric_limits<std::uint64_t>::max() - bytes) throw bad("too large");
  return bytes + part;
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
