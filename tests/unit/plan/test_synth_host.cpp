// The PCIe path beside NVLink (plan.h, PlanInfo::channel_paths; docs/synth.md "The PCIe path"):
// sends staged through host memory, routed by the simulator over PCIe and the CPU, and synth's
// host share that reaches a bound the NVLink routes alone cannot.

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/synth_read.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/export.h"
#include "collkit/plan/io.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/synth_info.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/synth.h"
#include "nic_route.h"
#include "plan/plan_testing.h"
#include "plan/sim_topologies.h"
#include "synth/mcf.h"
#include "synth/rate.h"
#include "synth/routed.h"

using namespace collkit::plan;
using collkit::plan::testing::make_vertex;
namespace topo = collkit::topo;

namespace {

/// One host "h": 4 GPUs on an NVSwitch by NVLink of 40 GB/s, each GPU also on a PCIe switch of
/// its own (31.5 GB/s), the four switches on one CPU (63 GB/s each). The NVSwitch alone gives a
/// root 40 / 3 = 13.33 GB/s; the cut bound counts the PCIe links too: (40 + 31.5) / 3 = 23.83;
/// host stars reach 31.5 / 3 = 10.5 (each GPU's PCIe link carries its 3 sends).
/// A link of `bw` GB/s and 0.1 us from a to b.
void add_link(topo::Topology& t, topo::VertexId a, topo::VertexId b, topo::LinkType type, double bw) {
  topo::Link l;
  l.a = a;
  l.b = b;
  l.type = type;
  l.bw_gbps = bw;
  l.latency_us = 0.1;
  t.add_link(l);
}

topo::Topology nvlink_and_pcie() {
  topo::Topology t;
  t.name = "nvlink-and-pcie";
  topo::VertexId nvs = t.add_vertex(make_vertex("h/nvswitch", topo::VertexKind::NvSwitch, "h"));
  topo::VertexId cpu = t.add_vertex(make_vertex("h/cpu0", topo::VertexKind::Cpu, "h"));
  auto link = [&](topo::VertexId a, topo::VertexId b, topo::LinkType type, double bw) { add_link(t, a, b, type, bw); };
  for (int i = 0; i < 4; ++i) {
    topo::VertexId g = t.add_vertex(make_vertex("h/gpu" + std::to_string(i), topo::VertexKind::Gpu, "h"));
    topo::VertexId sw = t.add_vertex(make_vertex("h/pcisw" + std::to_string(i), topo::VertexKind::PciSwitch, "h"));
    link(g, nvs, topo::LinkType::NvLink, 40);
    link(g, sw, topo::LinkType::Pcie, 31.5);
    link(sw, cpu, topo::LinkType::Pcie, 63);
    t.add_rank(g);
  }
  return t;
}

}  // namespace

TEST_CASE("channel_paths: a host path goes over PCIe through the sender's nearest CPU") {
  topo::Topology t = nvlink_and_pcie();
  sim::HostRoutes hr(t);
  topo::VertexId a = t.rank_vertex(0), b = t.rank_vertex(1);
  std::string why;
  topo::Path path = hr.route(a, b, &why);
  REQUIRE(path.found);
  std::vector<std::string> ids;
  for (topo::VertexId v : path.vertices(t)) ids.push_back(t.vertex(v).id);
  CHECK(ids == std::vector<std::string>{"h/gpu0", "h/pcisw0", "h/cpu0", "h/pcisw1", "h/gpu1"});
  CHECK(path.bottleneck_gbps == doctest::Approx(31.5));
  CHECK(path.latency_us == doctest::Approx(0.4));
  // The topology's own route takes the NVSwitch.
  topo::RouteCache cache(t);
  CHECK(cache.routes_to(a, {b}).front()->hops.size() == 2);
  // Between hosts there is none.
  topo::Topology two = testing::two_hosts(2, 10, 1, 5, 1);
  topo::Path across = sim::HostRoutes(two).route(two.rank_vertex(0), two.rank_vertex(2), &why);
  CHECK_FALSE(across.found);
  CHECK(why == "\"a/g0\" and \"b/g0\" are not on one host");
}

TEST_CASE("channel_paths: a host channel's sends are simulated over the PCIe path") {
  topo::Topology t = nvlink_and_pcie();
  // One message of 31.5 MB from rank 0 to rank 1: 1000 us at 31.5 GB/s over PCIe, 787.5 us at
  // 40 GB/s over NVLink (plus the links' latency).
  Request req{Collective::Broadcast, 31'500'000, 2, 0};
  auto plan = generate("direct", req, &t, {});
  SimOptions opt;
  opt.per_message_us = 0;
  double nvlink = simulate(*plan, t, opt).time_us;
  PlanInfo info = plan->info();
  info.channel_paths = {ChannelPath::Host};
  double host = simulate(GeneratedPlan(info, algorithm("direct")), t, opt).time_us;
  CHECK(nvlink == doctest::Approx(787.5 + 0.2).epsilon(1e-9));
  CHECK(host == doctest::Approx(1000 + 0.4).epsilon(1e-9));
  // Across hosts a host channel has no path: refused naming the pair.
  topo::Topology two = testing::two_hosts(1, 10, 1, 5, 1);
  Request across{Collective::AllGather, 1 << 20, 2, 0};
  PlanInfo ring = generate("ring", across, &two, {})->info();
  ring.channel_paths = {ChannelPath::Host};
  CHECK_THROWS_WITH_AS(simulate(GeneratedPlan(ring, algorithm("ring")), two),
                       "simulate: no route from rank 0 to rank 1 staged through host memory (channel_paths): \"a/g0\" and \"b/g0\" are "
                       "not on one host",
                       collkit::InputError);
}

