#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "algorithms/common.h"
#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/synth.h"
#include "plan/plan_testing.h"
#include "plan/sim_topologies.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using collkit::InputError;

namespace {

// ForestColl's ratio max |S n ranks| / B+(S) by trying every vertex set (small graphs only).
double brute_force_ratio(const collkit::topo::Topology& t, int p) {
  std::size_t n = t.num_vertices();
  std::vector<int> w(n, 0);
  for (int r = 0; r < p; ++r) ++w[t.rank_vertex(static_cast<collkit::topo::Rank>(r))];
  double best = 0;
  for (std::uint32_t mask = 1; mask < (1u << n); ++mask) {
    int ranks = 0;
    for (std::size_t v = 0; v < n; ++v)
      if (mask >> v & 1u) ranks += w[v];
    if (ranks == 0 || ranks == p) continue;
    double out = 0;
    for (const auto& l : t.links())
      if ((mask >> l.a & 1u) != (mask >> l.b & 1u)) out += l.bw_gbps;
    best = std::max(best, ranks / out);
  }
  return best;
}

}  // namespace

TEST_CASE("bounds: on one switch ForestColl's bound is (p-1)/p n/B, AllReduce twice that") {
  for (int p : {2, 3, 5, 8}) {
    CAPTURE(p);
    auto t = uniform(p, 100, 0.5);
    std::uint64_t n = static_cast<std::uint64_t>(p) * 1000000;
    double expected = (p - 1.0) / p * static_cast<double>(n) / 100e3;
    CHECK(lower_bound({Collective::AllGather, n, p, 0}, t).bandwidth_us == doctest::Approx(expected));
    CHECK(lower_bound({Collective::ReduceScatter, n, p, 0}, t).bandwidth_us == doctest::Approx(expected));
    CHECK(lower_bound({Collective::AllReduce, n, p, 0}, t).bandwidth_us == doctest::Approx(2 * expected));
  }
  Bound b = lower_bound({Collective::AllGather, 8000000, 8, 0}, uniform(8, 100, 0.5));
  CHECK(b.witness == "S = all vertices but {g0}: 7 of 8 ranks inside, 100 GB/s leaves S; 7 shards of 1000000 bytes must leave S");
  CHECK(b.latency_us == doctest::Approx(1.0));  // the farthest two ranks: a 2-hop route
  CHECK(b.time_us() == doctest::Approx(70));
  // On identical ranks one-way gossip over the GPUs is Patarasuk and Yuan's 2 (p-1)/p n/B, the
  // RS+AG figure too.
  Bound ar = lower_bound({Collective::AllReduce, 8000000, 8, 0}, uniform(8, 100, 0.5));
  CHECK(ar.rs_ag_us == doctest::Approx(ar.bandwidth_us));
  CHECK(ar.witness ==
        "gossip among 8 rank vertices: each of the 8000000 bytes crosses between them >= 2 x 7 times, over 800 GB/s leaving them");
}

TEST_CASE("bounds: a thin link between two hosts gives the host cut") {
  auto t = two_hosts(2, 100, 1, 10, 5);
  Bound ag = lower_bound({Collective::AllGather, 4000000, 4, 0}, t);
  // Host b's two shards of 1 MB leave over 10 GB/s: 200 us, far above 3/4 * 4 MB / 100 GB/s = 30.
  CHECK(ag.bandwidth_us == doctest::Approx(200));
  CHECK(ag.witness == "S = host b: 2 of 4 ranks inside, 10 GB/s leaves S; 2 shards of 1000000 bytes must leave S");
  Bound ar = lower_bound({Collective::AllReduce, 4000000, 4, 0}, t);
  CHECK(ar.bandwidth_us == doctest::Approx(400));
  CHECK(ar.rs_ag_us == doctest::Approx(400));
  CHECK(ar.witness == "S = host a: 2 of 4 ranks inside, 10 GB/s leaves S; all 4000000 bytes must leave S and enter it");
  Bound a2a = lower_bound({Collective::AlltoAll, 4000000, 4, 0}, t);
  CHECK(a2a.bandwidth_us == doctest::Approx(2 * 2 * 1e6 / 10e3));
  CHECK(a2a.witness == "ranks of host a vs the rest: 2 x 2 pieces of 1000000 bytes cross 10 GB/s");
  Bound bc = lower_bound({Collective::Broadcast, 1000000, 4, 0}, t);
  CHECK(bc.bandwidth_us == doctest::Approx(100));
  CHECK(bc.witness == "root rank 0 (a/g0) to vertex b/g0: max flow 10 GB/s for 1000000 bytes");
  CHECK(bc.latency_us == doctest::Approx(7));  // the farthest rank from the root: 1 + 5 + 1
  CHECK(lower_bound({Collective::Reduce, 1000000, 4, 3}, t).bandwidth_us == doctest::Approx(100));
}

