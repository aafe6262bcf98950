// Synthesis by symmetry (synth/symmetric.h, docs/synth.md "Scale by symmetry"): host 0's trees
// replicated by a group of host permutations, checked on the routes, with the general solver (or
// a one-line refusal) where the hosts are not alike.

#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include "algorithms/synth_read.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/synth.h"
#include "plan/plan_testing.h"
#include "sim_topologies.h"
#include "synth/rate.h"
#include "synth/routed.h"
#include "synth/symmetric.h"

using namespace collkit::plan;
namespace topo = collkit::topo;

using collkit::plan::testing::axis_holds;

namespace {

auto at(int x) { return static_cast<std::size_t>(x); }

AlgoOptions symmetric() {
  AlgoOptions o;
  o.inter = "symmetric";
  return o;
}

}  // namespace

TEST_CASE("synth symmetric: two and four hosts verify, their trees are translates, near the bound") {
  // Factors: today's simulated time over the bound (docs/synth.md, "Scale by symmetry"), with
  // room; the general solver's at four dgx-h100 hosts is 1.113 / 1.174 / 1.052.
  struct Case {
    const char* node;
    int hosts;
    double factor;
  };
  int checked = 0;
  for (Case c : {Case{"dgx-h100", 2, 1.2}, Case{"dgx-h100", 4, 1.2}, Case{"mi300x", 2, 1.2}}) {
    topo::Topology t = topo::synth({c.node, c.hosts, ""});
    int p = static_cast<int>(t.num_ranks());
    for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
      std::string where = std::string(c.node) + " x" + std::to_string(c.hosts) + " " + std::string(to_string(coll));
      CAPTURE(where);
      Request req{coll, std::uint64_t{1} << 30, p, 0};
      auto plan = generate("synth", req, &t, symmetric());
      REQUIRE(plan->info().params.count("sym_grid"));
      VerifyResult v = verify(*plan);
      CHECK_MESSAGE(v.ok, v.error);
      // Tree of root g(r) is tree r moved by g, for every generator g of the group.
      std::optional<synth::QuotientTrees> q = synth::read_params(plan->info().params, p);
      REQUIRE(q);
      CHECK(q->grid.num_hosts() == c.hosts);
      SynthTrees st = read_synth_trees(plan->info());
      REQUIRE(st.trees.size() == at(p * st.k));
      std::size_t moved = 0;
      bool translates = true;
      for (const synth::Generator& g : synth::generators(*q))
        for (int r = 0; r < p; ++r)
          for (int x = 0; x < p; ++x) {
            int up = st.trees[at(r * st.k)][at(x)];
            translates = translates && st.trees[at(g.rank[at(r)] * st.k)][at(g.rank[at(x)])] == (up < 0 ? -1 : g.rank[at(up)]);
            ++moved;
          }
      CHECK(translates);
      CHECK(moved >= at(p * p));
      double bound = lower_bound(req, t).time_us(), us = simulate(*plan, t).time_us;
      MESSAGE(where << ": simulated " << us << " us, bound " << bound << " us, " << us / bound << " x");
      CHECK(us >= bound * (1 - 1e-9));
      CHECK(us <= bound * c.factor);
      ++checked;
    }
  }
  CHECK(checked == 9);
}

