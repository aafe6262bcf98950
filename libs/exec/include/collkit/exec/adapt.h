#pragma once
// Runtime adaptation to slow links and ranks (docs/adapt.md): faults injected in the backend's
// transport (coll-run --inject), a probe that finds them through the same transport, and a ring
// re-planned around them.

#include <cstdint>
#include <iosfwd>
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

/// The pairs a probe found slow: pairs whose message time exceeds `threshold` x the lower quartile
/// of all pairs' times (the median would sit among the slow ones when a slow rank slows half of them), from `times[from][to]`
/// (microseconds, 0 or negative on the diagonal and for pairs not measured); each pair once (a < b), slowest first.
std::vector<std::pair<int, int>> slow_pairs(const std::vector<std::vector<double>>& times, double threshold = 3.0);

/// A ring order over `n` ranks whose consecutive pairs (the last back to the first) avoid every
/// pair of `avoid` (undirected); when no order avoids them all, the first ones (the slowest, in
/// slow_pairs()'s order) before any after them.
/// Starts from the identity, which it keeps when it already avoids them.
std::vector<int> ring_order_avoiding(int n, const std::vector<std::pair<int, int>>& avoid);

/// The pairs of ring order `order` (each once, a < b).
std::vector<std::pair<int, int>> ring_pairs(const std::vector<int>& order);

class Backend;

/// coll-run adapt: one fault set, one collective over sizes.
struct AdaptOptions {
  Injection injection;
  plan::Collective coll = plan::Collective::AllReduce;
  std::vector<std::uint64_t> sizes;
  int iters = 10, warmup = 3;
  std::uint64_t probe_bytes = 1 << 20;
  double threshold = 3.0;  ///< a pair is slow above this x the lower quartile of the pairs
  double timeout_s = 60;
};

struct AdaptRow {
  std::uint64_t bytes = 0;
  double healthy_us = 0, degraded_us = 0, adapted_us = 0;
  /// Of the time the faults cost, the part adapting won back: (degraded - adapted) / (degraded - healthy).
  double recovered() const { return degraded_us > healthy_us ? (degraded_us - adapted_us) / (degraded_us - healthy_us) : 0; }
};

struct AdaptReport {
  std::vector<std::vector<double>> probe;  ///< [from][to] receive time of probe_bytes, us
  std::vector<std::pair<int, int>> found;  ///< the pairs the probe found slow
  int probes = 0;                          ///< probe runs until found (each: n-1 shifts)
  std::vector<int> order;                  ///< the ring order adapted to them
  std::vector<AdaptRow> rows;
};

/// Injects the faults, finds them with the backend's probe, re-plans the ring around them and
/// measures a ring plan healthy (no faults), degraded (faults, identity order) and adapted (faults,
/// the new order) at every size; rank 0 prints as it goes. InputError for a collective a ring cannot
/// run, UnsupportedError where the backend takes no faults.
AdaptReport adapt_run(const AdaptOptions& opt, Backend& backend, World& world, std::ostream& out);

}  // namespace collkit::exec
