#pragma once
// Runtime adaptation to slow links and ranks (docs/adapt.md): faults injected in the backend's
// transport (coll-run --inject), a probe that finds them through the same transport, and a ring
// re-planned around them.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collkit/plan/plan.h"

namespace collkit::exec {

class World;

/// What --inject slows: every message between two ranks (either way), or every message to or from
/// one rank, by a factor: a message of b bytes leaves (factor - 1) * b / base rate later than it
/// would, and messages on one slowed pair leave one after another.
struct Injection {
  struct Slow {
    int a = -1, b = -1;  ///< a pair (a < b); b == -1: every pair with rank a
    double factor = 1;
  };
  std::vector<Slow> slow;
  bool empty() const { return slow.empty(); }
  /// The largest factor of the pair (1 when not slowed).
  double factor(int from, int to) const;
};

/// Parses "slow-link=0-1:x4,slow-rank=2:x3"; InputError naming the part for anything else, and for
/// ranks outside 0..nranks-1 or a factor below 1.
Injection parse_injection(const std::string& spec, int nranks);

/// Every rank's receive times (`mine[from]`, microseconds) gathered into `times[from][to]` on every
/// rank (every rank calls it).
std::vector<std::vector<double>> gather_receive_times(const World& world, const std::vector<double>& mine, double timeout_s);

/// The slow values of `values` (microseconds, or microseconds per MiB; 0 or negative: not
/// measured, never slow), slowest first, by an adaptive threshold: the values sorted, the slow set
/// is what lies above the first natural break at or above the lower quartile, a break being a
/// ratio between neighbours of more than `min_gap` and more than the spread of every value below
/// it (the healthy values' own noise). Nothing when no break stands out: pure noise names nothing.
/// The healthy set holds at least the lower quartile (a slow rank slows half of a ring's pairs).
std::vector<std::size_t> slow_outliers(const std::vector<double>& values, double min_gap = 1.5);

/// The pairs found slow in `times[from][to]` (microseconds, 0 or negative on the diagonal and for
/// pairs not measured): each pair once (a < b) at the slower of its two directions, the slow ones
/// by slow_outliers() of the measured pairs, slowest first.
std::vector<std::pair<int, int>> slow_pairs(const std::vector<std::vector<double>>& times, double min_gap = 1.5);

/// The median time of the measured pairs of `times` not in `found` (0 when none): the healthy rate.
double healthy_pair_time(const std::vector<std::vector<double>>& times, const std::vector<std::pair<int, int>>& found);

/// A ring order over `n` ranks whose consecutive pairs (the last back to the first) avoid every
/// pair of `avoid` (undirected); when no order avoids them all, the first ones (the slowest, in
/// slow_pairs()'s order) before any after them.
/// Starts from the identity, which it keeps when it already avoids them.
std::vector<int> ring_order_avoiding(int n, const std::vector<std::pair<int, int>>& avoid);

/// The pairs of ring order `order` (each once, a < b).
std::vector<std::pair<int, int>> ring_pairs(const std::vector<int>& order);

/// The plan adapted to what was found: a ring in some order, or the straggler-aware AllReduce
/// (libs/plan/src/algorithms/straggler.cpp) around one slow rank.
struct Adaptation {
  int straggler = -1;      ///< the straggler plan around this rank; -1: a ring
  std::vector<int> order;  ///< the ring's order (a ring only)
  /// "ring 0,2,1,3" or "straggler around rank 2".
  std::string describe() const;
  bool operator==(const Adaptation&) const = default;
};

/// Of the two ranks of the slowest pair (found's first, slowest first as slow_pairs() orders
/// them), the one in more pairs of `found`, when it is in two or more and the other is not in as
/// many: a slow rank (or every link to it that was seen slow); -1 when none.
int slow_rank(const std::vector<std::pair<int, int>>& found);

/// What to run once `found` (slow_pairs()'s order) is known on `n` ranks: a ring order that avoids
/// every found pair where one exists; else, for AllReduce (`allreduce`), the straggler plan around
/// the rank in the most found pairs (slow_rank()); else the ring keeping the slowest pairs off.
Adaptation adapt_to(int n, const std::vector<std::pair<int, int>>& found, bool allreduce);

/// The plans worth trying once `found` (slow_pairs()'s order) is known on `n` ranks, besides the
/// plan running: a ring order avoiding the found pairs (ring_order_avoiding(), when it is not the
/// identity), and for AllReduce (`allreduce`), when one rank is in two found pairs or more
/// (slow_rank()), the straggler plan around it. Which one runs is a prediction's choice, then a
/// measurement's (coll-run adapt).
std::vector<Adaptation> candidates(int n, const std::vector<std::pair<int, int>>& found, bool allreduce);

/// What the detected slowdown puts into a model of the ranks: per pair (a < b, [a][b] and [b][a]
/// alike) the time a slowed pair adds over a healthy one, us per MiB. A found pair adds its best
/// time less the healthy pairs' median (healthy_pair_time()); a pair never measured adds, when one
/// rank is in two found pairs or more (a slow rank: every link of it is slow), the mean of that
/// rank's found pairs, else nothing.
std::vector<std::vector<double>> extra_us_per_mib(const std::vector<std::vector<double>>& best,
                                                  const std::vector<std::pair<int, int>>& found);

/// The plan of `req` adapted: a ring in `a.order` (the identity when empty), or the straggler-aware
/// AllReduce around `a.straggler`.
std::unique_ptr<plan::Plan> adapted_plan(const plan::Request& req, const Adaptation& a);

/// The plan's predicted time (us) on req.nranks ranks with the detected slowdown put into the
/// topology: every pair its own link, at the one rate that makes the plain ring take `healthy_us`
/// (what this machine gives a ring, its copies and sums included), a slowed pair at that rate plus
/// the time per byte `extra` (extra_us_per_mib()) says it adds; the simulator (plan::simulate) on
/// it. 0 when healthy_us is not positive.
double predict_us(const plan::Plan& p, const plan::Request& req, const std::vector<std::vector<double>>& extra, double healthy_us);

/// The keep-or-roll-back decision after a new plan's trial iterations (coll-run adapt), on as
/// many of the latest iterations of each side (the fewer count): the new
/// plan is kept only when its best iteration beats the best of the plan it replaced by more than
/// the noise, and its median iteration is no slower than the other's (one lucky iteration does not
/// win). The noise is the larger of `min_margin` and the relative gap between the best and second
/// best iteration of the quieter side among those with three or more (the best is what a loaded
/// machine lets through; how far the next best lies from it is how repeatable that is).
struct TrialVerdict {
  bool keep = false;
  double before_us = 0, trial_us = 0;  ///< the best iteration of each
  double margin = 0;                   ///< relative: the trial must be below before x (1 - margin)
  /// "kept: best 1234 us against 2345 us (-47%, noise 3%)" or "rolled back: ...".
  std::string describe() const;
};
TrialVerdict judge_trial(const std::vector<double>& before_us, const std::vector<double>& trial_us, double min_margin = 0.02);

/// Detection from a running collective's own iterations: each iteration's send times per pair
/// (`times[from][to]`, us per MiB, 0 where nothing was sent) are kept as the best seen per pair (an
/// iteration a rank was not scheduled in says nothing about a link); slow_pairs() of those names
/// the slow pairs once the same set has come out of two iterations in a row. A new plan sends over
/// other pairs, which the next iterations add.
class Detector {
 public:
  Detector(int n, double min_gap);
  /// Takes one iteration; true when the pairs named changed (found() is the new set).
  bool observe(const std::vector<std::vector<double>>& times);
  const std::vector<std::pair<int, int>>& found() const { return found_; }
  /// The best time seen per pair so far ([from][to], us per MiB; 0: never sent).
  const std::vector<std::vector<double>>& best() const { return best_; }

