// The symmetries algorithms state hold op for op, and the simulator's folding of them gives the
// unfolded result exactly (simulate_symmetry.h).

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "collkit/plan/algorithm.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/simulate.h"
#include "collkit/topo/synth.h"
#include "simulate_symmetry.h"

using namespace collkit::plan;
namespace topo = collkit::topo;

namespace {

// The ops of thread (r, c), in program order, with their index in the rank's program.
std::vector<std::pair<std::uint32_t, Op>> thread(const Plan& plan, int r, int c) {
  std::vector<std::pair<std::uint32_t, Op>> out;
  std::vector<Op> ops = plan.program(r);
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].channel == c) out.emplace_back(static_cast<std::uint32_t>(i), ops[i]);
  return out;
}

// Position of op `index` of rank r within its channel.
std::uint32_t position(const std::vector<Op>& ops, std::uint32_t index) {
  std::uint32_t pos = 0;
  for (std::uint32_t i = 0; i < index; ++i) pos += ops[i].channel == ops[index].channel ? 1 : 0;
  return pos;
}

// Checks one axis on every thread; returns the ops compared.
std::size_t check_axis(const Plan& plan, const SymmetryAxis& a) {
  std::size_t compared = 0;
  int p = plan.nranks(), C = plan.info().channels;
  for (int r = 0; r < p; ++r) {
    std::vector<Op> mine = plan.program(r), theirs = plan.program(a.rank[static_cast<std::size_t>(r)]);
    for (int c = 0; c < C; ++c) {
      auto x = thread(plan, r, c), y = thread(plan, a.rank[static_cast<std::size_t>(r)], a.channel[static_cast<std::size_t>(c)]);
      REQUIRE(x.size() == y.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const Op &o = x[i].second, &q = y[i].second;
        CHECK(o.type == q.type);
        if (o.type == OpType::Send || o.type == OpType::Recv || o.type == OpType::RecvReduce)
          CHECK(a.rank[static_cast<std::size_t>(o.peer)] == q.peer);
        // Equal bytes, or within one element a chunk where the size does not divide.
        auto moved = [&](const Op& op) {
          bool in = op.type == OpType::Recv || op.type == OpType::RecvReduce;
          return static_cast<double>(chunk_bytes(plan.info(), in ? op.dst.buf : op.src.buf, in ? op.dst.chunk : op.src.chunk, op.count));
        };
        CHECK(std::abs(moved(o) - moved(q)) <= o.count * plan.info().req.elem_bytes);
        REQUIRE(o.num_deps() == q.num_deps());
        for (std::size_t k = 0; k < o.num_deps(); ++k) {
          CHECK(a.channel[mine[o.deps[k]].channel] == theirs[q.deps[k]].channel);
          CHECK(position(mine, o.deps[k]) == position(theirs, q.deps[k]));
        }
        ++compared;
      }
    }
  }
  return compared;
}

struct Case {
  const char* node;
  int hosts;
  const char* fabric;
};
const Case kCases[] = {{"dgx-h100", 1, ""},
                       {"dgx-h100", 4, "fat-tree:rails=8,leaf_radix=4"},
                       {"dgx-a100", 2, "fat-tree"},
                       {"mi300x", 2, "fat-tree"},
                       {"hgx-h200", 4, "torus:dims=2x2"}};

}  // namespace

