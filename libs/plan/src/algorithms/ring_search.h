#pragma once
// Spreading ring channels over one host's links (ring_order.cpp supplies the links, this file
// only searches): every channel of a ring takes its own Hamiltonian cycle (one host) or path
// (several hosts) through the host's ranks, chosen so that the busiest link direction carries
// as little as possible, as NCCL's ring search spreads channels over xGMI and NVLink meshes.

#include <cstddef>
#include <vector>

namespace collkit::plan::algo {

/// One host's links as the search sees them; ranks are local indices 0..m-1 and link
/// directions are dense indices into arc_gbps.
struct HostLinks {
  /// Bandwidth of each link direction, GB/s.
  std::vector<double> arc_gbps;
  /// route[i][j]: the link directions the route from rank i to rank j crosses (empty for
  /// co-located ranks); reachable[i][j] false where no route exists.
  std::vector<std::vector<std::vector<int>>> route;
  std::vector<std::vector<char>> reachable;
  /// Route bottleneck and hop count, for the preference among equally loaded choices.
  std::vector<std::vector<double>> width;
  std::vector<std::vector<std::size_t>> hops;
  /// Several hosts only: the link directions a ring crosses leaving the host at rank i (to its
  /// NIC and out of its port) and entering it there; empty lists for one host.
  std::vector<std::vector<int>> exit, entry;
  /// The widest cycle (host_cycles): ties go to the next rank along it, so that a host on which
  /// every order loads the links alike (an NVSwitch) keeps it.
  std::vector<int> base;
  /// Sparse links (hosts over a torus, a few neighbours each): among equally wide and short
  /// steps, try the least loaded first, then the one after which the fewest ranks can follow
  /// (Warnsdorff's rule), and prune by reachability at any size. Dense hosts (GPU meshes) keep
  /// the widest-first order and prune only small ones.
  bool sparse = false;

  std::size_t size() const { return route.size(); }
};

/// Where one channel's order begins and ends inside the host.
struct ChannelEnds {
  int start = 0;          ///< local rank the order begins at
  int end = -1;           ///< local rank it must end at; -1: any
  bool reversed = false;  ///< the ring runs this order backwards (odd channels of a bidirectional ring)
};

/// For each channel, an order of the local ranks from its start (to its end) such that the most
/// loaded link direction, load = ring hops whose route crosses it / its bandwidth, is as light
/// as the search finds (exact for small hosts, bounded beyond), then the widest and fewest-hop
/// routes first. `cycle`: one host, each ring closes from its last rank back to its start; else
/// each ring enters the host at the first rank of its order and leaves at the last (the other
/// way round when reversed). Where no order beats the base cycle walked from each start (every
/// NVSwitch host), that is the answer.
std::vector<std::vector<int>> spread_channels(const HostLinks& h, const std::vector<ChannelEnds>& ends, bool cycle);

/// The loads below `limit` that a link direction can take, ascending: k crossings of a link of
/// b GB/s are k/b, for k up to `crossings`.
std::vector<double> levels_below(const HostLinks& h, std::size_t crossings, double limit);

/// The load of the busiest link direction under the given orders (hops per GB/s).
double max_load(const HostLinks& h, const std::vector<std::vector<int>>& orders, const std::vector<ChannelEnds>& ends, bool cycle);

}  // namespace collkit::plan::algo
