// Switch removal by edge splitting (split.h, docs/synth.md).

#include "synth/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "synth/flow.h"

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
  Splitter(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root) : t_(t), k_(k) {
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
      add({l.a, l.b}, u, {l.a, l.b});
      add({l.b, l.a}, u, {l.b, l.a});
    }
    need_ = std::accumulate(roots_.begin(), roots_.end(), std::int64_t{0}) * k;
    need_ = std::min(need_, min_flow());
  }

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
      std::vector<VertexId> ins, outs;
      for (const auto& [key, pieces] : arcs_) {
        if (key.second == w) ins.push_back(key.first);
        if (key.first == w) outs.push_back(key.second);
      }
      if (ins.empty() && outs.empty()) return;
      bool progress = false;
      for (VertexId u : ins) {
        std::int64_t peers = 0;
        for (VertexId x : outs) peers += x != u;
        std::int64_t share = peers > 0 ? (cap(u, w) + peers - 1) / peers : 0;
        for (VertexId x : outs) {
          if ((u == x) != (pass == Pass::Loops)) continue;
          std::int64_t a = std::min(cap(u, w), cap(w, x));
          if (pass == Pass::Even) a = std::min(a, share);
          if (a <= 0) continue;
          std::int64_t g = splittable(u, w, x, a);
          if (g <= 0) continue;
          split(u, w, x, g);
          progress = true;
        }
      }
      if (progress) {
        pass = even_passes < kEvenPasses ? Pass::Even : Pass::Whole;
      } else if (pass != Pass::Loops) {
        pass = pass == Pass::Even ? Pass::Whole : Pass::Loops;
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

  /// Whether every rank vertex still receives need_ with all a units of u -> w -> x split off:
  /// one max flow per rank vertex, half of what finding the most that can go costs, and in the
  /// even pass the whole share usually goes.
  bool all_goes(VertexId u, VertexId w, VertexId x, std::int64_t a) {
    ArcNetwork net = base(u, w, x, a);
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
    while (g > 0) {
      Piece& a = in.front();
      Piece& b = out.front();
      std::int64_t m = std::min({g, a.units, b.units});
      std::vector<VertexId> path = a.path;
      path.insert(path.end(), b.path.begin() + 1, b.path.end());
      joined.emplace_back(m, std::move(path));
      a.units -= m;
      b.units -= m;
      g -= m;
      if (a.units == 0) in.erase(in.begin());
      if (b.units == 0) out.erase(out.begin());
    }
    if (in.empty()) arcs_.erase({u, w});
    if (out.empty()) arcs_.erase({w, x});
    if (u == x) return;  // a loop carries nothing
    for (auto& [m, path] : joined) add({u, x}, m, std::move(path));
  }

  const topo::Topology& t_;
  std::int64_t k_;
  std::int64_t need_ = 0;
  int flows_ = 0;
  std::vector<std::int64_t> ranks_, roots_;
  std::vector<VertexId> targets_;
  std::map<std::pair<VertexId, VertexId>, std::vector<Piece>> arcs_;
};

}  // namespace

SplitGraph split_switches(const topo::Topology& t, int p, std::int64_t k, double unit_gbps, int root) {
  Splitter s(t, p, k, unit_gbps, root);
  for (VertexId w = 0; w < t.num_vertices(); ++w)
    if (s.ranks()[w] == 0) s.split_off(w);
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
