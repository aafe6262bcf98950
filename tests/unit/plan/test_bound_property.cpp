// Property test: no plan the simulator runs beats the lower bound.
//
// Random uneven topologies (link rates over two orders of magnitude, ranks behind thin links,
// switches, hosts on a fabric, small tori, GPU meshes beside a switch, ranks sharing a vertex;
// 2-16 ranks), every collective, every algorithm that supports the request, sizes from tiny
// (latency binds) to large (bandwidth binds), and hand-made plans that do what no generated one
// does (direct sends to every peer at once on separate channels, relays through a third GPU).
// Every plan is verified, then simulated under both link models; each prediction must be at
// least the bound (to 1e-9 relative).
//
// CI runs 200 topologies from a fixed seed. More: COLLKIT_BOUND_CASES=1000 (and another seed with
// COLLKIT_BOUND_SEED=N), e.g.
//   COLLKIT_BOUND_CASES=1000 build/bin/collkit_unit_tests -tc="bound property*"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "algorithms/common.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/bounds.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/verify.h"
#include "plan/plan_testing.h"
#include "plan/sim_topologies.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
namespace topo = collkit::topo;

namespace {

using Rng = std::mt19937_64;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* s = std::getenv(name);
  return s && *s ? std::strtoull(s, nullptr, 10) : fallback;
}