TEST_CASE("symmetry: every axis an algorithm states holds op for op") {
  std::size_t axes = 0, compared = 0;
  for (const Case& k : kCases) {
    topo::Topology t = topo::synth({k.node, k.hosts, k.fabric});
    for (const Algorithm* a : algorithms())
      for (Collective c :
           {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll, Collective::Broadcast}) {
        Request req{c, std::uint64_t{3} << 20, static_cast<int>(t.num_ranks()), 0};
        // synth states no symmetry (no axis to check), and lays each plan out by simulating
        // several: most of this test's time, under the sanitizers minutes, for no check.
        if (a->name() == "synth" || !a->supports(req, &t, nullptr)) continue;
        std::vector<AlgoOptions> variants{{}};
        for (const char* inter : {"ring", "rhd", "rd"}) {
          AlgoOptions o;
          o.inter = inter;
          o.channels = 2;
          if (a->name() == "hier" && c == Collective::AllReduce) variants.push_back(o);
        }
        if (a->name() == "ring") {
          AlgoOptions both;
          both.channels = 4;
          both.bidirectional = true;
          variants.push_back(both);
        }
        for (const AlgoOptions& o : variants) {
          auto plan = generate(a->name(), req, &t, o);
          for (const SymmetryAxis& ax : plan->symmetries()) {
            std::string where = std::string(k.node) + " x" + std::to_string(k.hosts) + " " + std::string(a->name());
            CAPTURE(where);
            compared += check_axis(*plan, ax);
            ++axes;
          }
        }
      }
  }
  CHECK(axes >= 40);
  CHECK(compared > 10000);
}

TEST_CASE("symmetry: a folded simulation gives the unfolded one's result") {
  std::size_t folded = 0, cases = 0, shifted = 0;
  for (const Case& k : kCases) {
    topo::Topology t = topo::synth({k.node, k.hosts, k.fabric});
    for (const Algorithm* a : algorithms())
      for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll})
        for (std::uint64_t bytes :
             {std::uint64_t{3} << 10, std::uint64_t{3} << 14, std::uint64_t{3} << 18, std::uint64_t{3} << 22, std::uint64_t{3} << 26}) {
          Request req{c, bytes, static_cast<int>(t.num_ranks()), 0};
          // synth states no symmetry (nothing of its to fold), and lays each plan out by simulating
          // several candidates: under the clang sanitizers that took this test past 12 minutes.
          if (a->name() == "synth" || !a->supports(req, &t, nullptr)) continue;
          auto plan = generate(a->name(), req, &t);
          for (LinkModel m : {LinkModel::Queue, LinkModel::MaxMin}) {
            SimOptions on, off;
            on.model = off.model = m;
            off.fold_symmetry = false;
            SimResult x = simulate(*plan, t, on), y = simulate(*plan, t, off);
            std::string where = std::string(k.node) + " x" + std::to_string(k.hosts) + " " + std::string(a->name()) + " " +
                                std::string(to_string(c)) + " " + std::to_string(bytes) + (m == LinkModel::Queue ? " queue" : " maxmin");
            CAPTURE(where);
            // MaxMin shares every link fairly, so the folded run is the unfolded one exactly. Queue
            // serves simultaneous transfers on a link in turn, in an order that folding changes
            // (which of 8 channels' transfers through a GPU's port goes first): a different but
            // equally valid run, within 2% (1.1% the worst seen, at mid sizes).
            if (m == LinkModel::MaxMin) CHECK(x.time_us == doctest::Approx(y.time_us).epsilon(1e-12));
            else CHECK(x.time_us == doctest::Approx(y.time_us).epsilon(0.02));
            CHECK(x.events == y.events);
            CHECK(y.folded == 1);
            folded += x.folded > 1 ? 1 : 0;
            // pairwise and direct fold by the rank shift (shift_axes) where the routes agree.
            if ((a->name() == "pairwise" || a->name() == "direct") && x.folded > 1) ++shifted;
            ++cases;
          }
        }
  }
  CHECK(folded >= 10);
  CHECK(shifted >= 4);
  CHECK(cases > 50);
}

