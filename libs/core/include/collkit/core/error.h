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

/// The request is valid but this build or machine cannot do it. Exit code 4.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

/// The exit code apps return for an error of this type.
int exit_code_for(const std::exception& e) noexcept;

}  // namespace collkit