int uniform_int(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
double uniform(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
bool chance(Rng& rng, double p) { return uniform(rng, 0, 1) < p; }
/// Link rates spread evenly over orders of magnitude.
double log_uniform(Rng& rng, double lo, double hi) { return lo * std::pow(hi / lo, uniform(rng, 0, 1)); }
/// Latencies: sometimes 0, else up to 2 us.
double latency(Rng& rng) { return chance(rng, 0.15) ? 0.0 : uniform(rng, 0.05, 2.0); }

topo::VertexId vertex(topo::Topology& t, const std::string& id, topo::VertexKind kind, const std::string& host = "") {
  return t.add_vertex(make_vertex(id, kind, host));
}
void link(topo::Topology& t, topo::VertexId a, topo::VertexId b, Rng& rng, double lo = 1, double hi = 100) {
  t.add_link(make_link(a, b, log_uniform(rng, lo, hi), latency(rng)));
}

/// GPUs on one switch, some behind a thin extra hop (a PCIe switch on a 1-5 GB/s link).
topo::Topology star(Rng& rng) {
  topo::Topology t;
  t.name = "star";
  auto sw = vertex(t, "sw", topo::VertexKind::NetSwitch);
  int p = uniform_int(rng, 2, 16);
  for (int i = 0; i < p; ++i) {
    auto g = vertex(t, "g" + std::to_string(i), topo::VertexKind::Gpu);
    if (chance(rng, 0.25)) {
      auto px = vertex(t, "px" + std::to_string(i), topo::VertexKind::PciSwitch);
      link(t, g, px, rng, 1, 5);
      link(t, px, sw, rng);
    } else {
      link(t, g, sw, rng);
    }
    t.add_rank(g);
  }
  return t;
}

/// 2-4 hosts (an NVSwitch, 1-4 GPUs, one or two NICs each) on a fabric of one switch or two
/// leaves under a spine; every host the same number of GPUs (so `hier` applies), rates uneven.
topo::Topology hosts(Rng& rng) {
  topo::Topology t;
  t.name = "hosts";
  int nh = uniform_int(rng, 2, 4), g = uniform_int(rng, 1, 16 / nh);
  std::vector<topo::VertexId> fabric;
  if (chance(rng, 0.5)) {
    fabric.push_back(vertex(t, "core", topo::VertexKind::NetSwitch));
  } else {
    auto spine = vertex(t, "spine", topo::VertexKind::NetSwitch);
    for (int l = 0; l < 2; ++l) {
      fabric.push_back(vertex(t, "leaf" + std::to_string(l), topo::VertexKind::NetSwitch));
      link(t, fabric.back(), spine, rng, 2, 200);
    }
  }
  for (int h = 0; h < nh; ++h) {
    std::string host = "h" + std::to_string(h);
    auto nvs = vertex(t, host + "/nvs", topo::VertexKind::NvSwitch, host);
    int nics = uniform_int(rng, 1, 2);
    for (int k = 0; k < nics; ++k) {
      auto nic = vertex(t, host + "/nic" + std::to_string(k), topo::VertexKind::Nic, host);
      link(t, nvs, nic, rng, 10, 100);
      link(t, nic, fabric[static_cast<std::size_t>((h + k) % static_cast<int>(fabric.size()))], rng, 1, 50);
    }
    for (int i = 0; i < g; ++i) {
      auto gpu = vertex(t, host + "/g" + std::to_string(i), topo::VertexKind::Gpu, host);
      link(t, gpu, nvs, rng, 10, 400);
      t.add_rank(gpu);
    }
  }
  return t;
}

/// A small torus of routers (2x2 to 3x3), one or two GPUs on each.
topo::Topology torus(Rng& rng) {
  topo::Topology t;
  t.name = "torus";
  int rows = uniform_int(rng, 2, 3), cols = uniform_int(rng, 2, 3);
  std::vector<topo::VertexId> router;
  for (int i = 0; i < rows * cols; ++i) router.push_back(vertex(t, "r" + std::to_string(i), topo::VertexKind::NetSwitch));
  auto at = [&](int r, int c) { return router[static_cast<std::size_t>(r * cols + c)]; };
  // A dimension of 2 has one link between its two routers, not a doubled wrap-around.
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      if (c + 1 < cols || cols > 2) link(t, at(r, c), at(r, (c + 1) % cols), rng);
      if (r + 1 < rows || rows > 2) link(t, at(r, c), at((r + 1) % rows, c), rng);
    }
  int gpus = 0;
  for (int i = 0; i < rows * cols && gpus < 16; ++i)
    for (int k = uniform_int(rng, 1, 2); k > 0 && gpus < 16; --k) {
      auto g = vertex(t, "g" + std::to_string(gpus++), topo::VertexKind::Gpu);
      link(t, g, router[static_cast<std::size_t>(i)], rng);
      t.add_rank(g);
    }
  return t;
}

/// GPUs joined pairwise (a full mesh, as xGMI) and also through a switch: routes take the widest
/// way, so relaying through a third GPU can be faster in latency than a route.
topo::Topology mesh(Rng& rng) {
  topo::Topology t;
  t.name = "mesh";
  int p = uniform_int(rng, 2, 8);
  auto sw = vertex(t, "sw", topo::VertexKind::NvSwitch);
  std::vector<topo::VertexId> g;
  for (int i = 0; i < p; ++i) {
    g.push_back(vertex(t, "g" + std::to_string(i), topo::VertexKind::Gpu));
    t.add_link(make_link(g.back(), sw, log_uniform(rng, 1, 100), uniform(rng, 1, 4)));
    t.add_rank(g.back());
  }
  for (int i = 0; i < p; ++i)
    for (int j = i + 1; j < p; ++j)
      t.add_link(make_link(g[static_cast<std::size_t>(i)], g[static_cast<std::size_t>(j)], log_uniform(rng, 1, 100), uniform(rng, 0, 1)));
  return t;
}

/// 2-4 vertices on a switch holding 1-4 ranks each; copies between co-located ranks are free or
/// at a random local bandwidth.
topo::Topology colocated(Rng& rng) {
  topo::Topology t;
  t.name = "colocated";
  auto sw = vertex(t, "sw", topo::VertexKind::NetSwitch);
  int nv = uniform_int(rng, 1, 4), ranks = 0;
  for (int i = 0; i < nv; ++i) {
    auto v = vertex(t, "v" + std::to_string(i), chance(rng, 0.5) ? topo::VertexKind::Gpu : topo::VertexKind::Cpu);
    if (chance(rng, 0.5)) t.mutable_vertex(v).local_bw_gbps = log_uniform(rng, 5, 500);
    link(t, v, sw, rng);
    for (int k = uniform_int(rng, 1, 4); k > 0; --k, ++ranks) t.add_rank(v);
  }
  if (ranks < 2) t.add_rank(t.rank_vertex(0));
  return t;
}

topo::Topology random_topology(Rng& rng, std::size_t index) {
  switch (index % 5) {
    case 0: return star(rng);
    case 1: return hosts(rng);
    case 2: return torus(rng);
    case 3: return mesh(rng);
    default: return colocated(rng);
  }
}

// ---- hand-made plans ------------------------------------------------------------------------
// Each transfer s -> d has a channel of its own, s * p + d, so every rank sends to all of its
// peers at once; local work runs on the diagonal channel d * p + d.

struct Programs {
  int p;
  std::vector<std::vector<Op>> ops;
  explicit Programs(int n) : p(n), ops(static_cast<std::size_t>(n)) {}
  std::uint16_t lane(int s, int d) const { return static_cast<std::uint16_t>(s * p + d); }
  std::uint32_t add(int r, Op op) {
    auto& prog = ops[static_cast<std::size_t>(r)];
    prog.push_back(op);
    return static_cast<std::uint32_t>(prog.size() - 1);
  }
  ExplicitPlan plan(Request req, std::uint32_t in_chunks, std::uint32_t out_chunks, std::uint32_t scratch_chunks = 0,
                    std::uint64_t scratch_bytes = 0) {
    ExplicitPlan plan = hand_plan(req, in_chunks, out_chunks, static_cast<std::uint16_t>(p * p), std::move(ops));
    plan.mutable_info().scratch_chunks = scratch_chunks;
    plan.mutable_info().scratch_bytes = scratch_bytes;
    return plan;
  }
};

/// AllGather: every rank sends its shard to every peer at once.
ExplicitPlan allgather_direct(int p, std::uint64_t bytes) {
  Programs g(p);
  for (int r = 0; r < p; ++r) {
    g.add(r, algo::copy(algo::in(0), algo::out(static_cast<std::uint32_t>(r)), 1, g.lane(r, r)));
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      g.add(r, algo::send(q, algo::in(0), 1, g.lane(r, q)));
      g.add(r, algo::recv(q, algo::out(static_cast<std::uint32_t>(q)), 1, g.lane(q, r)));
    }
  }
  return g.plan({Collective::AllGather, bytes, p, 0}, 1, static_cast<std::uint32_t>(p));
}

