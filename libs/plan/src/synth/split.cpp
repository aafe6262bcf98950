// Switch removal by edge splitting (split.h, docs/synth.md).

#include "synth/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "synth/flow.h"
#include "synth/routed.h"

namespace collkit::plan::synth {

using topo::VertexId;

std::int64_t link_units(double bw_gbps, double unit_gbps) {
  if (unit_gbps <= 0) return 0;
  return static_cast<std::int64_t>(std::floor(bw_gbps / unit_gbps * (1 + 1e-9)));
}

namespace {

/// Units of one arc that stand for one walk.
struct Piece {
  std::int64_t units = 0;
  std::vector<VertexId> path;
};

/// The directed graph being split: per ordered vertex pair, its pieces.
class Splitter {
 public:
  Splitter(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root, const RouteWalks* routes)
      : t_(t), k_(k), routes_(routes) {
    std::vector<double> w = bounds::rank_weights(t, p);
    ranks_.resize(w.size());
    for (std::size_t v = 0; v < w.size(); ++v) {
      ranks_[v] = std::llround(w[v]);
      if (ranks_[v] > 0) targets_.push_back(static_cast<VertexId>(v));
    }
    roots_ = ranks_;
    if (root >= 0) {
      roots_.assign(w.size(), 0);
      roots_[t.rank_vertex(static_cast<topo::Rank>(root))] = 1;
    }
    for (const topo::Link& l : t.links()) {
      std::int64_t u = link_units(l.bw_gbps, unit_gbps);
      if (u <= 0) continue;
      // Keeping to routes, a link direction no route takes can carry nothing.
      if (!routes_ || routes_->contains({l.a, l.b})) add({l.a, l.b}, u, {l.a, l.b});
      if (!routes_ || routes_->contains({l.b, l.a})) add({l.b, l.a}, u, {l.b, l.a});
    }
    want_ = std::accumulate(roots_.begin(), roots_.end(), std::int64_t{0}) * k;
    need_ = std::min(want_, min_flow());
  }

  /// What every rank vertex should receive (p k, or k from one root) and what it keeps.
  std::int64_t want() const { return want_; }
  std::int64_t need() const { return need_; }

  int flows() const { return flows_; }
  const std::vector<std::int64_t>& ranks() const { return ranks_; }
  const std::vector<std::int64_t>& roots() const { return roots_; }
  const std::map<std::pair<VertexId, VertexId>, std::vector<Piece>>& arcs() const { return arcs_; }

  /// Splits every arc at w off. First each u -> w is spread evenly over the w -> t (at most
  /// its share per pass): the split graph then has arcs to many peers, which lets trees be
  /// shallow (as a switch is: one hop from every GPU to every other); then whatever still goes,
  /// whole; loops u -> w -> u last.
  void split_off(VertexId w) {
    enum class Pass { Even, Whole, Loops };
    // Even passes split at most a share per pair, so a graph of many units where little goes
    // per pair could take as many passes as units: a few, then whole pairs.
    constexpr int kEvenPasses = 4;
    int even_passes = 0;
    for (Pass pass = Pass::Even;;) {
      if (pass == Pass::Even) ++even_passes;
      if (routes_) prune(w);
      std::vector<VertexId> ins, outs;
      for (const auto& [key, pieces] : arcs_) {
        if (key.second == w) ins.push_back(key.first);
        if (key.first == w) outs.push_back(key.second);
      }
      if (ins.empty() && outs.empty()) return;
      bool progress = false;
      // Keeping to routes, pairs that end an arc at a rank vertex on both sides go first, then
      // on one side, then neither (a walk through w between two other switches): the splitting
      // theorem does not hold for these restricted joins, and joining what completes a route
      // first leaves the switch's units to routes that end there rather than to transit that
      // may find no way on.
      std::vector<std::pair<VertexId, VertexId>> pairs;
      for (VertexId u : ins)
        for (VertexId x : outs) pairs.emplace_back(u, x);
      if (routes_) std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& a, const auto& b) { return level(a) < level(b); });
      std::map<VertexId, std::int64_t> share;
      for (VertexId u : ins) {
        std::int64_t peers = 0;
        for (VertexId x : outs) peers += x != u && (!routes_ || joinable(u, w, x) > 0);
        share[u] = peers > 0 ? (cap(u, w) + peers - 1) / peers : 0;
      }
      for (const auto& [u, x] : pairs) {
        if ((u == x) != (pass == Pass::Loops)) continue;
        std::int64_t a = joinable(u, w, x);
        if (pass == Pass::Even) a = std::min(a, share[u]);
        if (a <= 0) continue;
        std::int64_t g = splittable(u, w, x, a);
        if (g <= 0) continue;
        split(u, w, x, g);
        progress = true;
      }
      if (progress) {
        pass = even_passes < kEvenPasses ? Pass::Even : Pass::Whole;
      } else if (pass == Pass::Even) {
        pass = Pass::Whole;
      } else if (routes_) {
        // Keeping to routes, what is left at w joins into no route that keeps every rank
        // vertex's flow (the splitting theorem is about any walks, not these): it is dropped, and
        // the flow kept from here on is what is left.
        drop(w);
        return;
      } else if (pass != Pass::Loops) {
        pass = Pass::Loops;
      } else {
        throw Error(fmt::format("synth: cannot split off vertex \"{}\" ({} arcs left at it)", t_.vertex(w).id, ins.size() + outs.size()));
      }
    }
  }

