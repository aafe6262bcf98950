#include "collkit/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "collkit/core/error.h"
#include "collkit/core/limits.h"

namespace collkit {

std::string read_file(const std::string& path) { return read_file(path, limits::kInputFileBytes); }

std::string read_file(const std::string& path, std::uint64_t max_bytes) {
  // "-" is standard input, which can be read once: a second input named "-" would read nothing.
  static bool stdin_read = false;
  const bool from_stdin = path == "-";
  if (from_stdin && stdin_read) throw InputError("-: standard input was already read for another input (only one can be \"-\")");
  stdin_read = stdin_read || from_stdin;
  const int fd = from_stdin ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError(path + ": cannot open: " + std::strerror(errno));
  auto too_large = [&] {
    ::close(fd);
    const std::string limit = max_bytes % (1 << 30) == 0 ? std::to_string(max_bytes >> 30) + " GiB" : std::to_string(max_bytes) + " bytes";
    return InputError(path + ": larger than " + limit + " (the limit on input files)");
  };
  // A regular file is refused by its size before anything is read; a device or a pipe (/dev/zero)
  // as soon as what it gave passes the limit.
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large();
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw SystemError(path + ": read failed: " + std::strerror(err));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::uint64_t>(n) > max_bytes) throw too_large();
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

namespace {

// Writes all of `content` to fd; returns 0 or the errno of the failed write.
int write_all(int fd, const std::string& content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

// A FIFO, a device node or a socket is written through, as a shell's `>` does: renaming a
// temporary file over it would replace it (as root, -o /dev/null once replaced /dev/null).
void write_through(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError(path + ": cannot open: " + std::strerror(errno));
  const int err = write_all(fd, content);
  if (::close(fd) != 0 && err == 0) throw SystemError(path + ": write failed: " + std::strerror(errno));
  if (err != 0) throw SystemError(path + ": write failed: " + std::strerror(err));
}

}  // namespace

void write_file_atomic(const std::string& given, const std::string& content) {
  if (given == "-") {
    std::cout << content;
    std::cout.flush();
    return;
  }
  // A symbolic link stays one: its target is what gets replaced.
  std::string path = given;
  struct stat st {};
  if (::lstat(given.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::weakly_canonical(given, ec);
    if (ec) throw SystemError(given + ": cannot resolve the symbolic link: " + ec.message());
    path = target.string();
  }
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw SystemError(given + ": is a directory");
    if (!S_ISREG(st.st_mode)) return write_through(path, content);
  }
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) throw SystemError(given + ": cannot create a temporary file beside it: " + std::strerror(errno));
  if (const int err = write_all(fd, content); err != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw SystemError(given + ": write failed: " + std::strerror(err));
  }
  // mkstemp creates 0600; artifacts are meant to be shared like any file the user writes.
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw SystemError(given + ": flush failed: " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw SystemError(given + ": cannot rename the temporary file into place: " + std::strerror(err));
  }
}

void check_output_not_input(const std::string& output, std::initializer_list<std::string> inputs) {
  if (output.empty() || output == "-") return;
  for (const std::string& input : inputs) {
    if (input.empty() || input == "-") continue;
    std::error_code ec;
    if (std::filesystem::equivalent(output, input, ec))
      throw InputError(output + ": the output would overwrite the input " + input + "; write it elsewhere");
  }
}

}  // namespace collkit