/// AllGather through relays: rank r hands its shard to r + 1, which forwards it to everyone else.
ExplicitPlan allgather_relay(int p, std::uint64_t bytes) {
  Programs g(p);
  for (int r = 0; r < p; ++r) {
    int next = (r + 1) % p, prev = (r + p - 1) % p;
    g.add(r, algo::copy(algo::in(0), algo::out(static_cast<std::uint32_t>(r)), 1, g.lane(r, r)));
    g.add(r, algo::send(next, algo::in(0), 1, g.lane(r, next)));
    std::uint32_t got = g.add(r, algo::recv(prev, algo::out(static_cast<std::uint32_t>(prev)), 1, g.lane(prev, r)));
    for (int q = 0; q < p; ++q) {
      if (q == r || q == prev) continue;
      Op fwd = algo::send(q, algo::out(static_cast<std::uint32_t>(prev)), 1, g.lane(r, q));
      fwd.depend_on(got);
      g.add(r, fwd);
    }
    // From every s but r's own predecessor, shard s - 1 arrives relayed by s.
    for (int s = 0; s < p; ++s) {
      int origin = (s + p - 1) % p;
      if (s == r || origin == r) continue;
      g.add(r, algo::recv(s, algo::out(static_cast<std::uint32_t>(origin)), 1, g.lane(s, r)));
    }
  }
  return g.plan({Collective::AllGather, bytes, p, 0}, 1, static_cast<std::uint32_t>(p));
}