TEST_CASE("bounds: the ForestColl ratio is exact on an irregular graph") {
  // Three switches in a line with uneven links and GPUs hanging off each: the best cut is neither
  // a single vertex nor its complement.
  collkit::topo::Topology t;
  t.name = "irregular";
  using collkit::topo::VertexKind;
  auto s0 = t.add_vertex(make_vertex("s0", VertexKind::NetSwitch));
  auto s1 = t.add_vertex(make_vertex("s1", VertexKind::NetSwitch));
  auto s2 = t.add_vertex(make_vertex("s2", VertexKind::NetSwitch));
  t.add_link(make_link(s0, s1, 30, 1));
  t.add_link(make_link(s1, s2, 70, 1));
  const double bw[] = {50, 80, 20, 100, 60, 40, 90};
  const collkit::topo::VertexId at[] = {s0, s0, s0, s1, s2, s2, s2};
  for (int i = 0; i < 7; ++i) {
    auto g = t.add_vertex(make_vertex("g" + std::to_string(i), VertexKind::Gpu));
    t.add_link(make_link(g, at[i], bw[i], 0.5));
    t.add_rank(g);
  }
  double exact = brute_force_ratio(t, 7);
  double shard = 1e6;
  Bound b = lower_bound({Collective::AllGather, 7000000, 7, 0}, t);
  CHECK(b.bandwidth_us == doctest::Approx(shard * exact / 1e3).epsilon(1e-9));
  // Only 5 of the ranks: the other two GPUs are plain vertices.
  CHECK(lower_bound({Collective::AllGather, 5000000, 5, 0}, t).bandwidth_us ==
        doctest::Approx(shard * brute_force_ratio(t, 5) / 1e3).epsilon(1e-9));
}

TEST_CASE("bounds: twin hosts are searched once, and the ratio stays exact") {
  // A core switch and four hosts (a switch and two GPUs each): hosts 0 and 1 are twins, so are
  // 2 and 3, whose thin uplinks make "everything but host 2 (or 3)" the tightest cut.
  collkit::topo::Topology t;
  t.name = "twins";
  using collkit::topo::VertexKind;
  auto core = t.add_vertex(make_vertex("core", VertexKind::NetSwitch));
  const double up[] = {100, 100, 40, 40}, gpu[] = {80, 80, 100, 100};
  for (int h = 0; h < 4; ++h) {
    std::string host = "h" + std::to_string(h);
    auto sw = t.add_vertex(make_vertex(host + "/sw", VertexKind::NvSwitch, host));
    t.add_link(make_link(sw, core, up[h], 1));
    for (int g = 0; g < 2; ++g) {
      auto v = t.add_vertex(make_vertex(host + "/g" + std::to_string(g), VertexKind::Gpu, host));
      t.add_link(make_link(v, sw, gpu[h], 0.5));
      t.add_rank(v);
    }
  }
  double exact = brute_force_ratio(t, 8);
  CHECK(exact == doctest::Approx(6.0 / 40));
  Bound b = lower_bound({Collective::AllGather, 8000000, 8, 0}, t);
  CHECK(b.bandwidth_us == doctest::Approx(1e6 * exact / 1e3).epsilon(1e-9));
  CHECK(b.witness.find("S = all vertices but host h2") == 0);
}