TEST_CASE("channel_paths: read, written and refused where the plan is read") {
  topo::Topology t = nvlink_and_pcie();
  Request req{Collective::AllGather, 4 << 12, 4, 0};
  auto plan = generate("ring", req, &t, {});
  PlanInfo info = plan->info();
  info.channel_paths = {ChannelPath::Route, ChannelPath::Host};
  GeneratedPlan with(info, algorithm("ring"));
  auto back = from_json(to_json(with), "p.json");
  CHECK(back->info().channel_paths == info.channel_paths);
  CHECK(to_json(with).find("\"channel_paths\": [\n    \"route\",\n    \"host\"\n  ]") != std::string::npos);
  // Absent: not written.
  CHECK(to_json(*plan).find("channel_paths") == std::string::npos);
  std::string text = to_json(*plan);
  auto at_key = text.find("\"channels\"");
  REQUIRE(at_key != std::string::npos);
  auto edited = [&](const std::string& value) {
    std::string e = text;
    e.insert(at_key, "\"channel_paths\": " + value + ",\n  ");
    return e;
  };
  CHECK_THROWS_WITH_AS(from_json(edited("[\"route\", \"nvlink\"]"), "bad.json"),
                       "bad.json: /channel_paths/1: a channel path is \"route\" or \"host\", got \"nvlink\"", collkit::InputError);
  int checked = 0;
  for (const char* bad : {"[]", "[1]", "\"host\"", "[\"Host\"]"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(from_json(edited(bad), "bad.json"), collkit::InputError);
    ++checked;
  }
  CHECK(checked == 4);
  // Paths are not data: the plan verifies as it did; the MSCCL export drops them, saying so.
  CHECK(verify(with).ok);
  CHECK(to_msccl_xml(with, {}).find("<!-- collkit: the plan's channel_paths (sends staged through host memory) are dropped") !=
        std::string::npos);
  CHECK(to_msccl_xml(*plan, {}).find("channel_paths") == std::string::npos);
}

TEST_CASE("synth host share: the PCIe path takes synth to a bound NVLink alone cannot reach") {
  topo::Topology t = nvlink_and_pcie();
  int plans = 0;
  for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
    CAPTURE(coll);
    Request req{coll, std::uint64_t{1} << 30, 4, 0};
    auto plan = generate("synth", req, &t, {});
    const PlanInfo& info = plan->info();
    REQUIRE(info.params.count("host_chunks"));
    CHECK(std::count(info.channel_paths.begin(), info.channel_paths.end(), ChannelPath::Host) ==
          (coll == Collective::AllReduce ? 2 : 1) * 4 * 3);
    double bound = lower_bound(req, t).time_us();
    if (coll == Collective::AllReduce) bound = lower_bound(req, t).rs_ag_us;
    SimOptions maxmin;
    maxmin.model = LinkModel::MaxMin;
    double queue = simulate(*plan, t).time_us, fair = simulate(*plan, t, maxmin).time_us;
    MESSAGE(to_string(coll) << ": " << queue / bound << " x the bound (MaxMin " << fair / bound << "), host chunks "
                            << info.params.at("host_chunks"));
    // Routes alone reach 13.33 of the bound's 23.83 GB/s a root: 1.79 x the bound at best.
    CHECK(fair >= bound * (1 - 1e-6));
    CHECK(fair <= bound * 1.01);
    CHECK(queue <= bound * 1.02);
    SynthInfo si = synth_info(*plan, &t, {});
    CHECK(si.routed_gbps == doctest::Approx(40.0 / 3).epsilon(1e-6));
    CHECK(si.optimal_gbps == doctest::Approx(71.5 / 3).epsilon(1e-6));
    CHECK(si.host_gbps == doctest::Approx(10.5).epsilon(1e-6));
    CHECK(si.host_chunks > 0);
    CHECK(describe_synth_info(si).find("host share: ") != std::string::npos);
    // Paths are not data: the plan verifies; it survives its file; the MSCCL export says it drops them.
    CHECK(verify(*plan).ok);
    auto back = from_json(to_json(*plan), "s.json");
    CHECK(back->info().channel_paths == info.channel_paths);
    CHECK(simulate(*back, t).time_us == doctest::Approx(queue).epsilon(1e-12));
    ++plans;
  }
  CHECK(plans == 3);
}

TEST_CASE("synth host share: one root's trees and a chain through host memory reach the root's bound") {
  // Broadcast and Reduce from rank 1: the root's NVLink gives 40 GB/s, its PCIe link 31.5 more,
  // which a chain of sends staged through host memory (1 -> 2 -> 3 -> 0, each over its own PCIe
  // links and uplinks) carries beside the trees: the bound's 71.5 GB/s.
  topo::Topology t = nvlink_and_pcie();
  int plans = 0;
  for (Collective coll : {Collective::Broadcast, Collective::Reduce}) {
    CAPTURE(coll);
    Request req{coll, std::uint64_t{1} << 30, 4, 1};
    auto plan = generate("synth", req, &t, {});
    const PlanInfo& info = plan->info();
    REQUIRE(info.params.count("host_chunks"));
    CHECK(std::count(info.channel_paths.begin(), info.channel_paths.end(), ChannelPath::Host) == 3);
    double bound = lower_bound(req, t).time_us();
    double queue = simulate(*plan, t).time_us;
    MESSAGE(to_string(coll) << ": " << queue / bound << " x the bound, host chunks " << info.params.at("host_chunks"));
    // NVLink alone: 71.5 / 40 = 1.79 x the bound at best.
    CHECK(queue >= bound * (1 - 1e-6));
    CHECK(queue <= bound * 1.05);
    SynthInfo si = synth_info(*plan, &t, {});
    CHECK(si.host_gbps == doctest::Approx(31.5).epsilon(1e-6));
    CHECK(describe_synth_info(si).find("down a chain through every rank") != std::string::npos);
    CHECK(verify(*plan).ok);
    ++plans;
  }
  CHECK(plans == 2);
}