/// AllReduce: every rank sends its whole input to every peer at once and sums what it gets.
ExplicitPlan allreduce_direct(int p, std::uint64_t bytes) {
  Programs g(p);
  for (int r = 0; r < p; ++r) {
    g.add(r, algo::copy(algo::in(0), algo::out(0), 1, g.lane(r, r)));
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      g.add(r, algo::send(q, algo::in(0), 1, g.lane(r, q)));
      Op sum = algo::reduce(algo::scratch(static_cast<std::uint32_t>(q)), algo::out(0), 1, g.lane(r, r));
      sum.depend_on(g.add(r, algo::recv(q, algo::scratch(static_cast<std::uint32_t>(q)), 1, g.lane(q, r))));
      g.add(r, sum);
    }
  }
  return g.plan({Collective::AllReduce, bytes, p, 0}, 1, 1, static_cast<std::uint32_t>(p), bytes * static_cast<std::uint64_t>(p));
}

/// AlltoAll: every rank sends each peer its piece at once.
ExplicitPlan alltoall_direct(int p, std::uint64_t bytes) {
  Programs g(p);
  for (int r = 0; r < p; ++r) {
    auto mine = static_cast<std::uint32_t>(r);
    g.add(r, algo::copy(algo::in(mine), algo::out(mine), 1, g.lane(r, r)));
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      g.add(r, algo::send(q, algo::in(static_cast<std::uint32_t>(q)), 1, g.lane(r, q)));
      g.add(r, algo::recv(q, algo::out(static_cast<std::uint32_t>(q)), 1, g.lane(q, r)));
    }
  }
  return g.plan({Collective::AlltoAll, bytes, p, 0}, static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(p));
}

/// Broadcast: the root sends to every rank at once.
ExplicitPlan broadcast_direct(int p, std::uint64_t bytes, int root) {
  Programs g(p);
  g.add(root, algo::copy(algo::in(0), algo::out(0), 1, g.lane(root, root)));
  for (int q = 0; q < p; ++q) {
    if (q == root) continue;
    g.add(root, algo::send(q, algo::in(0), 1, g.lane(root, q)));
    g.add(q, algo::recv(root, algo::out(0), 1, g.lane(root, q)));
  }
  return g.plan({Collective::Broadcast, bytes, p, root}, 1, 1);
}

/// Reduce: every rank sends to the root at once; the root sums as inputs arrive.
ExplicitPlan reduce_direct(int p, std::uint64_t bytes, int root) {
  Programs g(p);
  g.add(root, algo::copy(algo::in(0), algo::out(0), 1, g.lane(root, root)));
  for (int q = 0; q < p; ++q) {
    if (q == root) continue;
    g.add(q, algo::send(root, algo::in(0), 1, g.lane(q, root)));
    Op sum = algo::reduce(algo::scratch(static_cast<std::uint32_t>(q)), algo::out(0), 1, g.lane(root, root));
    sum.depend_on(g.add(root, algo::recv(q, algo::scratch(static_cast<std::uint32_t>(q)), 1, g.lane(q, root))));
    g.add(root, sum);
  }
  return g.plan({Collective::Reduce, bytes, p, root}, 1, 1, static_cast<std::uint32_t>(p), bytes * static_cast<std::uint64_t>(p));
}

std::vector<std::unique_ptr<Plan>> hand_made(const Request& req) {
  std::vector<std::unique_ptr<Plan>> out;
  auto keep = [&](ExplicitPlan plan) { out.push_back(std::make_unique<ExplicitPlan>(std::move(plan))); };
  int p = req.nranks;
  switch (req.coll) {
    case Collective::AllGather:
      keep(allgather_direct(p, req.bytes));
      if (p >= 3) keep(allgather_relay(p, req.bytes));
      break;
    case Collective::AllReduce: keep(allreduce_direct(p, req.bytes)); break;
    case Collective::AlltoAll: keep(alltoall_direct(p, req.bytes)); break;
    case Collective::Broadcast: keep(broadcast_direct(p, req.bytes, req.root)); break;
    case Collective::Reduce: keep(reduce_direct(p, req.bytes, req.root)); break;
    case Collective::ReduceScatter: break;
  }
  return out;
}