TEST_CASE("bounds: AlltoAll's flow bound counts the hops pieces take") {
  // A ring of 6 GPUs, 10 GB/s a link: from each rank its 5 pieces travel 1, 1, 2, 2 and 3 links,
  // 54 link-hops for the 6 sources over 12 link directions of 10 GB/s, so every pair ships at
  // most 120 / 54 = 2.222 GB/s: 1 MB pieces take 450 us, where the best cut tried (a vertex: 5
  // pieces over 20 GB/s) gives 250.
  auto ring = ring_of(6, 10);
  Request req{Collective::AlltoAll, 6000000, 6, 0};
  Bound b = lower_bound(req, ring);
  CHECK(b.bandwidth_us == doctest::Approx(450).epsilon(1e-9));
  CHECK(b.witness ==
        "the maximum concurrent flow over every link (any vertex forwarding): 2.22222 GB/s a pair for pieces of 1000000 bytes");
  // (No plan runs here: collkit's routes never relay through a GPU, so ranks two apart have none.)
  // DGX-1's hybrid cube-mesh: three of a GPU's seven peers are two NVLinks away. The flow bound
  // is the synthesised plan's LP over routes and relays (the routes use no other path here), and
  // the plan is within 1% of it, where the cuts said 2.09 x.
  auto dgx1 = collkit::topo::synth({"dgx1-v100", 1, ""});
  Request big{Collective::AlltoAll, std::uint64_t{1} << 30, 8, 0};
  Bound d = lower_bound(big, dgx1);
  auto plan = generate("synth", big, &dgx1);
  double lp_us = std::stod(plan->info().params.at("lp_us")), us = simulate(*plan, dgx1).time_us;
  MESSAGE("DGX-1 AlltoAll: bound " << d.bandwidth_us << " us, LP over routes " << lp_us << " us, plan " << us << " us");
  CHECK(d.witness.rfind("the maximum concurrent flow over every link", 0) == 0);
  // Model quantities, no clock read: the bound (an LP over every link) cannot exceed the LP over
  // a subset of the paths (the routes and one relay), and the simulated plan cannot beat it.
  CHECK(d.bandwidth_us <= lp_us * (1 + 1e-6));
  CHECK(d.bandwidth_us >= 2 * 5668.0 * 0.99);
  CHECK(us >= d.bandwidth_us * (1 - 1e-9));
  CHECK(us <= d.bandwidth_us * 1.01);
}

TEST_CASE("bounds: oversubscribing a fat-tree raises the bound") {
  auto full = fat_tree(4, 2, 2, 100, 1), half = fat_tree(4, 2, 2, 100, 2), quarter = fat_tree(4, 2, 2, 100, 4);
  Request a2a{Collective::AlltoAll, 8000000, 8, 0};
  // 1:1: each GPU injects 7 pieces of 1 MB over 100 GB/s. 2:1: a leaf's 2 x 6 pieces over 100 GB/s.
  CHECK(lower_bound(a2a, full).bandwidth_us == doctest::Approx(70));
  CHECK(lower_bound(a2a, half).bandwidth_us == doctest::Approx(120));
  CHECK(lower_bound(a2a, half).witness == "ranks under switch leaf0 vs the rest: 2 x 6 pieces of 1000000 bytes cross 100 GB/s");
  // AllGather is bound by each GPU's own link until the uplinks are thinner still (4:1).
  Request ag{Collective::AllGather, 8000000, 8, 0};
  CHECK(lower_bound(ag, full).bandwidth_us == doctest::Approx(70));
  CHECK(lower_bound(ag, half).bandwidth_us == doctest::Approx(70));
  CHECK(lower_bound(ag, quarter).bandwidth_us == doctest::Approx(120));
}

TEST_CASE("bounds: the ring meets the bound on one switch, gap_percent") {
  auto t = uniform(8, 100, 0);
  Request req{Collective::AllGather, 8000000, 8, 0};
  auto plan = generate("ring", req, nullptr);
  Bound b = lower_bound(req, t);
  SimResult r = simulate(*plan, t);
  CHECK(r.time_us == doctest::Approx(b.time_us()));
  CHECK(gap_percent(r.time_us, b) == doctest::Approx(0).epsilon(1e-6));
  Bound fixed;
  fixed.bandwidth_us = 100;
  CHECK(gap_percent(150, fixed) == doctest::Approx(50));
  CHECK(gap_percent(150, Bound{}) == 0);
}

TEST_CASE("bounds: one rank, and more ranks than the topology has") {
  auto t = uniform(4, 100, 0.5);
  Bound one = lower_bound({Collective::AllReduce, 1024, 1, 0}, t);
  CHECK(one.time_us() == 0);
  CHECK(one.witness == "one rank: nothing crosses a link");
  CHECK_THROWS_WITH_AS(lower_bound({Collective::AllReduce, 1024, 5, 0}, t),
                       "lower bound: the request has 5 ranks but topology \"uniform\" maps 4", InputError);
}

