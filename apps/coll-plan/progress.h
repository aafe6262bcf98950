#pragma once
// Progress of a long planning command, for a person watching: a count of the plans simulated (a
// search, a sweep) or of the ops executed (verify, one simulation), on stderr, once the command
// has run 2 s, and only when stderr is a terminal (a log or a pipe gets nothing). The line is
// cleared when the command ends, before its answer. coll-plan's subcommands and its shell use it.

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "collkit/plan/planner.h"

namespace collkit::cli {

class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), tty_(isatty(STDERR_FILENO) != 0) {}
  ~Progress() { clear(); }
  /// Clears the line, before an answer is printed; a later tick shows it again.
  void clear() {
    if (shown_) std::fprintf(stderr, "\r%*s\r", 60, "");
    shown_ = false;
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  plan::SearchOptions search() {
    plan::SearchOptions s;
    if (tty_) s.on_plan = [this](int) { tick(); };
    return s;
  }
  /// One more plan simulated (a sweep's evaluations each count from 0: counted here).
  void tick() {
    ++plans_;
    if (!due()) return;
    std::fprintf(stderr, "\r%s: %d plans simulated", what_.c_str(), plans_);
    shown_ = true;
  }
  /// Ops executed or simulated of all ops (verify, one simulation).
  void ops_done(std::size_t done, std::size_t total) {
    if (!due()) return;
    std::fprintf(stderr, "\r%s: %zu of %zu ops", what_.c_str(), done, total);
    shown_ = true;
  }
  std::function<void(std::size_t, std::size_t)> ops() {
    if (!tty_) return {};
    return [this](std::size_t done, std::size_t total) { ops_done(done, total); };
  }

 private:
  bool due() const { return tty_ && std::chrono::steady_clock::now() - start_ >= std::chrono::seconds(2); }

  std::string what_;
  bool tty_;
  bool shown_ = false;
  int plans_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace collkit::cli
