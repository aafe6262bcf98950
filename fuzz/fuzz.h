#pragma once
// What every fuzz target shares (docs/fuzz.md). A target hands the input to a real loader, then
// does what a user does next with what loaded, when that is cheap. collkit::InputError (and
// UnsupportedError: valid, but this build cannot do it) is the documented answer to bad input;
// anything else escapes: a crash, a sanitizer report, another exception (docs/errors.md: "a
// bug"), a hang past -timeout or memory past -rss_limit_mb is what libFuzzer reports.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "collkit/core/error.h"

namespace collkit::fuzz {

/// Inputs above this are skipped: far above the seeds (the largest, an NCCL XML dump, is ~10 KB),
/// and small enough that one run stays in milliseconds.
inline constexpr std::size_t kMaxInputBytes = std::size_t{1} << 16;

/// Runs `f` on the input as text; returns 0 (libFuzzer's "keep going") when it succeeds or throws
/// one of the documented input errors.
template <class F>
int run(const std::uint8_t* data, std::size_t size, F&& f) {
  if (size > kMaxInputBytes) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    f(text);
  } catch (const collkit::InputError&) {
  } catch (const collkit::UnsupportedError&) {
  }
  return 0;
}

/// A property that must hold of what loaded (it saves and loads again): its failure is a bug.
inline void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace collkit::fuzz
