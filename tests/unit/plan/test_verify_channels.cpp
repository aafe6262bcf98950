// Verifying by channels (verify_channels.h): where a plan's channels are images of channel 0,
// verify() runs channel 0 alone; its verdict and its first error must be the whole plan's.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "algorithms/common.h"
#include "collkit/plan/algorithm.h"
#include "collkit/topo/synth.h"
#include "plan_testing.h"

using namespace collkit::plan;
using namespace collkit::plan::testing;
using namespace collkit::plan::algo;
namespace topo = collkit::topo;

namespace {

// Programs of our choosing under the symmetries and channel images another plan states: what a
// buggy generator would produce.
class Claimed final : public Plan {
 public:
  Claimed(PlanInfo info, std::vector<SymmetryAxis> axes, std::vector<std::vector<int>> images, std::vector<std::vector<Op>> progs)
      : Plan(std::move(info)), axes_(std::move(axes)), images_(std::move(images)), progs_(std::move(progs)) {}
  Claimed(const Plan& like, std::vector<std::vector<Op>> progs)
      : Claimed(like.info(), like.symmetries(), like.channel_images(), std::move(progs)) {}
  std::vector<Op> program(int rank) const override { return progs_.at(static_cast<std::size_t>(rank)); }
  bool is_explicit() const override { return true; }
  std::vector<SymmetryAxis> symmetries() const override { return axes_; }
  std::vector<std::vector<int>> channel_images() const override { return images_; }

 private:
  std::vector<SymmetryAxis> axes_;
  std::vector<std::vector<int>> images_;
  std::vector<std::vector<Op>> progs_;
};

std::vector<std::vector<Op>> programs(const Plan& plan) {
  std::vector<std::vector<Op>> progs;
  for (int r = 0; r < plan.nranks(); ++r) progs.push_back(plan.program(r));
  return progs;
}

// Every op executed: an explicit plan states no symmetry.
VerifyResult verify_whole(const Plan& plan) { return verify(ExplicitPlan(plan.info(), programs(plan))); }

// AllReduce of 2 chunks on 2 ranks, over 2 channels: channel ch works on chunk chunk_of(ch),
// which rank 0 sends, rank 1 adds to its own into its output, and sends the sum back.
// `reduce` false: rank 1 overwrites instead (every channel alike, so still congruent).
template <class ChunkOf>
Claimed two_rank_allreduce(ChunkOf chunk_of, bool reduce = true) {
  std::vector<std::vector<Op>> progs(2);
  for (std::uint16_t ch = 0; ch < 2; ++ch) {
    std::uint32_t x = chunk_of(ch);
    progs[0].push_back(send(1, in(x), 1, ch));
    progs[0].push_back(recv(1, out(x), 1, ch));
    progs[1].push_back(reduce ? recv_reduce(0, in(x), out(x), 1, ch) : recv(0, out(x), 1, ch));
    progs[1].push_back(send(0, out(x), 1, ch));
  }
  PlanInfo info;
  info.req = Request{Collective::AllReduce, 64, 2, 0};
  info.algorithm = "explicit";
  info.in_chunks = info.out_chunks = 2;
  info.channels = 2;
  // The rotation of the two channels, ranks in place.
  SymmetryAxis swap{{0, 1}, {1, 0}, 2};
  return Claimed(info, {swap}, {}, std::move(progs));
}

}  // namespace

TEST_CASE("verify by channels: ring plans on topologies are decided by channel 0") {
  struct Case {
    const char* node;
    int hosts;
    const char* fabric;
  };
  std::size_t reduced = 0, stated = 0;
  for (Case k : {Case{"dgx-h100", 2, "fat-tree"}, Case{"mi300x", 2, "fat-tree"}, Case{"hgx-h200", 4, "torus:dims=2x2"}}) {
    topo::Topology t = topo::synth({k.node, k.hosts, k.fabric});
    auto p = static_cast<int>(t.num_ranks());
    for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
      for (int pipeline : {1, 2}) {
        AlgoOptions o;
        o.pipeline = pipeline;
        auto plan = generate("ring", Request{c, std::uint64_t{1} << 20, p, 0}, &t, o);
        INFO(std::string(k.node) << " x" << k.hosts << " " << describe_plan(plan->info()));
        VerifyResult fast = verify(*plan), whole = verify_whole(*plan);
        CHECK(fast.ok);
        CHECK(whole.ok);
        CHECK(fast.ops == whole.ops);
        CHECK(fast.transfers == whole.transfers);
        CHECK(whole.congruent_channels == 0);
        REQUIRE(plan->info().channels > 1);
        CHECK(fast.congruent_channels == plan->info().channels - 1);
        reduced += fast.congruent_channels > 0 ? 1 : 0;
        // mi300x's channels take different in-host cycles: no one map rotates them, but each
        // is still channel 0's ring through another order.
        stated += plan->symmetries().empty() ? 0 : 1;
      }
    }
  }
  CHECK(reduced == 18);
  CHECK(stated < 18);
}