TEST_CASE("synth symmetric: GPUs on one switch take star trees at the optimum, without the general solver") {
  using collkit::plan::testing::ring_of;
  using collkit::plan::testing::two_hosts;
  using collkit::plan::testing::uniform;
  // A star's rate is its narrowest link over p - 1, which is the optimal rate (rate.h) too.
  topo::Topology even = uniform(6, 100, 1);
  REQUIRE(synth::star_rate(synth::routed_links(even, 6), 6));
  CHECK(*synth::star_rate(synth::routed_links(even, 6), 6) == doctest::Approx(20));
  CHECK(synth::optimal_rate(synth::routed_links(even, 6), 6).per_root_gbps == doctest::Approx(20));
  topo::Topology uneven = uniform(5, 100, 1);
  uneven.mutable_link(2).bw_gbps = 40;
  REQUIRE(synth::star_rate(synth::routed_links(uneven, 5), 5));
  CHECK(*synth::star_rate(synth::routed_links(uneven, 5), 5) == doctest::Approx(10));
  CHECK(synth::optimal_rate(synth::routed_links(uneven, 5), 5).per_root_gbps == doctest::Approx(10));
  // Not stars: two switches, a ring, two ranks on one GPU, a second link from a GPU.
  int refused = 0;
  topo::Topology shared = uniform(3, 100, 1);
  shared.add_rank(0);
  topo::Topology doubled = uniform(4, 100, 1);
  topo::Link second = doubled.link(0);
  doubled.add_link(second);
  for (auto [t, p] :
       {std::pair{two_hosts(2, 100, 1, 10, 1), 4}, std::pair{ring_of(4, 10), 4}, std::pair{shared, 4}, std::pair{doubled, 4}}) {
    CHECK_FALSE(synth::star_rate(synth::routed_links(t, p), p));
    ++refused;
  }
  CHECK(refused == 4);
  // Two GB200 NVL72 racks (72 GPUs a host on one NVSwitch): host 0's pattern keeps star trees
  // inside each host, and its AllGather of about 1 MiB is predicted below the classic plans' best (hier,
  // a ring inside each rack: 24.5 us), near the latency bound (2.2 us). Predictions; no clock read.
  topo::Topology nvl = topo::synth({"gb200-nvl72", 2, ""});
  const int p = 144;
  std::optional<synth::HostGrid> grid = synth::host_grid(nvl, p, nullptr);
  REQUIRE(grid);
  REQUIRE(grid->local == 72);
  topo::Topology one = synth::routed_links(synth::host_topology(nvl, *grid), 72);
  REQUIRE(synth::star_rate(one, 72));
  CHECK(*synth::star_rate(one, 72) == doctest::Approx(synth::optimal_rate(one, 72).per_root_gbps));
  Request req{Collective::AllGather, std::uint64_t{144} * 7280, p, 0};  // about 1 MiB, whole floats a rank
  auto plan = generate("synth", req, &nvl);
  std::optional<synth::QuotientTrees> q = synth::read_params(plan->info().params, p);
  REQUIRE(q);
  CHECK(q->rotate_local);
  int stars = 0;
  for (int l = 0; l < 72; ++l) {
    std::vector<int> expect(72, l);
    expect[at(l)] = -1;
    stars += q->intra[at(l)] == expect;
  }
  CHECK(stars == 72);
  double synth_predicted = simulate(*plan, nvl).time_us, hier_predicted = simulate(*generate("hier", req, &nvl), nvl).time_us;
  double bound = lower_bound(req, nvl).time_us();
  MESSAGE("gb200-nvl72 x2 AllGather 1 MiB: synth " << synth_predicted << " us, hier " << hier_predicted << " us, bound " << bound);
  CHECK(synth_predicted >= bound * (1 - 1e-9));
  CHECK(synth_predicted < hier_predicted / 4);
  CHECK(plan_for("auto", req, &nvl)->info().algorithm == "synth");
}

TEST_CASE("synth symmetric: the stated axes hold op for op and fold to the unfolded result") {
  // Two hosts (one group of twins: host and local axes); four hosts on leaves of two (two groups
  // of two: both host axes and the local one).
  std::size_t axes = 0, compared = 0;
  // Named copies, not a structured binding: clang 14 refuses capturing those.
  for (const auto& c : {std::tuple{2, "", "1,2,8,1"}, std::tuple{4, "fat-tree:rails=8,leaf_radix=4", "2,2,8,1"}})
    for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
      int hosts = std::get<0>(c);
      std::string fabric = std::get<1>(c), grid = std::get<2>(c);
      topo::Topology t = topo::synth({"dgx-h100", hosts, fabric});
      int p = static_cast<int>(t.num_ranks());
      std::string where = std::to_string(hosts) + " hosts " + std::string(to_string(coll));
      CAPTURE(where);
      AlgoOptions o = symmetric();
      o.pipeline = hosts == 2 ? 4 : 2;
      Request req{coll, std::uint64_t{3} << 20, p, 0};
      auto plan = generate("synth", req, &t, o);
      CHECK(plan->info().params.at("sym_grid") == grid);
      CHECK(verify(*plan).ok);
      std::vector<SymmetryAxis> stated = plan->symmetries();
      CHECK(stated.size() == (hosts == 2 ? 2u : 3u));
      for (const SymmetryAxis& ax : stated) {
        CHECK(axis_holds(*plan, ax, compared));
        ++axes;
      }
      SimOptions on, off;
      on.model = off.model = LinkModel::MaxMin;
      off.fold_symmetry = false;
      CHECK(simulate(*plan, t, on).time_us == doctest::Approx(simulate(*plan, t, off).time_us).epsilon(1e-9));
    }
  CHECK(axes == 15);
  CHECK(compared > 10000);
}

