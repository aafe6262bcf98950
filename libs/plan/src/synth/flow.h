#pragma once
// A small directed max-flow network on whole-number capacities for the synthesizer's graphs
// (split.h, trees.h), which are directed and change arc by arc, unlike bounds::FlowNet's fixed
// full-duplex topology. Boost.Graph's push-relabel on a graph kept between queries (per thread,
// per network size): a query sets capacities on it instead of building it again, which cost
// about what one flow does on these graphs of tens of vertices (flow.cpp).

#include <cstdint>
#include <vector>

namespace collkit::plan::synth {

class ArcNetwork {
 public:
  /// A capacity no cut of these graphs reaches.
  static constexpr std::int64_t kInfinite = std::int64_t{1} << 50;

  /// `vertices` vertices 0..vertices-1, plus source() and sink().
  explicit ArcNetwork(std::size_t vertices) : n_(vertices) {}
  std::size_t source() const { return n_; }
  std::size_t sink() const { return n_ + 1; }

  /// Adds an arc u -> v of capacity `cap` (> 0; others are skipped).
  void arc(std::size_t u, std::size_t v, std::int64_t cap) {
    if (cap > 0 && u != v) arcs_.push_back({u, v, cap});
  }
  /// Drops the arcs added since the first `count` (to reuse a base network across queries).
  void truncate(std::size_t count) { arcs_.resize(count); }
  std::size_t size() const { return arcs_.size(); }

  /// The maximum flow from source() to sink().
  std::int64_t max_flow() const;

 private:
  struct Arc {
    std::size_t u, v;
    std::int64_t cap;
  };
  std::size_t n_;
  std::vector<Arc> arcs_;
};

}  // namespace collkit::plan::synth