TEST_CASE("symmetry: sizes that do not divide into chunks still fold") {
  // 2 x dgx-h100 ring AllReduce of 3 MiB + 1000 bytes: 128 chunks of 24583 or 24584 bytes. The
  // image threads move bytes within one in 24000 of each other, but the unfolded run's channels
  // then finish their steps a hair apart, which reorders its events: within 2% (1.3% seen).
  topo::Topology t = topo::synth({"dgx-h100", 2, "fat-tree"});
  std::size_t checked = 0;
  for (const char* algo : {"ring", "hier", "rhd"})
    for (LinkModel m : {LinkModel::Queue, LinkModel::MaxMin}) {
      auto plan = generate(algo, Request{Collective::AllReduce, (std::uint64_t{3} << 20) + 1000, 16, 0}, &t);
      SimOptions on, off;
      on.model = off.model = m;
      off.fold_symmetry = false;
      SimResult x = simulate(*plan, t, on), y = simulate(*plan, t, off);
      CAPTURE(std::string(algo));
      CAPTURE(m == LinkModel::MaxMin);
      CHECK(x.folded > 1);
      CHECK(x.time_us == doctest::Approx(y.time_us).epsilon(0.02));
      ++checked;
    }
  CHECK(checked == 6);
}

TEST_CASE("symmetry: a ring laid over leaves folds by whole leaves, not by the hosts of one") {
  // 16 DGX H100 on leaves of 4 ports: the ring is symmetric under a shift of 2 hosts and of one
  // channel onto the next, but routes map onto routes only under a shift of 4 hosts (one leaf).
  topo::Topology t = topo::synth({"dgx-h100", 16, "fat-tree:rails=8,leaf_radix=8"});
  auto plan = generate("ring", {Collective::AllReduce, std::uint64_t{1} << 30, 128, 0}, &t);
  SimResult r = simulate(*plan, t);
  CHECK(r.folded == 8 * 4);
  SimOptions off;
  off.fold_symmetry = false;
  CHECK(r.time_us == doctest::Approx(simulate(*plan, t, off).time_us).epsilon(1e-12));
}

TEST_CASE("symmetry: simulations sharing one route cache give what each gives alone") {
  // The planner simulates every candidate with one cache: a route kept from one plan must be
  // the route the next plan would have found, and a cache made for another topology is ignored.
  topo::Topology t = topo::synth({"dgx-a100", 4, "fat-tree:rails=8,leaf_radix=4"});
  topo::Topology other = topo::synth({"dgx-h100", 4, "fat-tree"});
  SimOptions shared, foreign;
  shared.routes = std::make_shared<topo::RouteCache>(t);
  foreign.routes = std::make_shared<topo::RouteCache>(other);
  std::size_t checked = 0;
  for (const Algorithm* a : algorithms())
    for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::AlltoAll}) {
      Request req{c, std::uint64_t{1} << 24, static_cast<int>(t.num_ranks()), 0};
      // synth's layouts simulate with their own caches while it is generated (a minute and more
      // under the sanitizers at 32 ranks); its plans' simulation is tested with synth.
      if (a->name() == "synth" || !a->supports(req, &t, nullptr)) continue;
      auto plan = generate(a->name(), req, &t);
      SimResult alone = simulate(*plan, t), with = simulate(*plan, t, shared), ignored = simulate(*plan, t, foreign);
      CAPTURE(std::string(a->name()) + " " + std::string(to_string(c)));
      CHECK(with.time_us == alone.time_us);
      CHECK(with.folded == alone.folded);
      CHECK(ignored.time_us == alone.time_us);
      ++checked;
    }
  CHECK(checked >= 12);
  CHECK(shared.routes->size() > 0);
  CHECK(foreign.routes->size() == 0);
}