 private:
  double min_gap_;
  std::vector<std::vector<double>> best_;
  std::vector<std::pair<int, int>> last_, found_;
  int same_ = 0;  // iterations in a row that gave last_
};

class Backend;

/// coll-run adapt: one fault set, one collective over sizes.
struct AdaptOptions {
  Injection injection;
  plan::Collective coll = plan::Collective::AllReduce;
  std::vector<std::uint64_t> sizes;
  int iters = 10, warmup = 3;
  std::uint64_t probe_bytes = 1 << 20;
  double min_gap = 1.5;  ///< the least break between healthy and slow pairs (slow_outliers())
  double timeout_s = 60;
  /// Find the faults with the probe before any size (the pairs one by one) instead of from the
  /// collective's own iterations at every size.
  bool probe = false;
  int online_iters = 12;  ///< iterations of the detection run per size (detection from iterations)
  int trial_iters = 3;    ///< iterations a new plan runs before it is kept or rolled back
};

struct AdaptRow {
  std::uint64_t bytes = 0;
  double healthy_us = 0, degraded_us = 0, adapted_us = 0;
  /// Detection from iterations: the iteration (from 1) after which the faults were first named
  /// (0: never), and the first one run with the plan finally adapted (0: never re-planned).
  int detected_at = 0, recovered_at = 0;
  Adaptation adapted;           ///< the plan measured as adapted
  std::uint64_t wrong = 0;      ///< elements wrong after a checked run of it, all ranks
  std::vector<double> iter_us;  ///< the detection run's iterations, the slowest rank's time each
  int tried = 0, rolled_back = 0;  ///< plans tried in the detection run, and of them not kept
  /// Of the time the faults cost, the part adapting won back: (degraded - adapted) / (degraded - healthy).
  double recovered() const { return degraded_us > healthy_us ? (degraded_us - adapted_us) / (degraded_us - healthy_us) : 0; }
};

struct AdaptReport {
  std::vector<std::vector<double>> probe;  ///< [from][to] receive time of probe_bytes, us (with --probe)
  std::vector<std::pair<int, int>> found;  ///< the pairs the probe (or the last size's detection) found slow
  int probes = 0;                          ///< probe runs until found (each: n-1 shifts)
  std::vector<int> order;                  ///< the ring order adapted to them (the probe's)
  std::vector<AdaptRow> rows;
};

/// Injects the faults and, at every size, measures a ring plan healthy (no faults) and degraded
/// (faults, identity order); finds the faults from the degraded ring's own iterations (or, with
/// `probe`, once with the backend's probe), re-plans (adapt_to()), verifies and checks the adapted
/// plan and measures it under the faults; rank 0 prints as it goes. InputError for a collective a
/// ring cannot run, UnsupportedError where the backend takes no faults or cannot time sends.
AdaptReport adapt_run(const AdaptOptions& opt, Backend& backend, World& world, std::ostream& out);

}  // namespace collkit::exec
