#pragma once
// Reading and writing artifact files.

#include <string>

namespace collkit {

/// Reads a whole file; throws SystemError naming the path when it cannot.
std::string read_file(const std::string& path);

/// Writes `content` to `path` atomically: a temporary file in the same folder, flushed, then
/// renamed over the target, so an interrupted run never leaves half a file. "-" writes stdout.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace collkit
