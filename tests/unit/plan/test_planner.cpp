#include <doctest/doctest.h>

#include <algorithm>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/planner.h"
#include "collkit/topo/synth.h"
#include "sim_topologies.h"

using namespace collkit;
using namespace collkit::plan;

TEST_CASE("evaluate keeps the fastest applicable candidate and leaves out those beyond the op budget") {
  topo::Topology t = testing::two_hosts(4, 100, 1, 25, 2);
  Request req{Collective::AllReduce, 1 << 20, 8, 0};
  Evaluation ev = evaluate(req, t);
  REQUIRE(ev.best >= 0);
  for (const Candidate& c : ev.candidates)
    if (c.applicable) CHECK(ev.candidates[static_cast<std::size_t>(ev.best)].time_us <= c.time_us);

  SimOptions tight;
  tight.op_budget = 10;  // every candidate of 8 ranks has more ops than that
  Evaluation none = evaluate(req, t, {}, tight);
  CHECK(none.best == -1);
  int over_budget = 0;
  for (const Candidate& c : none.candidates)
    if (c.why_not.find("auto's budget") != std::string::npos) {
      ++over_budget;
      CHECK(c.why_not.find("beyond auto's budget of 0 M (generate it by name to simulate it)") != std::string::npos);
    }
  CHECK(over_budget == static_cast<int>(ev.candidates.size()) - static_cast<int>(std::count_if(
                           ev.candidates.begin(), ev.candidates.end(), [](const Candidate& c) { return !c.applicable; })));
  CHECK_THROWS_WITH_AS(plan_for("auto", req, &t, {}, tight), "no algorithm can do allreduce on 8 ranks", InputError);
  CHECK(plan_for("ring", req, &t, {}, tight)->info().predicted_us > 0);  // by name: still simulated
}

TEST_CASE("evaluate leaves out big candidates that do not fold, and keeps those that do") {
  // 3 x DGX H100, AllReduce 1 MiB: the ring's 8 channels fold (symmetries it states, which the
  // fat-tree's routes respect); tree states none. Under a budget of 100 ops for unfolded plans,
  // tree is left out with the reason and ring is still simulated. (24 ranks: past the 16 up to
  // which auto weighs synth, whose layouts are most of the time at 16 and say nothing here.)
  topo::Topology t = topo::synth({"dgx-h100", 3, "fat-tree"});
  Request req{Collective::AllReduce, 1 << 20, 24, 0};
  SimOptions small;
  small.unfolded_op_budget = 100;
  small.unfolded_once_op_budget = 100;
  Evaluation ev = evaluate(req, t, {}, small);
  std::size_t checked = 0;
  for (const Candidate& c : ev.candidates) {
    CAPTURE(c.algorithm);
    if (c.algorithm == "ring") {
      CHECK(c.applicable);
      CHECK(c.time_us > 0);
      ++checked;
    }
    if (c.algorithm == "tree") {
      CHECK_FALSE(c.applicable);
      CHECK(c.why_not.find("with no symmetry to fold them by, beyond auto's budget of 0 M for such plans") != std::string::npos);
      ++checked;
    }
  }
  CHECK(checked == 2);
  SimOptions no_fold = small;
  no_fold.fold_symmetry = false;  // nothing folds, so nothing is left out for it
  for (const Candidate& c : evaluate(req, t, {}, no_fold).candidates) CHECK(c.why_not.find("no symmetry") == std::string::npos);
}

TEST_CASE("evaluate simulates a candidate that does not fold once, past the unfolded budget, and searches none of its knobs") {
  // The same 3 x DGX H100 AllReduce: with unfolded plans of more than 100 ops allowed once, the
  // tree (which states no symmetry) is simulated at the options given, as generating it by name
  // predicts, and its knobs (pipeline) are left alone; the ring, which folds, is searched as before.
  topo::Topology t = topo::synth({"dgx-h100", 3, "fat-tree"});
  Request req{Collective::AllReduce, 1 << 20, 24, 0};
  SimOptions once;
  once.unfolded_op_budget = 100;
  SearchOptions all;  // every candidate's knobs searched, were it not for the once rule
  all.search_top = 20;
  all.close_enough = -1;
  all.search_within = 1e9;
  Evaluation ev = evaluate(req, t, {}, once, all);
  std::size_t checked = 0;
  for (const Candidate& c : ev.candidates) {
    CAPTURE(c.algorithm);
    if (c.algorithm == "tree") {
      REQUIRE(c.applicable);
      CHECK(c.tried == 1);
      CHECK(c.not_searched.find("M ops that do not fold, simulated once") != std::string::npos);
      CHECK(c.time_us == doctest::Approx(plan_for("tree", req, &t, {}, once)->info().predicted_us));
      ++checked;
    }
    if (c.algorithm == "ring") {
      CHECK(c.not_searched.empty());
      ++checked;
    }
  }
  CHECK(checked == 2);
  // Where its ops carry less than unfolded_once_min_bytes it is left out, and says why.
  once.unfolded_once_min_bytes = 1 << 30;
  Evaluation small = evaluate(req, t, {}, once, all);
  auto tree = std::find_if(small.candidates.begin(), small.candidates.end(), [](const Candidate& c) { return c.algorithm == "tree"; });
  REQUIRE(tree != small.candidates.end());
  CHECK_FALSE(tree->applicable);
  CHECK(tree->why_not.find("beyond auto's budget of 0 M for such plans of ops under 1048576 KiB") != std::string::npos);
}