TEST_CASE("symmetry: a fold cache shared by plans gives what a fresh fold gives") {
  // The planner's candidates and a shell session share one cache of route lists and
  // equivariance checks: a plan folded with it must fold as it does alone, and a cache kept
  // for other routes must not be used.
  topo::Topology t = topo::synth({"dgx-h100", 8, "fat-tree:rails=8,leaf_radix=4"});
  auto routes = std::make_shared<topo::RouteCache>(t);
  std::shared_ptr<sim::FoldCache> folds = fold_cache_for(routes);
  SimOptions shared;
  shared.routes = routes;
  shared.folds = folds;
  int p = static_cast<int>(t.num_ranks());
  std::size_t checked = 0, folded = 0;
  // Each plan twice, and knob variants that talk between the same pairs: the second lookups hit.
  for (int round = 0; round < 2; ++round)
    for (const char* name : {"ring", "hier", "rd", "rhd", "tree"})
      for (int pipeline : {0, 4}) {
        Request req{Collective::AllReduce, std::uint64_t{1} << 26, p, 0};
        AlgoOptions opt;
        opt.pipeline = pipeline;
        auto plan = generate(name, req, &t, opt);
        CAPTURE(std::string(name) + " pipeline " + std::to_string(pipeline));
        topo::RouteCache fresh_routes(t);
        std::optional<sim::Fold> fresh = sim::fold(*plan, t, fresh_routes), cached = sim::fold(*plan, t, *routes, folds.get());
        REQUIRE(fresh.has_value() == cached.has_value());
        if (fresh) {
          CHECK(fresh->rank == cached->rank);
          CHECK(fresh->channel == cached->channel);
          CHECK(fresh->rep == cached->rep);
          CHECK(fresh->elem == cached->elem);
          CHECK(fresh->ranks == cached->ranks);
          CHECK(fresh->resource == cached->resource);
          ++folded;
        }
        SimResult alone = simulate(*plan, t), with = simulate(*plan, t, shared);
        CHECK(with.time_us == alone.time_us);
        CHECK(with.folded == alone.folded);
        ++checked;
      }
  CHECK(checked == 20);
  CHECK(folded >= 8);
  CHECK(folds->hits() > 0);
  CHECK(folds->hits() < folds->lookups());
  // Made for other routes (even on the same topology): fold refuses it, simulate passes it by.
  auto other = std::make_shared<topo::RouteCache>(t);
  auto plan = generate("hier", {Collective::AllReduce, std::uint64_t{1} << 26, p, 0}, &t);
  CHECK_THROWS_AS(sim::fold(*plan, t, *other, folds.get()), std::logic_error);
  SimOptions foreign;
  foreign.routes = other;
  foreign.folds = folds;
  std::size_t before = folds->lookups();
  CHECK(simulate(*plan, t, foreign).time_us == simulate(*plan, t).time_us);
  CHECK(folds->lookups() == before);
}

TEST_CASE("symmetry: evaluate with a shell's kept caches answers as a fresh evaluate") {
  // A shell session keeps its routes and fold cache between questions: the second size asked
  // must get the candidates a new process gets.
  topo::Topology t = topo::synth({"dgx-h100", 4, "fat-tree:rails=8,leaf_radix=4"});
  SimOptions kept;
  kept.routes = std::make_shared<topo::RouteCache>(t);
  kept.folds = fold_cache_for(kept.routes);
  int p = static_cast<int>(t.num_ranks());
  std::size_t compared = 0;
  for (std::uint64_t bytes : {std::uint64_t{1} << 30, std::uint64_t{1} << 20}) {
    Request req{Collective::AllReduce, bytes, p, 0};
    Evaluation fresh = evaluate(req, t), again = evaluate(req, t, {}, kept);
    REQUIRE(fresh.candidates.size() == again.candidates.size());
    CHECK(fresh.best == again.best);
    CHECK(fresh.tried == again.tried);
    for (std::size_t i = 0; i < fresh.candidates.size(); ++i) {
      CHECK(fresh.candidates[i].applicable == again.candidates[i].applicable);
      CHECK(fresh.candidates[i].time_us == again.candidates[i].time_us);
      CHECK(fresh.candidates[i].knobs == again.candidates[i].knobs);
      ++compared;
    }
  }
  CHECK(compared >= 20);
  CHECK(kept.folds->hits() > 0);
}