TEST_CASE("synth symmetric: K intra-host trees a root where one packs short (ForestColl's MI250, four nodes)") {
  // One tree a root packs the MI250 mesh at 8.33 GB/s of the host's 21.43 (k = 3 reaches it); at
  // four nodes each local root's intra-host trees carry four roots' data, so with one the pattern
  // ran at 1.29 x the bound (the NICs' 5.33 GB/s a root), with three 1.016 (64 chunks a tree).
  topo::Topology t = testing::mi250_nodes(4);
  int p = static_cast<int>(t.num_ranks());
  REQUIRE(p == 64);
  Request req{Collective::AllGather, std::uint64_t{1} << 30, p, 0};
  // 64 chunks a tree (the default lays out 1 to 256 and keeps 256 chunks, 1.005 x; one pipeline
  // keeps the test quick under the sanitizers).
  AlgoOptions deep;
  deep.pipeline = 64;
  auto plan = generate("synth", req, &t, deep);
  REQUIRE(plan->info().params.count("sym_grid"));
  CHECK(plan->info().params.at("sym_intra_k") == "3");
  double bound = lower_bound(req, t).time_us(), us = simulate(*plan, t).time_us;
  MESSAGE("K = 3: simulated " << us << " us, bound " << bound << " us, " << us / bound << " x");
  CHECK(us >= bound * (1 - 1e-9));
  CHECK(us <= bound * 1.02);  // 1.016
  // --channels 1 asks for one tree a root: the one intra-host tree, as before.
  AlgoOptions one = deep;
  one.channels = 1;
  auto single = generate("synth", req, &t, one);
  CHECK(single->info().params.count("sym_intra_k") == 0);
  double us1 = simulate(*single, t).time_us;
  MESSAGE("K = 1: " << us1 / bound << " x");
  CHECK(us1 > bound * 1.2);
  // A small plan of the same pattern verifies; a root's three trees differ inside the hosts and
  // are the same everywhere else; tree j of root g(r) is tree j of root r moved by g; it folds.
  AlgoOptions small;
  small.pipeline = 1;
  for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
    CAPTURE(to_string(coll));
    Request r3{coll, std::uint64_t{3} << 20, p, 0};
    auto plan3 = generate("synth", r3, &t, small);
    REQUIRE(plan3->info().params.at("sym_intra_k") == "3");
    VerifyResult v = verify(*plan3);
    CHECK_MESSAGE(v.ok, v.error);
    SimOptions on, off;
    on.model = off.model = LinkModel::MaxMin;
    off.fold_symmetry = false;
    CHECK(simulate(*plan3, t, on).time_us == doctest::Approx(simulate(*plan3, t, off).time_us).epsilon(1e-9));
  }
  SynthTrees st = read_synth_trees(plan->info());
  REQUIRE(st.k == 3);
  REQUIRE(st.trees.size() == at(p * st.k));
  std::optional<synth::QuotientTrees> q = synth::read_params(plan->info().params, p);
  REQUIRE(q);
  std::size_t moved = 0, distinct = 0;
  bool translates = true;
  for (int r = 0; r < p; ++r)  // the packing may give a root one tree twice, not all three alike
    distinct += st.trees[at(r * 3)] != st.trees[at(r * 3 + 1)] || st.trees[at(r * 3 + 1)] != st.trees[at(r * 3 + 2)] ? 1 : 0;
  for (const synth::Generator& g : synth::generators(*q))
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < st.k; ++j)
        for (int x = 0; x < p; ++x) {
          int up = st.trees[at(r * st.k + j)][at(x)];
          translates = translates && st.trees[at(g.rank[at(r)] * st.k + j)][at(g.rank[at(x)])] == (up < 0 ? -1 : g.rank[at(up)]);
          ++moved;
        }
  CHECK(distinct >= at(p / 2));  // 60 of 64 today: one local root packs the same tree thrice
  CHECK(translates);
  CHECK(moved >= at(3 * p * p));
}