TEST_CASE("synth host share: AlltoAll sends the last chunks of each block through host memory, beyond the LP over routes") {
  // The flow LP over the routes keeps to the NVSwitch (40 GB/s a GPU: 13.33 a pair); the last h
  // of each block's chunks go straight staged through host memory (10.5 a pair over the PCIe
  // links), so the plan beats that LP's time and nears the bound's (71.5 GB/s a GPU). The
  // optimum the plan states (lp_us) is the LP with the host paths too: no plan beats it.
  topo::Topology t = nvlink_and_pcie();
  Request req{Collective::AlltoAll, std::uint64_t{1} << 30, 4, 0};
  auto plan = generate("synth", req, &t, {});
  const PlanInfo& info = plan->info();
  REQUIRE(info.params.count("host_chunks"));
  int h = std::stoi(info.params.at("host_chunks")), m = std::stoi(info.params.at("pipeline"));
  CHECK(h > 0);
  CHECK(h < m);
  CHECK(std::count(info.channel_paths.begin(), info.channel_paths.end(), ChannelPath::Host) == 4 * 3);
  double bound = lower_bound(req, t).time_us(), us = simulate(*plan, t).time_us;
  double block = static_cast<double>(req.bytes / 4) * 1e-3;  // us at 1 GB/s
  double routes_lp = block / synth::max_concurrent_flow(t, 4).rate_gbps, lp = std::stod(info.params.at("lp_us"));
  MESSAGE("AlltoAll: " << us / bound << " x the bound, " << us / routes_lp << " x the LP over routes, " << us / lp
                       << " x the LP with host paths, host chunks " << h << " of " << m);
  CHECK(routes_lp == doctest::Approx(block / (40.0 / 3)).epsilon(1e-6));
  CHECK(us < 0.8 * routes_lp);
  CHECK(lp < 0.8 * routes_lp);
  CHECK(lp >= bound * (1 - 1e-6));
  CHECK(us >= lp * (1 - 1e-6));
  CHECK(us >= bound * (1 - 1e-6));
  synth::ConcurrentFlow host_lp = synth::max_concurrent_flow(t, 4, {.host_paths = true});
  CHECK(host_lp.paths == 4 * 3);                                            // one host path a pair
  CHECK(synth::max_concurrent_flow(t, 4, {.every_nic = true}).paths == 0);  // one host: no NIC path
  CHECK(verify(*plan).ok);
  CHECK(describe_synth_info(synth_info(*plan, &t, {})).find(" of each block's " + std::to_string(m) + " chunks (its last)") !=
        std::string::npos);
  // A share as large as the block, or beside relays, is refused in one line.
  PlanInfo bad = info;
  bad.params["host_chunks"] = std::to_string(m);
  CHECK_THROWS_WITH_AS(GeneratedPlan(bad, algorithm("synth")).program(0),
                       ("synth: plan parameter host_chunks " + std::to_string(m) + " is not 0 to " + std::to_string(m - 1)).c_str(),
                       collkit::InputError);
}