TEST_CASE("auto searches each promising algorithm's knobs and says why it chose") {
  // DGX A100, Broadcast of 64 MiB: the default ring chain (1 channel, 32 slices for its 8 ranks)
  // takes 267.7 us; with 8 channels and 512 slices it takes 226.1, which auto used to miss since
  // it only ever tried the defaults. synth's trees with 128 slices take 225.8, and 217.5 at 256
  // slices with a share down a chain staged through host memory (docs/synth.md): synth searches
  // its trees and chunks itself, so auto states no knobs for it.
  topo::Topology t = topo::synth({"dgx-a100", 1, ""});
  Request req{Collective::Broadcast, 64 << 20, 8, 0};
  auto plain = plan_for("ring", req, &t);
  std::string why;
  auto best = plan_for("auto", req, &t, {}, {}, {}, &why);
  CHECK(best->info().algorithm == "synth");
  CHECK(best->info().params.at("pipeline") == "256");
  CHECK(plain->info().params.at("pipeline") == "32");
  // predicted_us is the simulator's prediction on the model topology (deterministic), not a clock
  // reading: auto's plan against the default chain, both under the same model.
  CHECK(best->info().predicted_us < 0.85 * plain->info().predicted_us);
  CHECK(why.rfind("synth: 217.46 us, 7.42% over the bound; runner-up "
                  "ring (channels=8 pipeline=512 bidirectional=0) 226.12 us",
                  0) == 0);
  CHECK(why.find(" plans of 5 algorithms simulated") != std::string::npos);

  // What the user fixes is not searched; progress is reported per plan simulated.
  AlgoOptions fixed;
  fixed.channels = 2;
  SearchOptions s;
  int heard = 0;
  s.on_plan = [&](int done) { heard = done; };
  Evaluation ev = evaluate(req, t, fixed, {}, s);
  REQUIRE(ev.best >= 0);
  const Candidate& b = ev.candidates[static_cast<std::size_t>(ev.best)];
  CHECK(b.plan->info().channels == 2);
  CHECK(b.knobs.find("channels") == std::string::npos);
  CHECK(heard == ev.tried);
  CHECK(ev.tried > static_cast<int>(ev.candidates.size()) / 2);
  // No search at all: one plan per applicable algorithm.
  SearchOptions none;
  none.search_top = 0;
  Evaluation flat = evaluate(req, t, {}, {}, none);
  int applicable = 0;
  for (const Candidate& c : flat.candidates) applicable += c.applicable ? 1 : 0;
  CHECK(flat.tried == applicable);
}

TEST_CASE("a ring chain's default pipeline grows with the chain, and auto searches deeper ones for large messages") {
  // Broadcast and Reduce chains fill p - 2 hops before they stream: 8 chunks, the old default, ran
  // a 72-rank GB200 NVL72 chain at 12 x the bound, so far behind that auto never searched it.
  int checked = 0;
  auto pipeline = [&](Collective c, std::uint64_t bytes, int p, int channels = 0) {
    AlgoOptions o;
    o.channels = channels;
    ++checked;
    return plan_for("ring", Request{c, bytes, p, 0}, nullptr, o)->info().params.at("pipeline");
  };
  CHECK(pipeline(Collective::Broadcast, 1ull << 30, 2) == "8");       // 4 (p - 1) = 4: never below 8
  CHECK(pipeline(Collective::Broadcast, 1ull << 30, 8) == "32");      // 4 x 7, a power of two up
  CHECK(pipeline(Collective::Reduce, 1ull << 30, 72) == "512");       // 284 -> 512, the most
  CHECK(pipeline(Collective::Broadcast, 1ull << 30, 1152) == "32");   // 2^16 chunk-ranks at most
  CHECK(pipeline(Collective::Broadcast, 1 << 20, 72) == "16");        // chunks of 64 KiB at least
  CHECK(pipeline(Collective::Broadcast, 1 << 20, 72, 2) == "8");      // per channel
  CHECK(pipeline(Collective::Broadcast, 64 << 10, 72) == "8");
  CHECK(pipeline(Collective::AllGather, 72ull << 24, 72) == "1");  // rings do not fill: as before
  CHECK(checked == 8);

  topo::Topology t = topo::synth({"gb200-nvl72", 1, ""});
  Request req{Collective::Broadcast, 1ull << 30, 72, 0};
  AlgoOptions eight;
  eight.pipeline = 8;
  double old_default = plan_for("ring", req, &t, eight)->info().predicted_us, now = plan_for("ring", req, &t)->info().predicted_us;
  CHECK(now < 0.15 * old_default);  // simulated (model) times of the two plans, no clock read
  const Algorithm& ring = algorithm("ring");
  std::vector<std::string> deep, small;
  for (const Knob& k : ring.knobs(req, &t))
    if (k.name == "pipeline") deep = k.values;
  for (const Knob& k : ring.knobs(Request{Collective::Broadcast, 1 << 20, 72, 0}, &t))
    if (k.name == "pipeline") small = k.values;
  CHECK(deep == std::vector<std::string>{"0", "32", "128", "512", "2048"});
  CHECK(small == std::vector<std::string>{"0", "32", "128"});
}

