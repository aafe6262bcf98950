// The search behind spread_channels (ring_search.h). Minimising the busiest link direction is a
// bottleneck problem, so it is solved as a series of yes/no questions, lightest load first: "can
// every channel find its order with no link direction crossed more than floor(level * GB/s)
// times?" Each question is a depth-first search over all channels together, backtracking from
// one channel into the previous ones (the last of 7 arc-disjoint rings on a full mesh of 8 needs
// exactly the 8 arcs the first 6 left), pruned by capacity counts (per rank, per NIC port, in
// all) and, on small or sparse hosts, by a reachability check per step. A step budget with a
// few shuffled restarts bounds it, so 72-GPU hosts and odd inputs stay at milliseconds; a level
// that runs out of budget unproved is skipped. The answer stays the base cycle walked from each
// start unless a lighter level is shown feasible by actual orders, so a host on which all orders
// tie (an NVSwitch) keeps them.

#include "ring_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>

namespace collkit::plan::algo {

namespace {

// Steps (one route tried) per attempt and in all: the 8- and 16-GPU meshes settle in a few
// hundred, 72 GPUs behind an NVSwitch in none (counting refutes every lighter level); the total
// holds a sparse random host to tens of milliseconds.
constexpr long kStepsPerAttempt = 50000;
constexpr unsigned kAttempts = 4;
constexpr long kStepsTotal = 400000;
constexpr double kRelEps = 1e-9;
constexpr std::size_t kPruneRanks = 16;

const std::vector<int> kNoArcs;

// The link directions of one step u -> v of an order, in the direction the ring runs.
const std::vector<int>& step(const HostLinks& h, const ChannelEnds& e, int u, int v) {
  auto su = static_cast<std::size_t>(u), sv = static_cast<std::size_t>(v);
  return e.reversed ? h.route[sv][su] : h.route[su][sv];
}
bool step_exists(const HostLinks& h, const ChannelEnds& e, int u, int v) {
  auto su = static_cast<std::size_t>(u), sv = static_cast<std::size_t>(v);
  return e.reversed ? h.reachable[sv][su] : h.reachable[su][sv];
}

// Crossed at the order's first rank: the way into the host (out of it when reversed).
const std::vector<int>& head(const HostLinks& h, const ChannelEnds& e, bool cycle) {
  if (cycle || h.entry.empty()) return kNoArcs;
  auto s = static_cast<std::size_t>(e.start);
  return e.reversed ? h.exit[s] : h.entry[s];
}

// Crossed after the order's last rank: back to the start, or out of the host (in, reversed).
const std::vector<int>& tail(const HostLinks& h, const ChannelEnds& e, bool cycle, int last) {
  if (cycle) return step(h, e, last, e.start);
  if (h.exit.empty()) return kNoArcs;
  auto l = static_cast<std::size_t>(last);
  return e.reversed ? h.entry[l] : h.exit[l];
}

// The base cycle walked from each start: forward, or backward where that reaches a fixed end.
std::vector<std::vector<int>> base_orders(const HostLinks& h, const std::vector<ChannelEnds>& ends) {
  std::size_t m = h.size();
  std::vector<std::size_t> pos(m);
  for (std::size_t i = 0; i < m; ++i) pos[static_cast<std::size_t>(h.base[i])] = i;
  std::vector<std::vector<int>> out;
  for (const ChannelEnds& e : ends) {
    std::size_t p = pos[static_cast<std::size_t>(e.start)];
    std::vector<int> fwd, back;
    for (std::size_t i = 0; i < m; ++i) {
      fwd.push_back(h.base[(p + i) % m]);
      back.push_back(h.base[(p + m - i) % m]);
    }
    out.push_back(e.end >= 0 && fwd.back() != e.end && back.back() == e.end ? back : fwd);
  }
  return out;
}

class Spread {
 public:
  // Attempt 0 tries the widest, then fewest-hop routes first, then the next rank along the base
  // cycle; later attempts (restarts after a budget ran out) try ranks in a shuffled order.
  Spread(const HostLinks& h, const std::vector<ChannelEnds>& ends, bool cycle, unsigned attempt)
      : h_(h), ends_(ends), cycle_(cycle), m_(h.size()) {
    std::vector<std::size_t> pos(m_);
    for (std::size_t i = 0; i < m_; ++i) pos[static_cast<std::size_t>(h.base[i])] = i;
    std::mt19937 rng(attempt);
    std::vector<std::size_t> shuffled(m_ * m_);
    std::iota(shuffled.begin(), shuffled.end(), 0);
    if (attempt > 0) std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (int r = 0; r < 2; ++r) {
      prefer_[r].resize(m_);
      for (std::size_t u = 0; u < m_; ++u) {
        auto& list = prefer_[r][u];
        ChannelEnds dir{0, -1, r == 1};
        for (std::size_t v = 0; v < m_; ++v)
          if (v != u && step_exists(h, dir, static_cast<int>(u), static_cast<int>(v))) list.push_back(static_cast<int>(v));
        // Widest, then fewest hops (in the ring's direction), then the next along the base cycle.
        auto key = [&](int v) {
          auto sv = static_cast<std::size_t>(v);
          double w = r ? h.width[sv][u] : h.width[u][sv];
          std::size_t hops = r ? h.hops[sv][u] : h.hops[u][sv];
          if (attempt > 0) return std::make_tuple(0.0, std::size_t{0}, shuffled[u * m_ + sv]);
          return std::make_tuple(-w, hops, (pos[sv] + m_ - pos[u]) % m_);
        };
        std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return key(a) < key(b); });
      }
    }
    for (std::size_t i = 0; i < m_; ++i)
      for (std::size_t j = 0; j < m_; ++j) colocated_ = colocated_ || (i != j && h.reachable[i][j] && h.route[i][j].empty());
    shortest_ = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < m_; ++i)
      for (std::size_t j = 0; j < m_; ++j)
        if (i != j && h.reachable[i][j]) shortest_ = std::min(shortest_, h.route[i][j].size());
    if (h.sparse)
      for (int r = 0; r < 2; ++r) {
        into_[r].assign(m_, {});
        for (std::size_t u = 0; u < m_; ++u)
          for (int v : prefer_[r][u]) into_[r][static_cast<std::size_t>(v)].push_back(static_cast<int>(u));
      }
  }

  // Orders for every channel with no link direction crossed more than floor(level * GB/s)
  // times; false when there are none or the budget ran out first.
  bool solve(double level, long budget, std::vector<std::vector<int>>& out, long& spent) {
    cap_.assign(h_.arc_gbps.size(), 0);
    for (std::size_t a = 0; a < cap_.size(); ++a) cap_[a] = static_cast<int>(std::floor(level * h_.arc_gbps[a] * (1 + kRelEps)));
    load_.assign(cap_.size(), 0);
    paths_.assign(ends_.size(), {});
    used_.assign(ends_.size(), std::vector<char>(m_, 0));
    budget_ = budget;
    aborted_ = false;
    bool ok = true;
    for (const ChannelEnds& e : ends_) {
      const auto& arcs = head(h_, e, cycle_);
      ok = ok && fits(arcs);
      if (ok) add(arcs, 1);
    }
    ok = ok && channel(0);
    spent = budget - budget_;
    if (ok) out = paths_;
    return ok;
  }

 private:
  bool fits(const std::vector<int>& arcs) const {
    for (int a : arcs)
      if (load_[static_cast<std::size_t>(a)] >= cap_[static_cast<std::size_t>(a)]) return false;
    return true;
  }
  void add(const std::vector<int>& arcs, int d) {
    for (int a : arcs) load_[static_cast<std::size_t>(a)] += d;
  }

  bool channel(std::size_t c) {
    if (c == ends_.size()) return true;
    if (!room_for(c)) return false;
    const ChannelEnds& e = ends_[c];
    paths_[c].assign(1, e.start);
    std::fill(used_[c].begin(), used_[c].end(), 0);
    used_[c][static_cast<std::size_t>(e.start)] = 1;
    return extend(c);
  }

  bool extend(std::size_t c) {
    const ChannelEnds& e = ends_[c];
    std::vector<int>& path = paths_[c];
    if (path.size() == m_) return finish(c);
    int u = path.back();
    const std::vector<int>* next = &prefer_[e.reversed ? 1 : 0][static_cast<std::size_t>(u)];
    std::vector<int> ranked;
    if (h_.sparse) {
      ranked = fewest_onward(c, *next);
      next = &ranked;
    }
    for (int v : *next) {
      auto sv = static_cast<std::size_t>(v);
      if (used_[c][sv] || (v == e.end && path.size() + 1 < m_)) continue;
      if (--budget_ < 0) {
        aborted_ = true;
        return false;
      }
      const auto& arcs = step(h_, e, u, v);
      if (!fits(arcs)) continue;
      add(arcs, 1);
      used_[c][sv] = 1;
      path.push_back(v);
      if (open_ends(c) && extend(c)) return true;
      path.pop_back();
      used_[c][sv] = 0;
      add(arcs, -1);
      if (aborted_) return false;
    }
    return false;
  }

  // Within channel c: every rank not yet on its order can still be reached from the order's
  // last rank or another such rank, and (one host) the start from one of them. Quadratic per
  // step, so only on hosts small enough for it to pay (the 8- and 16-GPU meshes).
  bool open_ends(std::size_t c) const {
    if (h_.sparse) return open_ends_sparse(c);
    if (m_ > kPruneRanks) return true;
    const ChannelEnds& e = ends_[c];
    const std::vector<int>& path = paths_[c];
    if (path.size() == m_) return true;
    auto can = [&](std::size_t x, std::size_t w) {
      return step_exists(h_, e, static_cast<int>(x), static_cast<int>(w)) && fits(step(h_, e, static_cast<int>(x), static_cast<int>(w)));
    };
    auto last = static_cast<std::size_t>(path.back());
    bool closes = !cycle_;
    for (std::size_t w = 0; w < m_; ++w) {
      if (used_[c][w]) continue;
      bool in = can(last, w);
      for (std::size_t x = 0; x < m_ && !in; ++x) in = x != w && !used_[c][x] && can(x, w);
      if (!in) return false;
      closes = closes || can(w, static_cast<std::size_t>(e.start));
    }
    return closes;
  }

  // open_ends over the links that exist, for sparse hosts of any size.
  bool open_ends_sparse(std::size_t c) const {
    const ChannelEnds& e = ends_[c];
    const std::vector<int>& path = paths_[c];
    if (path.size() == m_) return true;
    const auto& into = into_[e.reversed ? 1 : 0];
    auto can = [&](std::size_t x, std::size_t w) { return fits(step(h_, e, static_cast<int>(x), static_cast<int>(w))); };
    auto last = static_cast<std::size_t>(path.back());
    for (std::size_t w = 0; w < m_; ++w) {
      if (used_[c][w]) continue;
      bool in = false;
      for (int x : into[w]) {
        auto sx = static_cast<std::size_t>(x);
        if ((sx == last || !used_[c][sx]) && can(sx, w)) {
          in = true;
          break;
        }
      }
      if (!in) return false;
    }
    if (!cycle_) return true;
    auto start = static_cast<std::size_t>(e.start);
    for (int x : into[start])
      if (!used_[c][static_cast<std::size_t>(x)] && can(static_cast<std::size_t>(x), start)) return true;
    return false;
  }

  // Candidates after the path's last rank on sparse links: widest and fewest hops as ever, then
  // the least loaded route (so that channels spread before they must), then Warnsdorff's rule,
  // the fewest onward steps first, so that the search does not strand a rank; ties in the
  // given order.
  std::vector<int> fewest_onward(std::size_t c, const std::vector<int>& candidates) const {
    const ChannelEnds& e = ends_[c];
    auto u = static_cast<std::size_t>(paths_[c].back());
    std::vector<std::tuple<double, std::size_t, int, int, int>> keyed;  // (-width, hops, load, onward steps, candidate)
    for (int v : candidates) {
      auto sv = static_cast<std::size_t>(v);
      if (used_[c][sv]) continue;
      int onward = 0;
      for (int w : prefer_[e.reversed ? 1 : 0][sv]) onward += !used_[c][static_cast<std::size_t>(w)] && w != v && fits(step(h_, e, v, w));
      double width = e.reversed ? h_.width[sv][u] : h_.width[u][sv];
      std::size_t hops = e.reversed ? h_.hops[sv][u] : h_.hops[u][sv];
      int load = 0;
      for (int a : step(h_, e, static_cast<int>(u), v)) load = std::max(load, load_[static_cast<std::size_t>(a)]);
      keyed.emplace_back(-width, hops, load, onward, v);
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b));
    });
    std::vector<int> out;
    for (const auto& k : keyed) out.push_back(std::get<4>(k));
    return out;
  }

  bool finish(std::size_t c) {
    const ChannelEnds& e = ends_[c];
    int last = paths_[c].back();
    if (e.end >= 0 && last != e.end) return false;
    if (cycle_ && m_ > 1 && !step_exists(h_, e, last, e.start)) return false;
    const auto& arcs = tail(h_, e, cycle_, last);
    if (!fits(arcs)) return false;
    add(arcs, 1);
    if (channel(c + 1)) return true;
    add(arcs, -1);
    return false;
  }

  // A necessary condition for channels from..end: every rank can still be entered and left as
  // often as they need, counting what is left on the last (first) link direction of the routes
  // into (out of) it. It refutes a level whose links are too thin without searching, e.g. any
  // level below "every channel through this GPU's one NVSwitch port".
  bool room_for(std::size_t from) {
    if (colocated_) return true;
    std::size_t left = ends_.size() - from;
    if (left == 0) return true;
    // Every step left crosses at least the shortest route's link directions.
    long spare = 0;
    for (std::size_t a = 0; a < cap_.size(); ++a) spare += cap_[a] - load_[a];
    std::size_t steps = left * (cycle_ ? m_ : m_ - 1);
    if (shortest_ != std::numeric_limits<std::size_t>::max() && spare < static_cast<long>(steps * shortest_)) return false;
    stamp_.assign(cap_.size(), 0);
    int tag = 0;
    // Every channel left still leaves the host through a NIC port (enters there, reversed), as
    // often as the ports have room: with more channels than NICs, this refutes the levels at
    // which each NIC carries one channel, which the search could only exhaust.
    if (!cycle_ && !h_.exit.empty())
      for (int rev = 0; rev < 2; ++rev) {
        long need = 0, room = 0;
        for (std::size_t c = from; c < ends_.size(); ++c) need += ends_[c].reversed == (rev == 1);
        ++tag;
        bool bounded = true;
        for (std::size_t v = 0; v < m_ && bounded; ++v) {
          const std::vector<int>& arcs = rev == 1 ? h_.entry[v] : h_.exit[v];
          bounded = !arcs.empty();
          if (!bounded) break;
          auto a = static_cast<std::size_t>(rev == 1 ? arcs.front() : arcs.back());
          if (stamp_[a] == tag) continue;
          stamp_[a] = tag;
          room += std::max(cap_[a] - load_[a], 0);
        }
        if (bounded && room < need) return false;
      }
    for (std::size_t v = 0; v < m_; ++v) {
      for (int dir = 0; dir < 2; ++dir) {  // 0: into v, 1: out of v
        std::size_t need = 0;
        for (std::size_t c = from; c < ends_.size(); ++c) {
          const ChannelEnds& e = ends_[c];
          if (cycle_) {
            ++need;
            continue;
          }
          int skip = (dir == 0) != e.reversed ? e.start : e.end;  // where the ring enters / leaves the host
          if (skip >= 0 && static_cast<std::size_t>(skip) != v) ++need;
        }
        if (need == 0) continue;
        ++tag;
        long room = 0;
        for (std::size_t x = 0; x < m_ && room < static_cast<long>(need); ++x) {
          if (x == v) continue;
          bool ok = dir == 0 ? h_.reachable[x][v] : h_.reachable[v][x];
          if (!ok) continue;
          const auto& arcs = dir == 0 ? h_.route[x][v] : h_.route[v][x];
          if (!fits(arcs)) continue;
          auto a = static_cast<std::size_t>(dir == 0 ? arcs.back() : arcs.front());
          if (stamp_[a] == tag) continue;
          stamp_[a] = tag;
          room += cap_[a] - load_[a];
        }
        if (room < static_cast<long>(need)) return false;
      }
    }
    return true;
  }

  const HostLinks& h_;
  const std::vector<ChannelEnds>& ends_;
  bool cycle_;
  std::size_t m_;
  bool colocated_ = false;                   // some ranks share a vertex: routes without links, no counting bound
  std::vector<std::vector<int>> prefer_[2];  // [reversed][u]: candidates after u, best first
  std::vector<std::vector<int>> into_[2];    // [reversed][v]: the ranks v is a candidate after (sparse hosts)
  std::size_t shortest_ = 0;                 // link directions on the shortest route between two ranks
  std::vector<int> cap_, load_, stamp_;
  std::vector<std::vector<int>> paths_;
  std::vector<std::vector<char>> used_;
  long budget_ = 0;
  bool aborted_ = false;
};

}  // namespace