TEST_CASE("synth host share: across two hosts each share chunk crosses once and spreads inside the host") {
  // 2 x mi300x: the trees reach 32 GB/s a root (xGMI in, one remote root a GPU through its NIC),
  // the bound 34.07 counts PCIe in too: 1.065 x the bound before; the share across hosts 1.041.
  topo::Topology t = collkit::topo::synth({"mi300x", 2, ""});
  int p = static_cast<int>(t.num_ranks()), g = 8;
  REQUIRE(p == 16);
  Request req{Collective::AllGather, std::uint64_t{1} << 30, p, 0};
  auto plan = generate("synth", req, &t, {});
  const PlanInfo& info = plan->info();
  REQUIRE(info.params.count("host_chunks"));
  REQUIRE(info.params.at("share_hosts") == "8:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
  int host = std::stoi(info.params.at("host_chunks"));
  double bound = lower_bound(req, t).time_us(), us = simulate(*plan, t).time_us;
  MESSAGE("2 x mi300x AllGather: " << us / bound << " x the bound, host chunks " << host);
  CHECK(us >= bound * (1 - 1e-9));
  CHECK(us <= bound * 1.045);
  CHECK(verify(*plan).ok);
  // Each root's one arc to the other host goes over the routes, the rest through host memory.
  std::size_t share_channels = static_cast<std::size_t>(p * (p - 1));
  REQUIRE(info.channel_paths.size() >= share_channels);
  auto first_share = info.channel_paths.end() - static_cast<std::ptrdiff_t>(share_channels);
  CHECK(std::count(first_share, info.channel_paths.end(), ChannelPath::Route) == p);
  CHECK(std::count(first_share, info.channel_paths.end(), ChannelPath::Host) == p * (p - 2));
  // Every rank gets each share chunk of root r from r (r's host, or r's rail on the other host)
  // or from the rank of r's local index on its own host, over a channel of the right path.
  std::uint32_t unit = info.out_chunks / static_cast<std::uint32_t>(p);
  std::size_t checked = 0;
  bool right = true;
  for (int x = 0; x < p; ++x)
    for (const Op& o : plan->program(x)) {
      if (o.type != OpType::Recv || o.channel < info.channel_paths.size() - share_channels) continue;
      int r = static_cast<int>(o.dst.chunk / unit);
      bool near = x / g == r / g || x % g == r % g;
      int from = near ? r : (x / g) * g + r % g;
      ChannelPath path = x / g == r / g || x % g != r % g ? ChannelPath::Host : ChannelPath::Route;
      right =
          right && o.peer == from && info.channel_paths[o.channel] == path && o.dst.chunk % unit >= unit - static_cast<std::uint32_t>(host);
      ++checked;
    }
  CHECK(right);
  CHECK(checked == static_cast<std::size_t>(p * (p - 1) * host));
  // A malformed share_hosts is refused in one line.
  PlanInfo bad_info = info;
  int refused = 0;
  for (const char* bad :
       {"x", "8:0,1", "0:0", "8:0,0,2,3,4,5,6,7,8,9,10,11,12,13,14,15", "16:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", "8:0;1"}) {
    CAPTURE(bad);
    bad_info.params["share_hosts"] = bad;
    try {
      (void)GeneratedPlan(bad_info, algorithm("synth")).program(0);
    } catch (const collkit::InputError& e) {
      std::string what = e.what();
      CHECK(what.rfind("synth: plan parameter share_hosts \"", 0) == 0);
      CHECK(what.find('\n') == std::string::npos);
      ++refused;
    }
  }
  CHECK(refused == 6);
}

TEST_CASE("synth host share: a symmetric plan refuses host_chunks in one line") {
  topo::Topology t = collkit::topo::synth({"dgx-h100", 2, ""});
  Request req{Collective::AllGather, 1 << 20, 16, 0};
  AlgoOptions opt;
  opt.inter = "symmetric";
  PlanInfo info = generate("synth", req, &t, opt)->info();
  REQUIRE(info.params.count("sym_grid"));
  info.params["host_chunks"] = "2";
  CHECK_THROWS_WITH_AS(GeneratedPlan(info, algorithm("synth")).program(0),
                       "synth: plan parameter host_chunks: the host share is for packed trees, not symmetric or torus ones",
                       collkit::InputError);
  info.params["host_chunks"] = "-1";
  CHECK_THROWS_WITH_AS(GeneratedPlan(info, algorithm("synth")).program(0), "synth: plan parameter host_chunks -1 is not 0 to 65535",
                       collkit::InputError);
}

TEST_CASE("synth host arcs: trees packed over the routes and host paths at once, the host arcs on channels of their own") {
  // One dgx-h100: every rank's trees over NVLink alone pack at 64.29 GB/s a root, the bound's
  // 73.29 counts each GPU's PCIe link too; trees whose arcs may be host paths pack at 72. They
  // are synth's choice for AllGather at 16 MiB and ReduceScatter at 512 MiB; elsewhere 4 routed
  // trees a root beside a host share (the other way onto PCIe) simulate within 1% of them and
  // win (AllReduce at 64 MiB: 1.034 x the bound, host arcs 1.049).
  topo::Topology t = collkit::topo::synth({"dgx-h100", 1, ""});
  int p = static_cast<int>(t.num_ranks());
  int plans = 0;
  struct Case {
    Collective coll;
    std::uint64_t bytes;
    bool arcs;  // host arcs chosen, else a host share
  };
  for (Case c :
       {Case{Collective::AllGather, std::uint64_t{16} << 20, true}, Case{Collective::ReduceScatter, std::uint64_t{512} << 20, true},
        Case{Collective::AllReduce, std::uint64_t{64} << 20, false}}) {
    Collective coll = c.coll;
    CAPTURE(coll);
    Request req{coll, c.bytes, p, 0};
    auto plan = generate("synth", req, &t, {});
    const PlanInfo& info = plan->info();
    if (!c.arcs) {
      // A share through host memory beside the routed trees, faster than those trees alone: the
      // simulator's predictions on the model topology (deterministic), not clock readings.
      CHECK(info.params.count("host_chunks"));
      CHECK(info.params.count("host_arcs") == 0);
      AlgoOptions routed_opt;
      routed_opt.channels = 1;
      routed_opt.pipeline = 64;
      CHECK(simulate(*plan, t).time_us < simulate(*generate("synth", req, &t, routed_opt), t).time_us);
      continue;
    }
    REQUIRE(info.params.count("host_arcs"));
    CHECK(info.params.at("arcs") == "host");
    SynthTrees st = read_synth_trees(info);
    REQUIRE(st.host_arcs.size() == st.trees.size());
    // Each host arc's sends (or, up the trees, receives) are on Host channels, every other
    // tree send on a Route one.
    std::size_t host_sends = 0, route_sends = 0;
    bool right = true;
    for (int r = 0; r < p; ++r)
      for (const Op& o : plan->program(r)) {
        if (o.type != OpType::Send) continue;
        REQUIRE(o.channel < info.channel_paths.size());
        bool staged = info.channel_paths[o.channel] == ChannelPath::Host;
        // the arc: down a tree r is the parent of o.peer, up it the child
        bool any = false;
        for (std::size_t tr = 0; tr < st.trees.size(); ++tr) {
          auto peer = static_cast<std::size_t>(o.peer), me = static_cast<std::size_t>(r);
          if (st.trees[tr][peer] == r && st.host_arcs[tr][peer]) any = true;
          if (st.trees[tr][me] == o.peer && st.host_arcs[tr][me]) any = true;
        }
        right = right && (!staged || any);
        (staged ? host_sends : route_sends) += 1;
      }
    CHECK(right);
    CHECK(host_sends > 0);
    CHECK(route_sends > host_sends);
    // Faster than the routed trees at their best k and m, nearer the bound.
    double us = simulate(*plan, t).time_us, bound = lower_bound(req, t).time_us();
    AlgoOptions routed_opt;
    routed_opt.channels = 1;
    routed_opt.pipeline = 64;
    double routed = simulate(*generate("synth", req, &t, routed_opt), t).time_us;
    MESSAGE(to_string(coll) << ": " << us / bound << " x the bound, routed trees " << routed / bound);
    CHECK(us >= bound * (1 - 1e-9));
    CHECK(us < routed);
    SynthInfo si = synth_info(*plan, &t, {});
    CHECK(si.host_arcs > 0);
    CHECK(si.routed_gbps > 72);  // over routes and host paths, not NVLink alone
    CHECK(describe_synth_info(si).find("optimal over routes + host paths:") != std::string::npos);
    CHECK(verify(*plan).ok);
    auto back = from_json(to_json(*plan), "s.json");
    CHECK(simulate(*back, t).time_us == doctest::Approx(us).epsilon(1e-12));
    // A tree arc sent elsewhere is caught by the verifier.
    ExplicitPlan bad = materialize(*plan);
    bool changed = false;
    for (Op& o : bad.mutable_program(0))
      if (!changed && o.type == OpType::Send && info.channel_paths[o.channel] == ChannelPath::Host) {
        o.peer = (o.peer + 1) % p == 0 ? 1 : (o.peer + 1) % p;
        changed = true;
      }
    REQUIRE(changed);
    CHECK_FALSE(verify(bad).ok);
    ++plans;
  }
  CHECK(plans == 2);
}

TEST_CASE("synth host arcs: a malformed host_arcs is refused in one line") {
  topo::Topology t = collkit::topo::synth({"dgx-h100", 1, ""});
  auto plan = generate("synth", {Collective::AllGather, std::uint64_t{16} << 20, 8, 0}, &t, {});
  PlanInfo info = plan->info();
  REQUIRE(info.params.count("host_arcs"));
  std::size_t trees = read_synth_trees(info).trees.size();
  std::string root_arc = "0" + std::string(trees - 1, ';');  // rank 0 roots tree 0
  struct Bad {
    std::string text, why;
  };
  std::vector<Bad> cases{{"x", "expected ranks 0..7 at character 0"},
                         {"9", "expected ranks 0..7 at character 0"},
                         {"1", "1 trees, expected " + std::to_string(trees)},
                         {root_arc, "rank 0 is the root of tree 0: no arc leads to it"}};
  int refused = 0;
  for (const Bad& b : cases) {
    CAPTURE(b.text);
    PlanInfo bad = info;
    bad.params["host_arcs"] = b.text;
    CHECK_THROWS_WITH_AS(GeneratedPlan(bad, algorithm("synth")).program(0), ("synth: plan parameter host_arcs: " + b.why).c_str(),
                         collkit::InputError);
    ++refused;
  }
  CHECK(refused == 4);
  // Host arcs are for packed trees: a symmetric plan refuses them.
  topo::Topology two = collkit::topo::synth({"dgx-h100", 2, ""});
  AlgoOptions sym;
  sym.inter = "symmetric";
  PlanInfo s = generate("synth", {Collective::AllGather, 1 << 20, 16, 0}, &two, sym)->info();
  s.params["host_arcs"] = "";
  CHECK_THROWS_WITH_AS(GeneratedPlan(s, algorithm("synth")).program(0),
                       "synth: plan parameter host_arcs: host arcs are for packed trees, not symmetric or torus ones", collkit::InputError);
}

namespace {

/// One host of `pairs` superchips as GB200's: 2 GPUs each, every GPU on one NVSwitch (900 GB/s)
/// and on its superchip's Grace CPU by NVLink-C2C (225 GB/s a direction), the CPUs not joined.
/// Stars over the switch reach 900 / (p - 1) a root; the cut bound counts C2C too, (900 + 225) /
/// (p - 1): a GPU may take data in from its Grace's memory, which its twin wrote.
/// AllGather of 1 GiB (in whole floats a rank) on two GB200 NVL72 racks, from rank 0.
Request gb200_x2_allgather() { return {Collective::AllGather, std::uint64_t{144} * 4 * 1864135, 144, 0}; }

/// Options asking synth for k trees a root of m chunks each.
AlgoOptions trees_of(int k, int m) {
  AlgoOptions opt;
  opt.channels = k;
  opt.pipeline = m;
  return opt;
}

topo::Topology superchips(int pairs) {
  topo::Topology t;
  t.name = "superchips";
  topo::VertexId nvs = t.add_vertex(make_vertex("h/nvswitch", topo::VertexKind::NvSwitch, "h"));
  auto link = [&](topo::VertexId a, topo::VertexId b, topo::LinkType type, double bw) { add_link(t, a, b, type, bw); };
  for (int q = 0; q < pairs; ++q) {
    topo::VertexId cpu = t.add_vertex(make_vertex("h/cpu" + std::to_string(q), topo::VertexKind::Cpu, "h"));
    for (int i = 2 * q; i < 2 * q + 2; ++i) {
      topo::VertexId g = t.add_vertex(make_vertex("h/gpu" + std::to_string(i), topo::VertexKind::Gpu, "h"));
      link(g, nvs, topo::LinkType::NvLink, 900);
      link(g, cpu, topo::LinkType::C2c, 225);
      t.add_rank(g);
    }
  }
  return t;
}

}  // namespace

TEST_CASE("synth host arcs: on one switch with GPUs paired on a CPU, stars relayed through the CPU reach past the switch") {
  topo::Topology t = superchips(4);
  const int p = 8;
  // The groups: the two GPUs of each CPU, joined over C2C through its memory and nothing else.
  std::optional<std::vector<std::vector<int>>> groups = synth::star_groups(t, p);
  REQUIRE(groups);
  REQUIRE(groups->size() == 4);
  for (int q = 0; q < 4; ++q) CHECK((*groups)[static_cast<std::size_t>(q)] == std::vector<int>{2 * q, 2 * q + 1});
  collkit::plan::sim::HostRoutes hr(t);
  topo::Path twin = hr.route(t.rank_vertex(0), t.rank_vertex(1));
  REQUIRE(twin.found);
  CHECK(twin.hops.size() == 2);
  CHECK_FALSE(hr.route(t.rank_vertex(0), t.rank_vertex(2)).found);
  // Not such a star: host paths between every GPU (one group), on one DGX H100 or two; a star
  // without C2C. (Racks of such stars are: the two GB200 NVL72 case below.)
  int refused = 0;
  for (auto [other, n] : {std::pair{collkit::topo::synth({"dgx-h100", 1, ""}), 8}, std::pair{collkit::topo::synth({"dgx-h100", 2, ""}), 16},
                          std::pair{collkit::plan::testing::uniform(6, 100, 1), 6}}) {
    CHECK_FALSE(synth::star_groups(other, n));
    ++refused;
  }
  CHECK(refused == 3);

  // Rates per root: stars 900 / 7; relaying some of a root's trees takes each GPU's C2C link in
  // too, below the cut bound's (900 + 225) / 7; every tree spans, staged arcs inside a group.
  double star = 900.0 / 7, optimum = 1125.0 / 7, best = 0;
  CHECK(synth::optimal_rate(synth::routed_host_links(t, p), p).per_root_gbps == doctest::Approx(optimum));
  int checked = 0;
  for (int relay = 0; relay <= 8; ++relay) {
    synth::HostTrees ht = synth::star_relay_trees(t, p, *groups, 8, relay);
    REQUIRE(ht.trees.size() == 64u);
    if (relay == 0) CHECK(ht.per_root_gbps == doctest::Approx(star));
    CHECK(ht.per_root_gbps <= optimum * (1 + 1e-9));
    best = std::max(best, ht.per_root_gbps);
    for (std::size_t i = 0; i < ht.trees.size(); ++i) {
      int root = static_cast<int>(i) / 8;
      for (int r = 0; r < p; ++r) {
        int up = ht.trees[i][static_cast<std::size_t>(r)], steps = 0;
        for (int x = r; x != root && x >= 0 && steps <= p; x = ht.trees[i][static_cast<std::size_t>(x)]) ++steps;
        CHECK(steps <= 2);
        if (ht.host[i][static_cast<std::size_t>(r)]) CHECK(up / 2 == r / 2);
        ++checked;
      }
    }
  }
  CHECK(checked == 9 * 64 * 8);
  MESSAGE("8 GPUs in 4 pairs: stars " << star << " GB/s a root, relayed " << best << ", optimum " << optimum);
  CHECK(best > star * 1.15);

  // The plans: host arcs chosen at 1 GiB, correct on data, a shift by one pair is a symmetry that
  // holds op for op, and folded simulation agrees with unfolded. Predictions; no clock is read.
  int plans = 0;
  std::size_t compared = 0;
  for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
    CAPTURE(coll);
    Request req{coll, std::uint64_t{1} << 30, p, 0};
    auto plan = generate("synth", req, &t, {});
    const PlanInfo& info = plan->info();
    REQUIRE(info.params.count("host_arcs"));
    CHECK(verify(*plan).ok);
    std::vector<SymmetryAxis> axes = plan->symmetries();
    REQUIRE(axes.size() == 1);
    CHECK(axes[0].order == 4);
    CHECK(axes[0].rank[0] == 2);
    CHECK(collkit::plan::testing::axis_holds(*plan, axes[0], compared));
    SimOptions unfolded;
    unfolded.fold_symmetry = false;
    SimResult folded_predicted = simulate(*plan, t);
    double unfolded_predicted = simulate(*plan, t, unfolded).time_us;
    CHECK(folded_predicted.folded == 4);
    // Transfers posted at one instant are served in turn (docs/plan.md, "Symmetry"): AllReduce
    // folded 1791 us, unfolded 1829 (2.1%).
    CHECK(folded_predicted.time_us == doctest::Approx(unfolded_predicted).epsilon(0.025));
    double bound = coll == Collective::AllReduce ? lower_bound(req, t).rs_ag_us : lower_bound(req, t).time_us();
    // The simulator's time over the bound (a model figure; no clock is read).
    double over_bound_predicted = folded_predicted.time_us / bound;
    MESSAGE(to_string(coll) << ": " << over_bound_predicted << " x the bound");
    CHECK(over_bound_predicted >= 1 - 1e-9);
    CHECK(over_bound_predicted <= optimum / star * 0.97);  // well past what stars can do
    ++plans;
  }
  CHECK(plans == 3);
  CHECK(compared > 1000);
  // Small vectors keep to plain stars (host arcs need 2 MiB a root), which verify and run.
  auto small = generate("synth", {Collective::AllGather, std::uint64_t{8} * 8 * 64, p, 0}, &t, {});
  CHECK(small->info().params.count("host_arcs") == 0);
  CHECK(collkit::plan::testing::check_plan(*small).ok);
}