TEST_CASE("verify by channels: congruent channels on disjoint chunks pass, on shared chunks, the whole plan's error") {
  Claimed apart = two_rank_allreduce([](std::uint16_t ch) { return std::uint32_t{ch}; });
  VerifyResult r = verify(apart);
  CHECK(r.ok);
  CHECK(r.congruent_channels == 1);
  CHECK(r.ops == 8);

  // Both channels on chunk 0: each is right alone and congruent to the other, but together they
  // race on it (and chunk 1 is never written). Channel 0 alone would pass.
  Claimed shared = two_rank_allreduce([](std::uint16_t) { return std::uint32_t{0}; });
  VerifyResult s = verify(shared), whole = verify_whole(shared);
  CHECK_FALSE(whole.ok);
  CHECK(s.error == whole.error);
  CHECK(s.congruent_channels == 0);

  // Congruent, disjoint and wrong: channel 0 fails, and the error is the whole plan's.
  Claimed lost = two_rank_allreduce([](std::uint16_t ch) { return std::uint32_t{ch}; }, false);
  VerifyResult l = verify(lost), lost_whole = verify_whole(lost);
  CHECK_FALSE(l.ok);
  CHECK(l.error == lost_whole.error);
  CHECK(l.error == "rank 0 output chunk 0: holds {chunk 0 from rank 0} but should hold {chunk 0 from ranks 0-1}");
}

TEST_CASE("verify by channels: deps onto lower channels keep the reduction, onto a higher one, the whole plan runs") {
  // Channel 1's first send waits on channel 0's last op, as hier staggers its channels: still
  // channel 0's image, decided by channel 0.
  Claimed apart = two_rank_allreduce([](std::uint16_t ch) { return std::uint32_t{ch}; });
  std::vector<std::vector<Op>> progs = programs(apart);
  progs[0][2].depend_on(1);
  Claimed staggered(apart, progs);
  VerifyResult r = verify(staggered), whole = verify_whole(staggered);
  CHECK(r.ok);
  CHECK(whole.ok);
  CHECK(r.congruent_channels == 1);

  // Channel 0 waiting on channel 1 (its ops first in the program) is not reduced.
  std::vector<std::vector<Op>> swapped = programs(apart);
  for (auto& prog : swapped) std::rotate(prog.begin(), prog.begin() + 2, prog.end());
  swapped[0][2].depend_on(1);
  Claimed upward(apart, swapped);
  VerifyResult u = verify(upward), uw = verify_whole(upward);
  CHECK(u.ok);
  CHECK(uw.ok);
  CHECK(u.congruent_channels == 0);

  // On the other rank too: rank 1's channel 1 receive waits on its channel 0 send.
  std::vector<std::vector<Op>> late = programs(apart);
  late[1][2].depend_on(1);
  Claimed later(apart, late);
  VerifyResult l = verify(later), lw = verify_whole(later);
  CHECK(l.ok);
  CHECK(lw.ok);
  CHECK(l.congruent_channels == 1);
}

TEST_CASE("verify by channels: hier's staggered AllReduce channels are decided by channel 0") {
  std::size_t checked = 0;
  topo::Topology t = topo::synth({"dgx-h100", 4, "fat-tree"});
  auto p = static_cast<int>(t.num_ranks());
  for (const char* inter : {"ring", "rhd"}) {
    for (int channels : {2, 4}) {
      AlgoOptions o;
      o.channels = channels;
      o.inter = inter;
      auto plan = generate("hier", Request{Collective::AllReduce, std::uint64_t{1} << 22, p, 0}, &t, o);
      INFO(describe_plan(plan->info()));
      REQUIRE(plan->info().channels == channels);
      VerifyResult fast = verify(*plan), whole = verify_whole(*plan);
      CHECK(fast.ok);
      CHECK(whole.ok);
      CHECK(fast.ops == whole.ops);
      CHECK(fast.congruent_channels == channels - 1);
      ++checked;
    }
  }
  CHECK(checked == 4);
}

TEST_CASE("verify by channels: a channel that is not channel 0's image is run whole") {
  Claimed apart = two_rank_allreduce([](std::uint16_t ch) { return std::uint32_t{ch}; });
  std::vector<std::vector<Op>> progs = programs(apart);
  progs[1][2].src.chunk = 0;  // rank 1 channel 1 reduces into chunk 1 with input chunk 0
  Claimed bad(apart, progs);
  VerifyResult r = verify(bad), whole = verify_whole(bad);
  CHECK_FALSE(whole.ok);
  CHECK(r.error == whole.error);
  CHECK(r.error ==
        "rank 1 op 2 (recv_reduce from 0 ch 1): adds {chunk 1 from rank 0} (received) to {chunk 0 from rank 1} (input chunk 0): "
        "different input chunks");
}

