#pragma once
// Reading and writing artifact files.

#include <cstdint>
#include <string>

namespace collkit {

/// Reads a whole file; throws SystemError naming the path when it cannot, InputError when it holds
/// more than limits::kInputFileBytes (a device such as /dev/zero is read only that far).
std::string read_file(const std::string& path);
/// The same with another limit, in bytes.
std::string read_file(const std::string& path, std::uint64_t max_bytes);

/// Writes `content` to `path` atomically: a temporary file in the same folder, flushed, then
/// renamed over the target, so an interrupted run never leaves half a file. "-" writes stdout.
/// A symbolic link stays one (its target is replaced); a FIFO, a device node or a socket is
/// written through, as a shell's `>` does, never replaced by a regular file.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace collkit