TEST_CASE("synth host arcs: a GB200 NVL72 rack's 72 GPUs, stars relayed through each Grace, near the bound and folded") {
  // One rack: NVLink stars alone reach 900 / 71 = 12.68 GB/s a root, 1.25 x the bound; relayed
  // through each superchip's Grace they pack at 15.65 of the bound's 15.85 (8 trees a root).
  // Simulated one pair of the 36 (the shift by two ranks). Predictions; no clock is read.
  topo::Topology t = collkit::topo::synth({"gb200-nvl72", 1, ""});
  const int p = 72;
  Request req{Collective::AllGather, std::uint64_t{72} * 4 * 3728270, p, 0};  // 1 GiB in whole floats a rank
  AlgoOptions eight;
  eight.channels = 8;
  auto plan = generate("synth", req, &t, eight);
  REQUIRE(plan->info().params.count("host_arcs"));
  SimResult predicted = simulate(*plan, t);
  double bound = lower_bound(req, t).time_us();
  double over_bound_predicted = predicted.time_us / bound;  // simulated over the bound; no clock is read
  MESSAGE("gb200-nvl72 AllGather 1 GiB: " << over_bound_predicted << " x the bound, folded by " << predicted.folded);
  CHECK(predicted.folded == 36);
  CHECK(over_bound_predicted >= 1 - 1e-9);
  CHECK(over_bound_predicted <= 1.02);
  SynthInfo si = synth_info(*plan, &t, {});
  CHECK(si.packed_gbps == doctest::Approx(15.65).epsilon(0.01));
  // auto weighs it at 72 ranks and takes it at 1 GiB (the classic plans' best, 1.25 x).
  CHECK(plan_for("auto", req, &t)->info().algorithm == "synth");
}