  /// The least max flow to a rank vertex (the source feeding each its roots k).
  std::int64_t min_flow() {
    std::int64_t least = ArcNetwork::kInfinite;
    ArcNetwork net = base();
    std::size_t n = net.size();
    for (VertexId v : targets_) {
      net.truncate(n);
      net.arc(v, net.sink(), ArcNetwork::kInfinite);
      least = std::min(least, net.max_flow());
      ++flows_;
    }
    return least;
  }

 private:
  void add(std::pair<VertexId, VertexId> key, std::int64_t units, std::vector<VertexId> path) {
    std::vector<Piece>& pieces = arcs_[key];
    for (Piece& q : pieces)
      if (q.path == path) {
        q.units += units;
        return;
      }
    pieces.push_back({units, std::move(path)});
  }

  /// 0: u and x both hold ranks, 1: one does, 2: neither.
  int level(const std::pair<VertexId, VertexId>& ux) const { return (ranks_[ux.first] == 0) + (ranks_[ux.second] == 0); }

  /// Whether a piece's walk into w and one out of it join into (part of) a route; any do
  /// when not keeping to routes.
  bool compatible(const Piece& in, const Piece& out) const { return !routes_ || routes_->joins(in.path, out.path); }

  /// The pieces of u -> w and w -> x to join, greedily in order, at most `limit` units: (in
  /// piece, out piece, units).
  std::vector<std::tuple<std::size_t, std::size_t, std::int64_t>> pairing(VertexId u, VertexId w, VertexId x, std::int64_t limit) const {
    std::vector<std::tuple<std::size_t, std::size_t, std::int64_t>> out;
    auto in_it = arcs_.find({u, w});
    auto out_it = arcs_.find({w, x});
    if (in_it == arcs_.end() || out_it == arcs_.end()) return out;
    const std::vector<Piece>& ins = in_it->second;
    const std::vector<Piece>& outs = out_it->second;
    std::vector<std::int64_t> left(outs.size());
    for (std::size_t j = 0; j < outs.size(); ++j) left[j] = outs[j].units;
    for (std::size_t i = 0; i < ins.size() && limit > 0; ++i) {
      std::int64_t have = ins[i].units;
      for (std::size_t j = 0; j < outs.size() && have > 0 && limit > 0; ++j) {
        if (left[j] == 0 || !compatible(ins[i], outs[j])) continue;
        std::int64_t m = std::min({have, left[j], limit});
        out.emplace_back(i, j, m);
        have -= m;
        left[j] -= m;
        limit -= m;
      }
    }
    return out;
  }

