#pragma once
// Sizes on the command line: 1024-based K/M/G/T suffixes as nccl-tests reads them.

#include <cstdint>
#include <string>
#include <string_view>

namespace collkit {

/// Parses "64", "4K", "1M", "8G" (1024-based, optional trailing B). Throws InputError on
/// anything else, quoting the text.
std::uint64_t parse_size_bytes(std::string_view text);

/// Formats bytes the short way back ("4K", "1M", "1536"): exact when a suffix divides evenly.
std::string format_size_bytes(std::uint64_t bytes);

}  // namespace collkit