TEST_CASE("synth host arcs: a malformed tree_shift is refused in one line, one the trees do not hold to states no symmetry") {
  topo::Topology t = superchips(4);
  auto plan = generate("synth", {Collective::AllGather, std::uint64_t{1} << 30, 8, 0}, &t, {});
  PlanInfo info = plan->info();
  REQUIRE(info.params.at("tree_shift") == "2");
  int refused = 0;
  struct Bad {
    const char *shift, *block;
  };
  for (Bad b :
       {Bad{"0", nullptr}, Bad{"3", nullptr}, Bad{"8", nullptr}, Bad{"-2", nullptr}, Bad{"2", "3"}, Bad{"4", "4"}, Bad{"1", "16"}}) {
    CAPTURE(b.shift);
    PlanInfo bad = info;
    bad.params["tree_shift"] = b.shift;
    if (b.block) bad.params["tree_block"] = b.block;
    CHECK_THROWS_WITH_AS(GeneratedPlan(bad, algorithm("synth")).program(0),
                         (std::string("synth: plan parameters tree_shift ") + b.shift + ", tree_block " + (b.block ? b.block : "8") +
                          " are not a shift inside blocks of every rank's packed trees (a block of 2 to p ranks dividing p = 8, a "
                          "shift of 1 to block - 1 dividing the block)")
                             .c_str(),
                         collkit::InputError);
    ++refused;
  }
  CHECK(refused == 7);
  PlanInfo word = info;
  word.params["tree_shift"] = "two";
  CHECK_THROWS_WITH_AS(GeneratedPlan(word, algorithm("synth")).program(0), "plan parameter tree_shift=\"two\": expected an integer",
                       collkit::InputError);
  // A shift of one rank is a divisor of 8, but it moves a GPU off its twin: the relayed trees do
  // not map onto themselves, so no symmetry is stated and the plan simulates unfolded, as it is.
  PlanInfo one = info;
  one.params["tree_shift"] = "1";
  GeneratedPlan unstated(one, algorithm("synth"));
  CHECK(unstated.symmetries().empty());
  SimOptions unfolded;
  unfolded.fold_symmetry = false;
  SimResult as_is = simulate(unstated, t);
  CHECK(as_is.folded == 1);
  CHECK(as_is.time_us == doctest::Approx(simulate(*plan, t, unfolded).time_us).epsilon(0.02));
  CHECK(verify(unstated).ok);
}