  /// Units of u -> w -> x that can be joined: min(cap(u, w), cap(w, x)), or keeping to routes
  /// those of pieces whose walks join into a route.
  std::int64_t joinable(VertexId u, VertexId w, VertexId x) const {
    if (!routes_) return std::min(cap(u, w), cap(w, x));
    std::int64_t a = 0;
    for (const auto& [i, j, m] : pairing(u, w, x, ArcNetwork::kInfinite)) a += m;
    return a;
  }

  /// Keeping to routes: drops the pieces at w that join no piece on its other side (they can
  /// never be part of a route), and lowers the flow kept to what is left.
  void prune(VertexId w) {
    std::vector<const Piece*> ins, outs;
    for (const auto& [key, pieces] : arcs_)
      for (const Piece& q : pieces) {
        if (key.second == w) ins.push_back(&q);
        if (key.first == w) outs.push_back(&q);
      }
    std::vector<std::pair<std::pair<VertexId, VertexId>, std::vector<VertexId>>> gone;
    for (const auto& [key, pieces] : arcs_)
      for (const Piece& q : pieces) {
        bool at_in = key.second == w, at_out = key.first == w;
        if (!at_in && !at_out) continue;
        bool any = false;
        for (const Piece* o : at_in ? outs : ins) any = any || (at_in ? compatible(q, *o) : compatible(*o, q));
        if (!any) gone.push_back({key, q.path});
      }
    for (const auto& item : gone) {  // not a structured binding: clang 14 cannot capture one in a lambda
      const auto& key = item.first;
      const std::vector<VertexId>& walk = item.second;
      std::vector<Piece>& pieces = arcs_[key];
      pieces.erase(std::remove_if(pieces.begin(), pieces.end(), [&walk](const Piece& q) { return q.path == walk; }), pieces.end());
      if (pieces.empty()) arcs_.erase(key);
    }
    if (!gone.empty()) need_ = std::min(need_, min_flow());
  }

  /// Drops every arc at w, lowering the flow kept to what is left.
  void drop(VertexId w) {
    bool any = false;
    for (auto it = arcs_.begin(); it != arcs_.end();) {
      if (it->first.first == w || it->first.second == w) {
        it = arcs_.erase(it);
        any = true;
      } else {
        ++it;
      }
    }
    if (any) need_ = std::min(need_, min_flow());
  }

  std::int64_t cap(VertexId u, VertexId v) const {
    auto it = arcs_.find({u, v});
    if (it == arcs_.end()) return 0;
    std::int64_t c = 0;
    for (const Piece& q : it->second) c += q.units;
    return c;
  }

  /// The network of the arcs as they are, or with g units of u -> w -> x split off.
  ArcNetwork base(VertexId u = 0, VertexId w = 0, VertexId x = 0, std::int64_t g = 0) const {
    ArcNetwork net(t_.num_vertices());
    for (const auto& [key, pieces] : arcs_) {
      std::int64_t c = 0;
      for (const Piece& q : pieces) c += q.units;
      if (g > 0 && (key == std::pair{u, w} || key == std::pair{w, x})) c -= g;
      net.arc(key.first, key.second, c);
    }
    if (g > 0) net.arc(u, x, g);  // a loop (u == x) is dropped
    for (VertexId v : targets_) net.arc(net.source(), v, roots_[v] * k_);
    return net;
  }