TEST_CASE("bounds: beyond 512 rank vertices the cut search leaves out one rank per host, and says so") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  auto t = collkit::topo::synth({"dgx-h100", 65, "fat-tree:rails=8"});
  const int p = 520;
  std::uint64_t n = 520ull * 1000000;
  Bound b = lower_bound({Collective::AllGather, n, p, 0}, t);
  // The tightest cut is everything but one host: 512 ranks inside, the host's 8 x 50 GB/s NICs
  // the only way in or out.
  CHECK(b.bandwidth_us == doctest::Approx(1000000.0 * 512 / 400 / 1e3));
  CHECK(b.witness.find("(cuts searched leaving out one rank per host: valid, exact on identical hosts)") != std::string::npos);
  // AllReduce: gossip among the 65 hosts, 2 x 64 crossings of n over 65 x 400 GB/s, is the RS+AG
  // figure here; the smallest cut (tried per rank vertex and per host only) says so.
  Bound ar = lower_bound({Collective::AllReduce, n, p, 0}, t);
  CHECK(ar.bandwidth_us == doctest::Approx(2.0 * 64 * 520e6 / (65 * 400) / 1e3));
  CHECK(ar.rs_ag_us == doctest::Approx(ar.bandwidth_us));
  CHECK(ar.witness.rfind("gossip among 65 hosts: ", 0) == 0);
}

namespace {

// Four GPUs on a switch (links of 100 GB/s and 1 us), but g3's link is 10 GB/s.
collkit::topo::Topology one_slow_gpu() {
  collkit::topo::Topology t;
  t.name = "one-slow-gpu";
  auto sw = t.add_vertex(make_vertex("sw", collkit::topo::VertexKind::NetSwitch));
  for (int i = 0; i < 4; ++i) {
    auto g = t.add_vertex(make_vertex("g" + std::to_string(i), collkit::topo::VertexKind::Gpu));
    t.add_link(make_link(g, sw, i == 3 ? 10 : 100, 1));
    t.add_rank(g);
  }
  return t;
}

SimOptions model(LinkModel m) {
  SimOptions o;
  o.model = m;
  return o;
}

// min over vertex sets S holding some but not all ranks of B+(S), by trying every set.
double brute_force_min_cut(const collkit::topo::Topology& t, int p) {
  std::size_t n = t.num_vertices();
  std::vector<int> w(n, 0);
  for (int r = 0; r < p; ++r) ++w[t.rank_vertex(static_cast<collkit::topo::Rank>(r))];
  double best = 1e300;
  for (std::uint32_t mask = 1; mask < (1u << n); ++mask) {
    int ranks = 0;
    for (std::size_t v = 0; v < n; ++v)
      if (mask >> v & 1u) ranks += w[v];
    if (ranks == 0 || ranks == p) continue;
    double out = 0;
    for (const auto& l : t.links())
      if ((mask >> l.a & 1u) != (mask >> l.b & 1u)) out += l.bw_gbps;
    best = std::min(best, out);
  }
  return best;
}

}  // namespace