TEST_CASE("a ring takes a channel per NIC up to 32: two GB200 NVL72 hosts (72 NICs each)") {
  // Each ring crosses the hosts through one NIC each way; 16 rings left 56 of 72 NICs idle and
  // the NICs bound (2 x NVL72 AllGather of 1 GiB at 1.41 x the bound; 32 rings reach the NVLink
  // domains' 1.25, the bound counting the CPUs' C2C paths that routes do not take).
  topo::Topology t = topo::synth({"gb200-nvl72", 2, ""});
  Request req{Collective::AllGather, 144ull << 23, 144, 0};
  auto dflt = plan_for("ring", req, &t);
  CHECK(dflt->info().channels == 32);
  AlgoOptions sixteen;
  sixteen.channels = 16;
  // Simulated (model) times of the two plans on the same topology, no clock read: the NICs' share.
  CHECK(dflt->info().predicted_us < 0.92 * plan_for("ring", req, &t, sixteen)->info().predicted_us);
  std::vector<std::string> channels;
  for (const Knob& k : algorithm("ring").knobs(req, &t))
    if (k.name == "channels") channels = k.values;
  CHECK(channels == std::vector<std::string>{"0", "16"});  // 64 is past the most
}

TEST_CASE("auto does not search the knobs of candidates far behind the best, and says so") {
  // 24 ranks: past the 16 up to which auto weighs synth (its layouts were most of this test's time).
  topo::Topology t = topo::synth({"dgx-a100", 3, "fat-tree"});
  Request req{Collective::AllReduce, 64 << 20, 24, 0};
  SearchOptions strict;
  strict.search_within = 1.0;  // only the best at the given options is searched
  Evaluation ev = evaluate(req, t, {}, {}, strict);
  REQUIRE(ev.best >= 0);
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < ev.candidates.size(); ++i)
    if (ev.candidates[i].applicable) order.push_back(i);
  int skipped = 0, searched = 0;
  for (std::size_t i : order) {
    const Candidate& c = ev.candidates[i];
    CAPTURE(c.algorithm);
    if (!c.not_searched.empty()) {
      ++skipped;
      CHECK(c.tried == 1);
      CHECK(c.knobs.empty());
      CHECK(c.not_searched.find(" x the best") != std::string::npos);
    } else if (c.tried > 1) {
      ++searched;
    }
  }
  CHECK(skipped >= 1);
  CHECK(searched <= 1);
  // The default searches the same candidates when they are within 4 x.
  Evaluation wide = evaluate(req, t);
  int wide_searched = 0;
  for (const Candidate& c : wide.candidates) wide_searched += c.tried > 1 ? 1 : 0;
  CHECK(wide_searched > searched);
  // time_us is the simulator's prediction (deterministic), not a measurement: searching more
  // knobs can only keep or improve the plan auto picks under the same model.
  const double predicted_wide = wide.candidates[static_cast<std::size_t>(wide.best)].time_us;
  const double predicted_strict = ev.candidates[static_cast<std::size_t>(ev.best)].time_us;
  CHECK(predicted_wide <= predicted_strict);
}

TEST_CASE("knobs are set by name, as the command line's flags") {
  AlgoOptions o = with_knob(with_knob(with_knob({}, "channels", "4"), "inter", "rhd"), "bidirectional", "1");
  CHECK(o.channels == 4);
  CHECK(o.inter == "rhd");
  CHECK(o.bidirectional);
  CHECK_THROWS_WITH_AS(with_knob({}, "pipeline", "x"), "knob pipeline=x: expected an integer >= 0", InputError);
  CHECK_THROWS_WITH_AS(with_knob({}, "slices", "2"), "unknown knob \"slices\" (known: channels, pipeline, bidirectional, inter)",
                       InputError);
  // Every algorithm's knobs are ones with_knob knows, each with its default first.
  std::size_t checked = 0;
  topo::Topology t = topo::synth({"dgx-h100", 2, "fat-tree"});
  for (const Algorithm* a : algorithms())
    for (Collective c : {Collective::AllReduce, Collective::Broadcast})
      for (const Knob& k : a->knobs({c, 1 << 20, 16, 0}, &t)) {
        REQUIRE(!k.values.empty());
        CHECK((k.values.front() == "0" || k.values.front().empty()));
        for (const std::string& v : k.values) CHECK_NOTHROW(with_knob({}, k.name, v));
        ++checked;
      }
  CHECK(checked >= 8);
}