constexpr Collective kCollectives[] = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                       Collective::AlltoAll,  Collective::Broadcast,     Collective::Reduce};

}  // namespace

TEST_CASE("bound property: no plan on a random uneven topology beats the lower bound") {
  const std::uint64_t cases = env_or("COLLKIT_BOUND_CASES", 200), seed = env_or("COLLKIT_BOUND_SEED", 20261204);
  Rng rng(seed);
  std::map<std::string, std::size_t> checked;  // per collective, and "explicit"
  std::size_t checks = 0, topologies = 0, synth_plans = 0;
  double tightest = 1e300;  // smallest prediction / bound seen: how close the bound comes
  for (std::size_t k = 0; k < cases; ++k) {
    topo::Topology t = random_topology(rng, k);
    t.check_connected();
    ++topologies;
    int p = uniform_int(rng, 2, static_cast<int>(t.num_ranks()));
    if (static_cast<std::size_t>(p) < t.num_ranks() && chance(rng, 0.5)) p = static_cast<int>(t.num_ranks());
    CAPTURE(k);
    CAPTURE(t.name);
    CAPTURE(p);
    for (Collective coll : kCollectives) {
      int root = facts(coll).has_root ? uniform_int(rng, 0, p - 1) : 0;
      // 8 bytes a rank (latency binds) to 4 MiB a rank (bandwidth binds); multiples of p.
      for (std::uint64_t per_rank : {std::uint64_t{8}, std::uint64_t{16} << 10, std::uint64_t{4} << 20}) {
        Request req{coll, per_rank * static_cast<std::uint64_t>(p), p, root};
        Bound bound = lower_bound(req, t);
        std::vector<std::unique_ptr<Plan>> plans = hand_made(req);
        std::size_t hand = plans.size();
        for (const Algorithm* a : algorithms()) {
          // synth's plans carry p k x fan-out channels, whose max-min simulation costs more than
          // every other algorithm's together (20 of this test's 32 s): it is checked on every
          // fourth topology (50 at the default 200).
          if (a->name() == "synth" && k % 4 != 0) continue;
          if (a->supports(req, &t, nullptr)) {
            plans.push_back(generate(a->name(), req, &t));
            if (a->name() == "synth") ++synth_plans;
          }
        }
        for (std::size_t i = 0; i < plans.size(); ++i) {
          const Plan& plan = *plans[i];
          INFO(describe_plan(plan.info()));
          INFO("bound " << bound.time_us() << " us (bandwidth " << bound.bandwidth_us << ", latency " << bound.latency_us
                        << "): " << bound.witness);
          VerifyResult v = verify(plan);
          REQUIRE_MESSAGE(v.ok, v.error);
          for (LinkModel model : {LinkModel::Queue, LinkModel::MaxMin}) {
            SimOptions opt;
            opt.model = model;
            double us = simulate(plan, t, opt).time_us;
            INFO((model == LinkModel::Queue ? "queue" : "maxmin") << ": predicted " << us << " us");
            CHECK(us >= bound.time_us() * (1 - 1e-9));
            if (bound.time_us() > 0) tightest = std::min(tightest, us / bound.time_us());
            ++checks;
            ++checked[i < hand ? "explicit" : std::string(to_string(coll))];
          }
        }
      }
    }
  }
  MESSAGE("bound property: " << topologies << " topologies, " << checks << " predictions checked; tightest prediction / bound "
                             << tightest);
  CHECK(topologies == cases);
  for (Collective coll : kCollectives) CHECK(checked[std::string(to_string(coll))] > 0);
  CHECK(checked["explicit"] > 0);
  MESSAGE("bound property: " << synth_plans << " synth plans among them");
  CHECK(synth_plans > 0);
}