TEST_CASE("bounds: a tree AllReduce with one slow GPU beats twice the ReduceScatter bound, never the AllReduce bound") {
  // Issue #10 item 7: the tree was predicted at 110.7 ms against a "bound" of 161.1 ms (2 x
  // ReduceScatter, which only RS+AG-shaped plans must pay). g3 needs all n bytes of the others'
  // sum and they need all of its: n / 10 GB/s.
  auto t = one_slow_gpu();
  Request req{Collective::AllReduce, std::uint64_t{1} << 30, 4, 0};
  Bound b = lower_bound(req, t);
  CHECK(b.bandwidth_us == doctest::Approx(1073741824.0 / 10e3));
  CHECK(b.witness == "S = {g3}: 1 of 4 ranks inside, 10 GB/s leaves S; all 1073741824 bytes must leave S and enter it");
  CHECK(b.rs_ag_us == doctest::Approx(2 * 3 * 268435456.0 / 10e3));
  auto tree = generate("tree", req, &t);
  int checked = 0;
  for (LinkModel m : {LinkModel::Queue, LinkModel::MaxMin}) {
    double us = simulate(*tree, t, model(m)).time_us;
    CHECK(us >= b.time_us());
    CHECK(us < b.rs_ag_us);
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("bounds: the latency bound holds for a plan that sends to every peer at once") {
  // The single-port argument (ceil(log2 8) = 3 rounds of the 1 us route) does not bind the
  // simulator: direct AllGather sends to all 7 peers at once and is done in one route's time.
  auto t = uniform(8, 100, 0.5);
  Request req{Collective::AllGather, 64, 8, 0};
  Bound b = lower_bound(req, t);
  CHECK(b.latency_us == doctest::Approx(1.0));
  auto direct = generate("direct", req, &t);
  double us = simulate(*direct, t).time_us;
  CHECK(us >= b.time_us());
  CHECK(us < 3.0);
}

TEST_CASE("bounds: relaying through a GPU can beat a route's latency, and the latency bound allows it") {
  // g0 - g1 - g2 joined by wide direct links of 0.1 us; all three also on a switch over 2 us
  // links. GPUs do not forward, so the route g0 -> g2 crosses the switch (4 us), but a Broadcast
  // that relays through g1 arrives after 0.2 us.
  collkit::topo::Topology t;
  t.name = "relay";
  auto sw = t.add_vertex(make_vertex("sw", collkit::topo::VertexKind::NetSwitch));
  std::vector<collkit::topo::VertexId> g;
  for (int i = 0; i < 3; ++i) {
    g.push_back(t.add_vertex(make_vertex("g" + std::to_string(i), collkit::topo::VertexKind::Gpu)));
    t.add_link(make_link(g.back(), sw, 100, 2));
    t.add_rank(g.back());
  }
  t.add_link(make_link(g[0], g[1], 200, 0.1));
  t.add_link(make_link(g[1], g[2], 200, 0.1));
  Request req{Collective::Broadcast, 8, 3, 0};
  using namespace collkit::plan::algo;
  Op forward = send(2, out(0), 1, 0);
  ExplicitPlan relay = hand_plan(
      req, 1, 1, 1, {{copy(in(0), out(0), 1, 0), send(1, in(0), 1, 0)}, {recv(0, out(0), 1, 0), forward}, {recv(1, out(0), 1, 0)}});
  REQUIRE(verify(relay).ok);
  Bound b = lower_bound(req, t);
  CHECK(b.latency_us == doctest::Approx(0.2));
  int checked = 0;
  for (LinkModel m : {LinkModel::Queue, LinkModel::MaxMin}) {
    double us = simulate(relay, t, model(m)).time_us;
    CHECK(us >= b.time_us());
    CHECK(us < 4.0);
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("bounds: ranks sharing a vertex are one group in the AllReduce gossip bound") {
  // Three vertices of two ranks each on a switch: six ranks but three groups, since co-located
  // ranks exchange data without a link (free here, local_bw_gbps being 0).
  collkit::topo::Topology t;
  t.name = "pairs";
  auto sw = t.add_vertex(make_vertex("sw", collkit::topo::VertexKind::NetSwitch));
  for (int i = 0; i < 3; ++i) {
    auto v = t.add_vertex(make_vertex("v" + std::to_string(i), collkit::topo::VertexKind::Gpu));
    t.add_link(make_link(v, sw, 100, 1));
    t.add_rank(v);
    t.add_rank(v);
  }
  Request req{Collective::AllReduce, 6000000, 6, 0};
  Bound b = lower_bound(req, t);
  CHECK(b.bandwidth_us == doctest::Approx(2.0 * 2 * 6e6 / 300 / 1e3));
  CHECK(b.witness ==
        "gossip among 3 rank vertices: each of the 6000000 bytes crosses between them >= 2 x 2 times, over 300 GB/s leaving them");
  int checked = 0;
  double fastest = 1e300;
  for (const Algorithm* a : algorithms()) {
    if (!a->supports(req, &t, nullptr)) continue;
    auto plan = generate(a->name(), req, &t);
    CAPTURE(a->name());
    for (LinkModel m : {LinkModel::Queue, LinkModel::MaxMin}) {
      double us = simulate(*plan, t, model(m)).time_us;
      CHECK(us >= b.time_us());
      fastest = std::min(fastest, us);
      ++checked;
    }
  }
  CHECK(checked >= 8);
  // Six ranks as six groups would claim 2 x 5 crossings of n over 300 GB/s: plans beat that.
  CHECK(fastest < 2.0 * 5 * 6e6 / 300 / 1e3);
}

TEST_CASE("bounds: the smallest cut between two rank vertices is exact") {
  // GPUs behind thin PCIe hops and uneven switch links: the smallest cut is sometimes a GPU with
  // its PCIe switch, sometimes two switches' worth of GPUs.
  using collkit::topo::VertexKind;
  int checked = 0;
  for (double thin : {3.0, 30.0, 300.0}) {
    collkit::topo::Topology t;
    t.name = "thin-hops";
    auto s0 = t.add_vertex(make_vertex("s0", VertexKind::NetSwitch));
    auto s1 = t.add_vertex(make_vertex("s1", VertexKind::NetSwitch));
    t.add_link(make_link(s0, s1, 40, 1));
    for (int i = 0; i < 5; ++i) {
      auto g = t.add_vertex(make_vertex("g" + std::to_string(i), VertexKind::Gpu));
      auto px = t.add_vertex(make_vertex("px" + std::to_string(i), VertexKind::PciSwitch));
      t.add_link(make_link(g, px, 50 + 10 * i, 0.5));
      t.add_link(make_link(px, i < 3 ? s0 : s1, i == 4 ? thin : 100, 0.5));
      t.add_rank(g);
    }
    CAPTURE(thin);
    for (int p : {2, 4, 5}) {
      CAPTURE(p);
      auto cut = collkit::plan::bounds::min_rank_cut(t, p, t.fingerprint());
      CHECK(cut.exact);
      CHECK(cut.out_gbps == doctest::Approx(brute_force_min_cut(t, p)).epsilon(1e-9));
      CHECK(collkit::plan::bounds::leaving(t, cut.in) == doctest::Approx(cut.out_gbps));
      ++checked;
    }
  }
  CHECK(checked == 9);
}

TEST_CASE("bounds: the least flow from a root skips ranks a path shows no lower, and finds what every max flow finds") {
  // Against one max flow per rank, both ways, on presets whose hosts a switch joins (most ranks
  // skipped), DGX-1's cube-mesh (paths of unlike links) and copies with a random fifth of the
  // links at 1/8 to 2 x their bandwidth (the least flow anywhere).
  std::mt19937_64 rng(20261206);
  int checked = 0, skipped = 0;
  struct Preset {
    const char* node;
    int hosts;
  };
  for (Preset preset : {Preset{"dgx-h100", 4}, Preset{"dgx1-v100", 2}, Preset{"mi300x", 2}, Preset{"pcie-8gpu", 2}})
    for (int variant = 0; variant < 3; ++variant) {
      // A named member, not a structured binding: clang 14 cannot capture one (CAPTURE's lambda).
      const char* node = preset.node;
      collkit::topo::Topology t = collkit::topo::synth({node, preset.hosts, ""});
      if (variant > 0) {
        std::uniform_real_distribution<double> u(0, 1), f(0.125, 2);
        for (std::size_t l = 0; l < t.num_links(); ++l)
          if (u(rng) < 0.2) t.mutable_link(static_cast<collkit::topo::LinkId>(l)).bw_gbps *= f(rng);
      }
      std::vector<collkit::topo::VertexId> ranks;
      for (std::size_t r = 0; r < t.num_ranks(); ++r) ranks.push_back(t.rank_vertex(static_cast<collkit::topo::Rank>(r)));
      bounds::FlowNet net(t);
      double inf = bounds::FlowNet::unbounded(bounds::total_bw(t));
      for (bool into : {false, true})
        for (collkit::topo::VertexId root : {ranks.front(), ranks[ranks.size() / 2 + 1]}) {
          CAPTURE(node);
          CAPTURE(variant);
          CAPTURE(into);
          double least = std::numeric_limits<double>::infinity();
          std::vector<double> flow(t.num_vertices(), 0.0);
          for (collkit::topo::VertexId v : ranks) {
            if (v == root) continue;
            std::vector<double> src(t.num_vertices(), 0.0), dst(t.num_vertices(), 0.0);
            src[into ? v : root] = inf;
            dst[into ? root : v] = inf;
            flow[v] = net.run(1.0, src, dst);
            least = std::min(least, flow[v]);
          }
          bounds::LeastFlow got = bounds::least_flow(t, root, ranks, into);
          CHECK(got.gbps == doctest::Approx(least).epsilon(1e-9));
          // The witness has the least flow (of ranks whose flows tie but for rounding, maybe
          // another than the first the loop above finds).
          CHECK(got.at != root);
          CHECK(flow[got.at] == doctest::Approx(least).epsilon(1e-9));
          CHECK(got.flows <= static_cast<int>(ranks.size()) - 1);
          skipped += static_cast<int>(ranks.size()) - 1 - got.flows;
          ++checked;
        }
    }
  CHECK(checked == 48);
  CHECK(skipped > checked * 4);  // most ranks of a host are reached over its switch
}