  /// Keeping to routes, w is no free switch: a unit into it goes on only along a piece out of it
  /// that it joins into a route. The network has w as that: a vertex per piece at w (in: from its
  /// tail, out: to its head, each its units) and an arc from each in piece to each out piece it
  /// joins; with the pieces of `pairs` (pairing() of u -> w -> x) joined, g units in all.
  ArcNetwork routed_net(VertexId u, VertexId w, VertexId x, const std::vector<std::tuple<std::size_t, std::size_t, std::int64_t>>& pairs,
                        std::int64_t g) const {
    std::vector<std::pair<VertexId, const Piece*>> ins, outs;
    std::vector<std::int64_t> in_units, out_units;
    for (const auto& [key, pieces] : arcs_)
      for (const Piece& q : pieces) {
        if (key.second == w) ins.emplace_back(key.first, &q);
        if (key.first == w) outs.emplace_back(key.second, &q);
      }
    std::size_t n = t_.num_vertices();
    ArcNetwork net(n + ins.size() + outs.size());
    for (const auto& [key, pieces] : arcs_) {
      if (key.first == w || key.second == w) continue;
      std::int64_t c = 0;
      for (const Piece& q : pieces) c += q.units;
      net.arc(key.first, key.second, c);
    }
    // The pieces pairs take units from: pairing()'s indices are within arcs_[{u, w}] and [{w, x}].
    auto taken = [&](const Piece* q, bool in) {
      std::int64_t m = 0;
      auto it = arcs_.find(in ? std::pair{u, w} : std::pair{w, x});
      if (it == arcs_.end()) return m;
      for (const auto& [i, j, units] : pairs)
        if (&it->second[in ? i : j] == q) m += units;
      return m;
    };
    for (std::size_t i = 0; i < ins.size(); ++i) net.arc(ins[i].first, n + i, ins[i].second->units - taken(ins[i].second, true));
    for (std::size_t j = 0; j < outs.size(); ++j)
      net.arc(n + ins.size() + j, outs[j].first, outs[j].second->units - taken(outs[j].second, false));
    for (std::size_t i = 0; i < ins.size(); ++i)
      for (std::size_t j = 0; j < outs.size(); ++j)
        if (ins[i].first != outs[j].first && compatible(*ins[i].second, *outs[j].second))
          net.arc(n + i, n + ins.size() + j, ArcNetwork::kInfinite);
    if (g > 0) net.arc(u, x, g);  // a loop (u == x) is dropped
    for (VertexId v : targets_) net.arc(net.source(), v, roots_[v] * k_);
    return net;
  }

  /// Keeping to routes: the most of u -> w -> x (at most a) that keeps every rank vertex's flow
  /// at need_ with w's joins as routed_net has them; all of it, else by bisection (the cut
  /// argument of splittable() is about a free switch).
  std::int64_t splittable_routed(VertexId u, VertexId w, VertexId x, std::int64_t a) {
    auto goes = [&](std::int64_t g) {
      auto pairs = pairing(u, w, x, g);
      std::int64_t joined = 0;
      for (const auto& [i, j, m] : pairs) joined += m;
      ArcNetwork net = routed_net(u, w, x, pairs, u == x ? 0 : joined);
      return feeds_every_target(net);
    };
    if (goes(a)) return a;
    std::int64_t ok = 0, fails = a;
    for (int step = 0; step < kBisections && fails - ok > 1; ++step) {
      std::int64_t mid = ok + (fails - ok) / 2;
      (goes(mid) ? ok : fails) = mid;
    }
    return ok;
  }

  /// Whether every rank vertex still receives need_ with all a units of u -> w -> x split off:
  /// one max flow per rank vertex, half of what finding the most that can go costs, and in the
  /// even pass the whole share usually goes.
  bool all_goes(VertexId u, VertexId w, VertexId x, std::int64_t a) {
    ArcNetwork net = base(u, w, x, a);
    return feeds_every_target(net);
  }

  /// Whether every rank vertex receives need_ from the source of `net`: one max flow each, the
  /// vertex joined to the sink on a copy truncated back to `net` as given.
  bool feeds_every_target(ArcNetwork& net) {
    std::size_t n = net.size();
    for (VertexId v : targets_) {
      net.truncate(n);
      net.arc(v, net.sink(), ArcNetwork::kInfinite);
      ++flows_;
      if (net.max_flow() < need_) return false;
    }
    return true;
  }

