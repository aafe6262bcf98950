#include "collkit/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
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

// The temporary file being written, for the signal handler: a killed writer (Ctrl-C, SIGTERM
// from a scheduler) must not leave a `<target>.tmp.XXXXXX` of up to the whole artifact behind.
// One at a time: write_file_atomic runs to the end before it returns.
char g_tmp[4096];
volatile std::sig_atomic_t g_tmp_set = 0;

extern "C" void remove_tmp_and_die(int sig) {
  if (g_tmp_set) ::unlink(g_tmp);  // async-signal-safe
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installed at each write (four sigaction calls; writes are few), for the signals whose default is
// to end the process, and only where nobody else handles them (the shell's Ctrl-C, MPI's own
// handlers stay as they are): a disposition reset to the default since is covered again.
void install_tmp_cleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_tmp_and_die;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

// Temporaries beside `path` (`<name>.tmp.XXXXXX`) older than an hour: a writer killed by
// SIGKILL or a crash left them, since no live writer takes that long. Errors are ignored.
void sweep_stale_tmps(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.filename().string() + ".tmp.";
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code e2;
    if (it->is_regular_file(e2) && fs::last_write_time(it->path(), e2) < cutoff && !e2) fs::remove(it->path(), e2);
  }
}

}  // namespace

namespace detail {

TmpRegistration::TmpRegistration(const std::string& tmp) {
  install_tmp_cleanup();
  if (tmp.size() >= sizeof g_tmp) return;  // too long to keep: left to the sweep
  std::memcpy(g_tmp, tmp.c_str(), tmp.size() + 1);
  g_tmp_set = 1;
}

TmpRegistration::~TmpRegistration() { g_tmp_set = 0; }

}  // namespace detail

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
  sweep_stale_tmps(path);
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) throw SystemError(given + ": cannot create a temporary file beside it: " + std::strerror(errno));
  detail::TmpRegistration registered(tmp);
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
