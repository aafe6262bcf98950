#pragma once
// Reading and writing artifact files.

#include <cstdint>
#include <initializer_list>
#include <string>

namespace collkit {

/// Reads a whole file; throws SystemError naming the path when it cannot, InputError when it holds
/// more than limits::kInputFileBytes (a device such as /dev/zero is read only that far). "-" reads
/// standard input, once per process (a second "-" is refused with InputError).
std::string read_file(const std::string& path);
/// The same with another limit, in bytes.
std::string read_file(const std::string& path, std::uint64_t max_bytes);

/// Writes `content` to `path` atomically: a temporary file in the same folder, flushed, then
/// renamed over the target, so an interrupted run never leaves half a file. "-" writes stdout.
/// SIGINT, SIGTERM, SIGHUP or SIGPIPE during the write (where nothing else handles them) remove
/// the temporary file before the process ends by the signal; temporaries of this target older
/// than an hour (left by SIGKILL or a crash) are removed before a write.
/// A symbolic link stays one (its target is replaced); a FIFO, a device node or a socket is
/// written through, as a shell's `>` does, never replaced by a regular file.
void write_file_atomic(const std::string& path, const std::string& content);

namespace detail {
/// While it lives, `tmp` is the file the signal handlers above remove (one at a time).
struct TmpRegistration {
  explicit TmpRegistration(const std::string& tmp);
  ~TmpRegistration();
  TmpRegistration(const TmpRegistration&) = delete;
  TmpRegistration& operator=(const TmpRegistration&) = delete;
};
}  // namespace detail

/// Throws InputError when `output` names the same file as one of `inputs` (the same path, or a
/// link or another spelling of it): the write would replace an input. Checked before any work, so
/// that a long run does not end by overwriting what it read. Empty names and "-" never match.
void check_output_not_input(const std::string& output, std::initializer_list<std::string> inputs);

}  // namespace collkit
