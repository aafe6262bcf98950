#pragma once
// coll-plan shell: the interactive planner. One session holds a topology, the what-if edits
// stacked on it (each undoable), the last plan and the questions asked, so that a series of
// questions reloads nothing. Lines come from a terminal (libedit: history, completion) or from
// stdin as a script.

#include <deque>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/planner.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "collkit/topo/topology.h"

namespace collkit::shell {

class Session {
 public:
  explicit Session(std::ostream& out) : out_(out) {}

  /// Runs one command line; throws InputError (or the library's errors) with a one-line reason.
  /// Returns false on `quit`.
  bool execute(const std::string& line);

  /// Words that complete `word` as the `index`-th word of a line whose earlier words are `before`
  /// (commands, collectives, algorithms, presets, vertex ids, subcommands).
  std::vector<std::string> completions(const std::vector<std::string>& before, const std::string& word) const;

  bool has_topology() const { return !stack_.empty(); }

 private:
  struct Edit {
    std::string what;  ///< "fail link a/gpu0 a/nvs0"
    topo::Topology topology;
    std::shared_ptr<topo::RouteCache> routes;  ///< routes found so far on it, kept for the next question
    std::map<std::tuple<int, std::uint64_t, int>, std::shared_ptr<const plan::Evaluation>> answers;  ///< (coll, bytes, root): compare's
    std::shared_ptr<plan::sim::FoldCache> folds;  ///< symmetry checks done on its routes, for the next question
  };
  struct Question {  ///< a plan or compare asked: diff asks it again
    plan::Collective coll;
    std::uint64_t bytes;
    int root;
  };

  const topo::Topology& topology() const;
  /// Simulation options for the current topology: its route cache, and Ctrl-C heard.
  plan::SimOptions sim_options();
  /// Every algorithm evaluated for the request on `at` (compare, explain, diff), asked once per
  /// topology and request: the answer is kept with the topology.
  const plan::Evaluation& evaluation(Edit& at, const plan::Request& req);
  void set_base(topo::Topology t, std::optional<topo::SynthRequest> synth);
  void push(std::string what, topo::Topology t);
  void remember(const Question& q);

  void help(const std::vector<std::string>& args);
  void load(const std::vector<std::string>& args);
  void synth(const std::vector<std::string>& args);
  void show(const std::vector<std::string>& args);
  void plan(const std::vector<std::string>& args);
  void compare(const std::vector<std::string>& args, bool explain);
  void sweep(const std::vector<std::string>& args);
  void simulate(const std::vector<std::string>& args);
  void fail(const std::vector<std::string>& args);
  void scale(const std::vector<std::string>& args);
  void remove(const std::vector<std::string>& args);
  void add(const std::vector<std::string>& args);
  void edits(const std::vector<std::string>& args);
  void undo(const std::vector<std::string>& args);
  void diff(const std::vector<std::string>& args);
  void save(const std::vector<std::string>& args);
  void export_plan(const std::vector<std::string>& args);
  void run(const std::vector<std::string>& args);

  std::ostream& out_;
  std::deque<Edit> stack_;  ///< [0]: what was loaded; each later entry one edit on the one before (a deque: route caches point into it)
  std::optional<topo::SynthRequest> synth_;
  std::unique_ptr<plan::Plan> plan_;
  std::string plan_file_;  ///< where `save plan` last wrote the current plan
  std::vector<Question> asked_;
};

/// Ctrl-C while a command runs: the searches and simulations stop at their next plan or progress
/// report and the command fails with "interrupted"; the shell goes on.
plan::SearchOptions interruptible_search();

/// The shell's loop: prompt, history in `history_file` and completion when stdin is a terminal;
/// a script otherwise (no prompt; with `strict` the first failing command ends it). Returns the
/// exit code: 0, or the first error's code when strict, or 1 when any command failed.
int run_shell(const std::vector<std::string>& topo_files, bool strict, const std::string& history_file);

}  // namespace collkit::shell