  /// The most of u -> w -> x (at most a) that can be split off keeping every rank vertex's flow
  /// at need_. Splitting g units lowers a cut (X the source side) by g exactly when w is in X
  /// and u, x are not, or u, x are in X and w is not; other cuts keep their value. So g may be
  /// the least such cut minus need_, over the rank vertices on the sink side.
  std::int64_t splittable(VertexId u, VertexId w, VertexId x, std::int64_t a) {
    if (routes_) return splittable_routed(u, w, x, a);
    if (all_goes(u, w, x, a)) return a;
    ArcNetwork net = base();
    std::size_t n = net.size();
    constexpr std::int64_t inf = ArcNetwork::kInfinite;
    std::int64_t g = a;
    for (VertexId v : targets_) {
      for (int side = 0; side < 2 && g > 0; ++side) {
        net.truncate(n);
        net.arc(v, net.sink(), inf);
        if (side == 0) {
          net.arc(net.source(), w, inf);
          net.arc(u, net.sink(), inf);
          net.arc(x, net.sink(), inf);
        } else {
          net.arc(net.source(), u, inf);
          net.arc(net.source(), x, inf);
          net.arc(w, net.sink(), inf);
        }
        std::int64_t f = net.max_flow();
        ++flows_;
        if (f < inf) g = std::min(g, f - need_);
      }
      if (g <= 0) return 0;
    }
    return g;
  }

  /// Replaces g units of u -> w and of w -> x by g units of u -> x, joining their walks.
  void split(VertexId u, VertexId w, VertexId x, std::int64_t g) {
    std::vector<Piece>& in = arcs_[{u, w}];
    std::vector<Piece>& out = arcs_[{w, x}];
    std::vector<std::pair<std::int64_t, std::vector<VertexId>>> joined;
    for (const auto& [i, j, m] : pairing(u, w, x, g)) {
      std::vector<VertexId> path = in[i].path;
      path.insert(path.end(), out[j].path.begin() + 1, out[j].path.end());
      joined.emplace_back(m, std::move(path));
      in[i].units -= m;
      out[j].units -= m;
    }
    auto empty = [](const Piece& q) { return q.units == 0; };
    in.erase(std::remove_if(in.begin(), in.end(), empty), in.end());
    out.erase(std::remove_if(out.begin(), out.end(), empty), out.end());
    if (in.empty()) arcs_.erase({u, w});
    if (out.empty()) arcs_.erase({w, x});
    if (u == x) return;  // a loop carries nothing
    for (auto& [m, path] : joined) add({u, x}, m, std::move(path));
  }

  /// splittable_routed's bisection steps.
  static constexpr int kBisections = 8;

  const topo::Topology& t_;
  std::int64_t k_;
  const RouteWalks* routes_ = nullptr;
  std::int64_t want_ = 0, need_ = 0;
  int flows_ = 0;
  std::vector<std::int64_t> ranks_, roots_;
  std::vector<VertexId> targets_;
  std::map<std::pair<VertexId, VertexId>, std::vector<Piece>> arcs_;
};

}  // namespace