TEST_CASE("synth symmetric: hosts that are not alike fall back, or are refused in one line") {
  // Node 1's first NIC on a slower link: the fabric no longer treats the hosts alike.
  topo::Topology t = topo::synth({"dgx-h100", 2, ""});
  bool cut = false;
  for (topo::LinkId l = 0; l < t.num_links() && !cut; ++l) {
    const topo::Link& k = t.link(l);
    if (t.vertex(k.a).kind == topo::VertexKind::Nic && t.vertex(k.a).host == "node1" && t.vertex(k.b).host.empty()) {
      t.mutable_link(l).bw_gbps /= 2;
      cut = true;
    }
  }
  REQUIRE(cut);
  int p = static_cast<int>(t.num_ranks());
  Request req{Collective::AllGather, std::uint64_t{1} << 30, p, 0};
  std::string why;
  auto solver = [](const topo::Topology&, int g, int) {
    std::vector<std::vector<int>> star(at(g), std::vector<int>(at(g), 0));
    for (int l = 0; l < g; ++l)
      for (int x = 0; x < g; ++x) star[at(l)][at(x)] = x == l ? -1 : l;
    return star;
  };
  CHECK_FALSE(synth::quotient(t, p, 2, 1, solver, &why));
  CHECK(why.find("the fabric does not treat the hosts alike") == 0);
  // --inter symmetric is refused with the reason; the default (16 ranks) is the general solver.
  CHECK_THROWS_WITH_AS(generate("synth", req, &t, symmetric()), doctest::Contains("synth: no symmetric trees here: the fabric"),
                       collkit::InputError);
  auto general = generate("synth", req, &t);
  CHECK_FALSE(general->info().params.count("sym_grid"));
  CHECK(verify(*general).ok);
  // Beyond 32 ranks by symmetry on five hosts alike; with one slower link, every rank's trees by
  // rails (test_synth_every_rails.cpp), on hosts of unlike sizes too (lined up by device index).
  topo::Topology five = topo::synth({"dgx-h100", 5, ""});
  Request forty{Collective::AllGather, std::uint64_t{40} << 20, 40, 0};
  CHECK(algorithm("synth").supports(forty, &five, &why));
  for (topo::LinkId l = 0; l < five.num_links(); ++l)
    if (five.vertex(five.link(l).a).kind == topo::VertexKind::Nic && five.vertex(five.link(l).a).host == "node3") {
      five.mutable_link(l).bw_gbps /= 2;
      break;
    }
  CHECK(algorithm("synth").supports(forty, &five, &why));
  CHECK(algorithm("synth").layout(forty, &five, {}).params.count("rails_fanout") == 1);
  Request ragged{Collective::AllGather, std::uint64_t{36} << 20, 36, 0};
  CHECK(algorithm("synth").supports(ragged, &five, &why));  // node4 short of 4 GPUs: lined up by device index
  // Broadcast beyond 32 ranks: by rails on hosts of one size, the slower link or not
  // (test_synth_rooted.cpp).
  Request bcast{Collective::Broadcast, std::uint64_t{1} << 20, 40, 0};
  topo::Topology again = topo::synth({"dgx-h100", 5, ""});
  CHECK(algorithm("synth").supports(bcast, &again, &why));
  CHECK(algorithm("synth").supports(bcast, &five, &why));
  AlgoOptions general_only;
  general_only.inter = "general";
  CHECK_THROWS_WITH_AS(generate("synth", forty, &again, general_only), "synth: the general solver packs trees for at most 32 ranks",
                       collkit::InputError);
  AlgoOptions bad;
  bad.inter = "rings";
  CHECK_THROWS_WITH_AS(generate("synth", req, &t, bad), "synth: --inter rings is not general, symmetric, torus or rails",
                       collkit::InputError);
}

TEST_CASE("synth symmetric: malformed parameters are refused in one line") {
  topo::Topology t = topo::synth({"dgx-h100", 2, ""});
  int p = static_cast<int>(t.num_ranks());
  AlgoOptions o = symmetric();
  o.pipeline = 2;
  auto plan = generate("synth", Request{Collective::AllGather, std::uint64_t{1} << 20, p, 0}, &t, o);
  PlanInfo info = plan->info();
  REQUIRE(info.params.at("sym_grid") == "1,2,8,1");  // one group of two twin hosts, stars rotate
  auto refused = [&](const std::string& key, const std::string& value, const std::string& message) {
    PlanInfo bad = info;
    bad.params[key] = value;
    CHECK_THROWS_WITH_AS(algorithm("synth").program(bad, 0), message.c_str(), collkit::InputError);
  };
  refused("sym_grid", "1,3,8,1",
          "synth: plan parameter sym_grid \"1,3,8,1\" is not groups,hosts,local,rotate (0 or 1) with groups x hosts x local = 16 ranks on "
          "two hosts or more");
  refused("sym_grid", "1,2,x", "synth: plan parameter sym_grid: expected a whole number at character 4");
  refused("sym_ranks", "0,1", "synth: plan parameter sym_ranks is not an order of the 16 ranks");
  refused("sym_fanout", "0", "synth: plan parameter sym_fanout must be a whole number of 1 or more");
  refused("sym_intra", "-1,0,0,0,0,0,0,0", "synth: plan parameter sym_intra: expected 8 trees (1 a local root)");
  refused("sym_intra_k", "0", "synth: plan parameter sym_intra_k must be a whole number from 1 to 64 (intra-host trees a root)");
  // Two a root: the second tree read is root 0's, and the star given there is root 1's.
  refused("sym_intra_k", "2", "synth: plan parameter sym_intra: tree 1 does not lead local index 0 to its root 0");
  std::string intra = "-1,0,0,0,0,0,0,0;1,-1,0,0,0,0,0,0";  // root 0's star; root 1's through 0: not rotations
  for (int l = 2; l < 8; ++l) {
    std::string star;
    for (int x = 0; x < 8; ++x) star += (x ? "," : "") + std::to_string(x == l ? -1 : l);
    intra += ";" + star;
  }
  refused("sym_intra", intra, "synth: plan parameter sym_grid says the intra-host trees are rotations, and they are not");
  PlanInfo alien = info;
  alien.req.coll = Collective::Broadcast;
  CHECK_THROWS_AS(algorithm("synth").program(alien, 0), collkit::InputError);
}