double max_load(const HostLinks& h, const std::vector<std::vector<int>>& orders, const std::vector<ChannelEnds>& ends, bool cycle) {
  std::vector<int> count(h.arc_gbps.size(), 0);
  auto add = [&](const std::vector<int>& arcs) {
    for (int a : arcs) ++count[static_cast<std::size_t>(a)];
  };
  bool broken = false;
  for (std::size_t c = 0; c < orders.size() && c < ends.size(); ++c) {
    const auto& o = orders[c];
    if (o.empty()) continue;
    add(head(h, ends[c], cycle));
    for (std::size_t i = 0; i + 1 < o.size(); ++i) {
      broken = broken || !step_exists(h, ends[c], o[i], o[i + 1]);
      add(step(h, ends[c], o[i], o[i + 1]));
    }
    if (cycle && o.size() > 1) broken = broken || !step_exists(h, ends[c], o.back(), o.front());
    add(tail(h, ends[c], cycle, o.back()));
  }
  if (broken) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (std::size_t a = 0; a < count.size(); ++a)
    if (count[a] > 0) worst = std::max(worst, count[a] / h.arc_gbps[a]);
  return worst;
}

std::vector<double> levels_below(const HostLinks& h, std::size_t crossings, double limit) {
  std::vector<double> gbps = h.arc_gbps, levels;
  std::sort(gbps.begin(), gbps.end());
  gbps.erase(std::unique(gbps.begin(), gbps.end()), gbps.end());
  for (double b : gbps)
    for (std::size_t k = 1; b > 0 && k <= crossings && static_cast<double>(k) / b < limit * (1 - kRelEps); ++k)
      levels.push_back(static_cast<double>(k) / b);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end(), [](double a, double b) { return std::abs(a - b) <= kRelEps * std::max(a, b); }),
               levels.end());
  return levels;
}

std::vector<std::vector<int>> spread_channels(const HostLinks& h, const std::vector<ChannelEnds>& ends, bool cycle) {
  std::vector<std::vector<int>> best = base_orders(h, ends);
  if (h.size() <= 2 || ends.empty()) return best;
  double limit = max_load(h, best, ends, cycle);

  // Candidate levels: every load a link direction can take below the base's; a link is
  // crossed at most once per step of each order.
  std::vector<double> levels = levels_below(h, ends.size() * (h.size() + 2), limit);

  // A failed search either proved the level infeasible or ran out of steps; depth-first search
  // has heavy tails (an early choice that dooms a late channel is retried under every
  // alternative in between), so a few short restarts in other orders beat one long run.
  long budget = kStepsTotal;
  for (double level : levels) {
    for (unsigned attempt = 0; attempt < kAttempts && budget > 0; ++attempt) {
      long spent = 0;
      std::vector<std::vector<int>> found;
      bool ok = Spread(h, ends, cycle, attempt).solve(level, std::min(budget, kStepsPerAttempt), found, spent);
      if (ok) return found;
      budget -= spent;
      if (spent < kStepsPerAttempt) break;  // searched to the end: no orders at this level
    }
  }
  return best;
}

}  // namespace collkit::plan::algo