TEST_CASE("verify by channels: mutated ring plans get the whole plan's verdict, word for word") {
  // Random single-op mutations of an 8-channel ring on 2 x dgx-h100 that keeps stating its
  // symmetries: most break congruence (the whole plan runs), some keep it; either way verify()
  // must say exactly what executing every op says.
  topo::Topology t = topo::synth({"dgx-h100", 2, "fat-tree"});
  std::mt19937 rng(20261203);
  std::size_t cases = 0, wrong = 0;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    auto plan = generate("ring", Request{c, std::uint64_t{1} << 20, static_cast<int>(t.num_ranks()), 0}, &t, {});
    REQUIRE(plan->info().channels == 8);
    std::vector<std::vector<Op>> base = programs(*plan);
    for (int m = 0; m < 40; ++m) {
      std::vector<std::vector<Op>> progs = base;
      auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
      std::size_t r = pick(progs.size());
      std::vector<Op>& prog = progs[r];
      std::size_t i = pick(prog.size());
      Op& o = prog[i];
      switch (m % 5) {
        case 0: o.src.chunk = static_cast<std::uint32_t>(pick(plan->info().in_chunks)); break;
        case 1: o.dst.chunk = static_cast<std::uint32_t>(pick(plan->info().out_chunks)); break;
        case 2: o.channel = static_cast<std::uint16_t>((o.channel + 1) % 8); break;
        case 3: prog.erase(prog.begin() + static_cast<std::ptrdiff_t>(i)); break;
        case 4:
          if (i > 0) o.depend_on(static_cast<std::uint32_t>(pick(i)));
          break;
      }
      Claimed mutated(*plan, progs);
      VerifyResult fast = verify(mutated), whole = verify_whole(mutated);
      INFO(describe_plan(plan->info()) << " mutation " << m << " rank " << r << " op " << i);
      CHECK(fast.ok == whole.ok);
      CHECK(fast.error == whole.error);
      wrong += whole.ok ? 0 : 1;
      ++cases;
    }
  }
  CHECK(cases == 120);
  CHECK(wrong > 60);

  // 96 ranks: the comparison runs on several threads, each finding the shifts on its own.
  auto big = generate("ring", Request{Collective::AllGather, 96 * 8 * 64, 96, 0}, nullptr, [] {
    AlgoOptions o;
    o.channels = 8;
    return o;
  }());
  CHECK(verify(*big).congruent_channels == 7);
  std::vector<std::vector<Op>> base = programs(*big);
  std::size_t big_cases = 0;
  for (int m = 0; m < 12; ++m) {
    std::vector<std::vector<Op>> progs = base;
    std::size_t r = 1 + static_cast<std::size_t>(m) * 7;
    Op& o = progs[r][std::uniform_int_distribution<std::size_t>(0, progs[r].size() - 1)(rng)];
    if (o.type == OpType::Recv || o.type == OpType::Copy) o.dst.chunk = (o.dst.chunk + 1) % big->info().out_chunks;
    else o.src.chunk = (o.src.chunk + 1) % (o.src.buf == Buf::Input ? big->info().in_chunks : big->info().out_chunks);
    Claimed mutated(*big, progs);
    VerifyResult fast = verify(mutated), whole = verify_whole(mutated);
    CAPTURE(m);
    CHECK(fast.ok == whole.ok);
    CHECK(fast.error == whole.error);
    CHECK(fast.congruent_channels == 0);
    ++big_cases;
  }
  CHECK(big_cases == 12);
}

TEST_CASE("verify by channels: a ring makes one channel alone exactly as its whole program has it") {
  topo::Topology t = topo::synth({"dgx-a100", 2, "fat-tree"});
  std::size_t compared = 0;
  for (Collective c :
       {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast, Collective::Reduce}) {
    for (bool bidirectional : {false, true}) {
      AlgoOptions o;
      o.bidirectional = bidirectional;
      auto plan = generate("ring", Request{c, std::uint64_t{1} << 20, static_cast<int>(t.num_ranks()), 3}, &t, o);
      INFO(describe_plan(plan->info()));
      for (int r = 0; r < plan->nranks(); r += 5)
        for (int ch = 0; ch < plan->info().channels; ++ch) {
          std::vector<Op> alone = plan->channel_program(r, ch), filtered = only_channel(plan->program(r), ch);
          REQUIRE(alone.size() == filtered.size());
          for (std::size_t i = 0; i < alone.size(); ++i) {
            CHECK(alone[i].type == filtered[i].type);
            CHECK(alone[i].peer == filtered[i].peer);
            CHECK(alone[i].src == filtered[i].src);
            CHECK(alone[i].dst == filtered[i].dst);
            CHECK(alone[i].count == filtered[i].count);
            CHECK(alone[i].deps == filtered[i].deps);
          }
          compared += alone.size();
        }
    }
  }
  CHECK(compared == 9784);
}
