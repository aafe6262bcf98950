#pragma once
// collkit's one error policy (docs/errors.md): libraries throw collkit::Error or a subclass and
// never exit; apps catch at main, print the message on one line and return a non-zero code.

#include <stdexcept>
#include <string>

namespace collkit {

/// Base of every error collkit throws. The message is complete and one line: it names the file
/// and the place (`topo.json: /links/3/bw_gbps: must be > 0, got 0`).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Something the user gave is wrong: a file's content, a flag, a preset name. Exit code 2.
class InputError : public Error {
 public:
  using Error::Error;
};

/// The system or a library call failed (I/O, MPI, hwloc, CUDA, ibverbs). Exit code 3.
class SystemError : public Error {
 public:
  using Error::Error;
};

/// A wait on other ranks (or on a device) made no progress within its timeout; the message names
/// what was waited on. A SystemError (exit code 3): coll-run's survivors of a fault call the roll
/// on it (they name the ranks that are gone), which an error of this rank's own does not call for.
class TimeoutError : public SystemError {
 public:
  using SystemError::SystemError;
};

/// The request is valid but this build or machine cannot do it. Exit code 4.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

/// Runs f and returns what it returns; an InputError from it comes out as `file: message` (the
/// file named once), for errors found while using a file's content after it loaded: a plan's
/// parameters or chunk indices are checked when its programs are expanded.
template <class F>
decltype(auto) naming_file(const std::string& file, F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    std::string what = e.what();
    if (file.empty() || what.rfind(file + ":", 0) == 0) throw;
    throw InputError(file + ": " + what);
  }
}

/// The exit code apps return for an error of this type.
int exit_code_for(const std::exception& e) noexcept;

}  // namespace collkit