TEST_CASE("synth host arcs: two GB200 NVL72 racks, each root's data over its rail to the other rack and relayed there as at home") {
  // 144 GPUs: host 0's pattern (stars in each rack, rails between) runs 1.24 x the bound; every
  // rank's trees relayed through each Grace on both racks (3 a root: AllGather's channels, 73 a
  // tree, hold no more) about 1.03. Two symmetries: each rack's GPUs turned by one superchip, and
  // the racks swapped; the simulation runs one rank of 72. Predictions; no clock is read.
  topo::Topology t = collkit::topo::synth({"gb200-nvl72", 2, ""});
  const int p = 144;
  std::optional<std::vector<std::vector<int>>> groups = synth::star_groups(t, p);
  REQUIRE(groups);
  CHECK(groups->size() == 72);
  CHECK((*groups)[36] == std::vector<int>{72, 73});
  Request req = gb200_x2_allgather();
  AlgoOptions opt = trees_of(3, 16);
  auto plan = generate("synth", req, &t, opt);
  const PlanInfo& info = plan->info();
  REQUIRE(info.params.count("host_arcs"));
  CHECK(info.params.at("tree_shift") == "2");
  CHECK(info.params.at("tree_block") == "72");
  std::vector<SymmetryAxis> axes = plan->symmetries();
  REQUIRE(axes.size() == 2);
  CHECK(axes[0].order == 36);
  CHECK(axes[1].order == 2);
  CHECK(axes[1].rank[0] == 72);
  std::size_t compared = 0;
  for (const SymmetryAxis& a : axes) CHECK(collkit::plan::testing::axis_holds(*plan, a, compared));
  CHECK(compared > 100000);
  SimResult predicted = simulate(*plan, t);
  double bound = lower_bound(req, t).time_us();
  AlgoOptions sym = opt;
  sym.inter = "symmetric";
  double pattern_predicted = simulate(*generate("synth", req, &t, sym), t).time_us;
  double over_bound_predicted = predicted.time_us / bound;  // simulated over the bound; no clock is read
  MESSAGE("gb200-nvl72 x2 AllGather 1 GiB: " << over_bound_predicted << " x the bound (host 0's pattern " << pattern_predicted / bound
                                             << "), folded by " << predicted.folded);
  CHECK(predicted.folded == 72);
  CHECK(over_bound_predicted >= 1 - 1e-9);
  CHECK(over_bound_predicted <= 1.05);
  CHECK(predicted.time_us < pattern_predicted * 0.9);
}

TEST_CASE("synth root trees relayed through host memory: Broadcast and Reduce take every rank's in over its star and its host link") {
  // 8 GPUs in 4 pairs on one NVSwitch (900 GB/s each) and a CPU per pair (C2C, 225 each way): the
  // root's trees over the star alone reach 900 GB/s; relayed through the CPUs, a fifth of them
  // through the root's twin first, every rank takes in over both links (the bound's 1125).
  topo::Topology t = superchips(4);
  const int p = 8;
  std::optional<std::vector<std::vector<int>>> groups = synth::star_groups(t, p);
  REQUIRE(groups);
  synth::ArcPaths paths(t);
  std::size_t checked = 0;
  for (int root : {0, 5}) {
    CAPTURE(root);
    synth::HostTrees star = synth::star_relay_root_trees(paths, p, *groups, root, 5, {0, 1, 0, 1, 0, 1, 1});
    synth::HostTrees relayed = synth::star_relay_root_trees(paths, p, *groups, root, 5, {2, 5, 2, 5, 1, 5, 1});
    REQUIRE(star.trees.size() == 6 * 5);  // k a head: every rank outside the root's pair
    REQUIRE(relayed.trees.size() == 6 * 5);
    CHECK(star.per_root_gbps == doctest::Approx(900).epsilon(1e-9));
    int via = 0;
    for (std::size_t i = 0; i < relayed.trees.size(); ++i)
      for (int r = 0; r < p; ++r) {
        // Every rank leads to the root; an arc staged through host memory joins a pair.
        int steps = 0;
        for (int x = r; x != root && x >= 0 && steps <= p; x = relayed.trees[i][static_cast<std::size_t>(x)]) ++steps;
        CHECK(steps <= 4);  // the root, its twin through host memory, the head, a pair's first and through host memory its second
        int up = relayed.trees[i][static_cast<std::size_t>(r)];
        CHECK((r == root) == (up < 0));
        if (relayed.host[i][static_cast<std::size_t>(r)]) {
          CHECK(up / 2 == r / 2);
          via += up == root ? 1 : 0;
        }
        ++checked;
      }
    CHECK(via == 6);  // a fifth of the trees first through the root's twin
    MESSAGE("8 GPUs in 4 pairs, root " << root << ": over the star " << star.per_root_gbps << " GB/s, relayed " << relayed.per_root_gbps);
    CHECK(relayed.per_root_gbps == doctest::Approx(1125).epsilon(1e-9));  // the bound's in-bandwidth, 900 + 225
  }
  CHECK(checked == 2 * 30 * 8);
  // Malformed shares and an absent root make no trees.
  CHECK(synth::star_relay_root_trees(paths, p, *groups, 0, 1, {1, 0, 1, 1, 1, 5, 1}).trees.empty());
  CHECK(synth::star_relay_root_trees(paths, p, *groups, p, 1, {2, 5, 2, 5, 1, 5, 1}).trees.empty());

  // The plans synth lays out at 1 GiB take them, verify, and simulate past what the star alone
  // can carry (1.25 x the bound). Predictions; no clock is read. A small one runs on data.
  int plans = 0;
  for (Collective coll : {Collective::Broadcast, Collective::Reduce}) {
    CAPTURE(coll);
    Request req{coll, std::uint64_t{1} << 30, p, 3};
    auto plan = generate("synth", req, &t, {});
    const PlanInfo& info = plan->info();
    REQUIRE(info.params.count("host_arcs"));
    REQUIRE(info.params.count("via"));
    CHECK(std::count(info.channel_paths.begin(), info.channel_paths.end(), ChannelPath::Host) > 0);
    CHECK(verify(*plan).ok);
    double over_bound_predicted = simulate(*plan, t).time_us / lower_bound(req, t).time_us();  // a model figure; no clock is read
    MESSAGE(to_string(coll) << " 1 GiB from rank 3: " << over_bound_predicted << " x the bound");
    CHECK(over_bound_predicted >= 1 - 1e-9);
    CHECK(over_bound_predicted <= 1.1);
    ++plans;
    PlanInfo small = info;  // the same trees and chunks, a float pair a chunk
    small.req.bytes = std::uint64_t{8} * info.in_chunks;
    CHECK(collkit::plan::testing::check_plan(GeneratedPlan(small, algorithm("synth"))).ok);
  }
  CHECK(plans == 2);
}