namespace {

/// The vertices without ranks in the order they are split off: by id, or keeping to routes
/// nearest a rank vertex first (hops, then id), so that the walks grow out from the ranks and a
/// switch's arcs reach rank vertices when it is split (Splitter::level).
std::vector<VertexId> split_order(const topo::Topology& t, const std::vector<std::int64_t>& ranks, bool nearest_first) {
  std::vector<VertexId> order;
  for (VertexId w = 0; w < t.num_vertices(); ++w)
    if (ranks[w] == 0) order.push_back(w);
  if (!nearest_first) return order;
  std::vector<int> hops(t.num_vertices(), -1);
  std::vector<VertexId> queue;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (ranks[v] > 0) {
      hops[v] = 0;
      queue.push_back(v);
    }
  for (std::size_t i = 0; i < queue.size(); ++i)
    for (const topo::Adjacent& adj : t.adjacent(queue[i])) {
      VertexId o = adj.peer;
      if (hops[o] < 0) {
        hops[o] = hops[queue[i]] + 1;
        queue.push_back(o);
      }
    }
  std::stable_sort(order.begin(), order.end(),
                   [&](VertexId a, VertexId b) { return static_cast<unsigned>(hops[a]) < static_cast<unsigned>(hops[b]); });
  return order;
}

SplitGraph split_with(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root, const RouteWalks* routes,
                      std::int64_t* kept) {
  Splitter s(t, p, k, unit_gbps, root, routes);
  // Keeping to routes, a unit too large for them shows before any splitting: the caller lowers it.
  if (!(routes && s.need() < s.want()))
    for (VertexId w : split_order(t, s.ranks(), routes != nullptr)) s.split_off(w);
  if (kept) *kept = s.need();
  SplitGraph g;
  g.trees = k;
  g.unit_gbps = unit_gbps;
  g.flows = s.flows();
  std::vector<std::size_t> index(t.num_vertices(), 0);
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (s.ranks()[v] > 0) {
      index[v] = g.nodes.size();
      g.nodes.push_back(v);
      g.ranks.push_back(s.ranks()[v]);
      g.roots.push_back(s.roots()[v]);
    }
  for (const auto& [key, pieces] : s.arcs())
    for (const Piece& q : pieces) g.arcs.push_back({index[key.first], index[key.second], q.units, q.path});
  return g;
}

}  // namespace

SplitGraph split_switches(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root) {
  return split_with(t, p, k, unit_gbps, root, nullptr, nullptr);
}

SplitGraph split_routed(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root, bool host_paths) {
  RouteWalks routes(t, p, host_paths);
  std::int64_t want = (root >= 0 ? 1 : p) * k;
  int flows = 0, attempts = 0;
  auto attempt = [&](double unit, std::int64_t& kept) {
    SplitGraph g = split_with(t, p, k, unit, root, &routes, &kept);
    flows += g.flows;
    ++attempts;
    return g;
  };
  SplitGraph best;
  double too_big = 0;  // the smallest unit found not to fit
  for (int i = 0; i < kRoutedAttempts; ++i) {
    std::int64_t kept = 0;
    SplitGraph g = attempt(unit_gbps, kept);
    if (kept >= want) {
      best = std::move(g);
      break;
    }
    too_big = unit_gbps;
    // Links hold floor(bw / unit) units, so a unit smaller by kept / want gives every link at
    // least want / kept times the units (about): the flow kept grows to want, or near it. With
    // nothing kept (one tree from a root: a rank vertex cut off), half the unit.
    unit_gbps *= (kept > 0 ? static_cast<double>(kept) / static_cast<double>(want) : 0.5) * (1 - 1e-9);
  }
  if (best.nodes.empty())
    throw Error(fmt::format("synth: no {} trees {} fit the routes between the ranks", k, root >= 0 ? "from the root" : "per rank"));
  // That step down may overshoot (what is dropped is not proportional to the unit): bisect
  // between the unit that fitted and the one that did not.
  for (int i = 0; i < kRoutedRefinements && too_big > 0; ++i) {
    double mid = (best.unit_gbps + too_big) / 2;
    std::int64_t kept = 0;
    SplitGraph g = attempt(mid, kept);
    if (kept >= want) {
      best = std::move(g);
    } else {
      too_big = mid;
    }
  }
  best.flows = flows;
  best.attempts = attempts;
  return best;
}

std::int64_t min_rooted_flow(const SplitGraph& g) {
  ArcNetwork net(g.nodes.size());
  for (const SplitGraph::Arc& a : g.arcs) net.arc(a.from, a.to, a.units);
  for (std::size_t v = 0; v < g.nodes.size(); ++v) net.arc(net.source(), v, g.roots[v] * g.trees);
  std::size_t n = net.size();
  std::int64_t least = ArcNetwork::kInfinite;
  for (std::size_t v = 0; v < g.nodes.size(); ++v) {
    net.truncate(n);
    net.arc(v, net.sink(), ArcNetwork::kInfinite);
    least = std::min(least, net.max_flow());
  }
  return least;
}

}  // namespace collkit::plan::synth