TEST_CASE("synth root trees relayed through host memory: one GB200 NVL72 rack's Broadcast packs at the bound") {
  // 72 GPUs: a root's trees over the NVSwitch alone reach 900 GB/s (1.25 x the bound); through
  // each superchip's Grace, 70 trees (one a head), two fifths relaying each pair and a fifth
  // through the root's twin, pack at the bound's 1125 exactly. 64 chunks a tree: the test's
  // pipeline (the default lays out 256 too). Predictions; no clock is read.
  topo::Topology t = collkit::topo::synth({"gb200-nvl72", 1, ""});
  const int p = 72;
  Request req{Collective::Broadcast, std::uint64_t{1} << 30, p, 0};
  std::string why;
  CHECK(algorithm("synth").supports(req, &t, &why));
  CHECK(algorithm("synth").in_auto(req, &t, &why));
  AlgoOptions opt;
  opt.pipeline = 64;
  auto plan = generate("synth", req, &t, opt);
  const PlanInfo& info = plan->info();
  CHECK(info.params.at("relay") == "2/5");
  CHECK(info.params.at("via") == "1/5");
  SynthInfo si = synth_info(*plan, &t, {});
  CHECK(si.packed_gbps == doctest::Approx(1125).epsilon(1e-9));
  CHECK(si.trees == 70);
  double over_bound_predicted = simulate(*plan, t).time_us / lower_bound(req, t).time_us();  // a model figure; no clock is read
  MESSAGE("gb200-nvl72 Broadcast 1 GiB at 64 chunks a tree: " << over_bound_predicted << " x the bound");
  CHECK(over_bound_predicted >= 1 - 1e-9);
  CHECK(over_bound_predicted <= 1.05);
  CHECK(verify(*plan).ok);
}

TEST_CASE("synth host arcs: two-level stars carry what the stars carry in a fraction of the channels") {
  // Two GB200 NVL72 racks: a rack's star takes 71 children and a tree 73 channels, so eight trees
  // a root (84 k channels) do not fit a plan; with the entry's children in two levels (8 from the
  // entry, the rest from those) and the racks in a heap, each rank forwards what the entry sent
  // before, the loads per link stay as they were and a tree takes about 10 channels.
  topo::Topology t = collkit::topo::synth({"gb200-nvl72", 2, ""});
  const int p = 144;
  std::optional<std::vector<std::vector<int>>> groups = synth::star_groups(t, p);
  REQUIRE(groups);
  std::size_t checked = 0;
  for (int relay : {0, 1}) {
    CAPTURE(relay);
    synth::HostTrees star = synth::star_relay_trees(t, p, *groups, 2, relay), two = synth::star_relay_trees(t, p, *groups, 2, relay, 8);
    REQUIRE(two.trees.size() == star.trees.size());
    CHECK(two.per_root_gbps == doctest::Approx(star.per_root_gbps).epsilon(1e-9));
    std::vector<std::vector<char>> none;
    int star_slots = 0, two_slots = 0;
    for (std::size_t i = 0; i < two.trees.size(); ++i) {
      std::vector<int> kids(p, 0), star_kids(p, 0);
      for (int r = 0; r < p; ++r) {
        int root = static_cast<int>(i) / 2, steps = 0;
        for (int x = r; x != root && x >= 0 && steps <= p; x = two.trees[i][static_cast<std::size_t>(x)]) ++steps;
        CHECK(steps <= 4);  // rail, entry's child, its child, through host memory to the twin
        if (int up = two.trees[i][static_cast<std::size_t>(r)]; up >= 0)
          two_slots = std::max(two_slots, ++kids[static_cast<std::size_t>(up)]);
        if (int up = star.trees[i][static_cast<std::size_t>(r)]; up >= 0)
          star_slots = std::max(star_slots, ++star_kids[static_cast<std::size_t>(up)]);
        ++checked;
      }
    }
    MESSAGE("relay " << relay << ": " << two.per_root_gbps << " GB/s a root, most children " << star_slots << " -> " << two_slots);
    CHECK(star_slots == 72);  // the root: 71 in its rack, one rail
    CHECK(two_slots <= 10);   // 8 in the rack, one rail, one through host memory
  }
  CHECK(checked == 2 * 288 * 144);
  // Two trees a root share by whole trees a half or nothing; relaying two of every five pairs in
  // each tree, by turns from the root's pair, carries more than either, and every tree relays
  // 14 or 15 of a rack's 35 other pairs.
  synth::HostTrees none = synth::star_relay_trees(t, p, *groups, 2, 0, 8), half = synth::star_relay_trees(t, p, *groups, 2, 1, 8);
  synth::HostTrees turns = synth::star_relay_trees(t, p, *groups, 2, 2, 8, 5);
  MESSAGE("two trees a root: none relayed " << none.per_root_gbps << " GB/s, one of two " << half.per_root_gbps << ", 2 of 5 pairs "
                                            << turns.per_root_gbps);
  CHECK(turns.per_root_gbps > std::max(none.per_root_gbps, half.per_root_gbps) * 1.1);
  int trees_seen = 0;
  for (const std::vector<char>& staged : turns.host) {
    auto n = std::count(staged.begin(), staged.end(), 1);
    CHECK(n >= 2 * 14);  // on each rack
    CHECK(n <= 2 * 15);
    ++trees_seen;
  }
  CHECK(trees_seen == 288);
  // Eight trees a root now fit, laid out as two-level stars, which state both symmetries and fold
  // by 72. Predictions; no clock is read.
  Request req = gb200_x2_allgather();
  auto plan = generate("synth", req, &t, trees_of(8, 16));
  const PlanInfo& info = plan->info();
  CHECK(info.params.at("arcs") == "host_fan");
  CHECK(info.channels < 65535);
  REQUIRE(plan->symmetries().size() == 2);
  SimResult predicted = simulate(*plan, t);
  CHECK(predicted.folded == 72);
  double over_bound_predicted = predicted.time_us / lower_bound(req, t).time_us();  // simulated over the bound; no clock is read
  MESSAGE("gb200-nvl72 x2 AllGather 1 GiB, 8 two-level trees a root: " << over_bound_predicted << " x the bound");
  CHECK(over_bound_predicted >= 1 - 1e-9);
  CHECK(over_bound_predicted <= 1.03);
}
