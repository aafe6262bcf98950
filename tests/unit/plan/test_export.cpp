#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <pugixml.hpp>
#include <set>
#include <tuple>

#include "algorithms/common.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/export.h"
#include "collkit/plan/show.h"
#include "collkit/topo/synth.h"
#include "plan/sim_topologies.h"
#include "plan_testing.h"

using namespace collkit;
using namespace collkit::plan;

namespace {

// An explicit AllReduce over 2 ranks of `chunks` 8-byte chunks on `channels` channels.
PlanInfo two_rank_allreduce(std::uint32_t chunks, std::uint16_t channels) {
  PlanInfo info;
  info.req = Request{Collective::AllReduce, 8 * std::uint64_t{chunks}, 2, 0};
  info.algorithm = "explicit";
  info.in_chunks = info.out_chunks = chunks;
  info.channels = channels;
  return info;
}

// Structural checks every exported file must pass; returns (gpus, tbs, steps).
std::tuple<int, int, int> check_structure(const std::string& xml, int max_steps = 64) {
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  pugi::xml_node algo = doc.child("algo");
  REQUIRE(algo);
  for (const char* a : {"name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace", "minBytes", "maxBytes"})
    CHECK_MESSAGE(algo.attribute(a), a);
  int ngpus = algo.attribute("ngpus").as_int(), nchannels = algo.attribute("nchannels").as_int();
  int gpus = 0, tbs = 0, steps = 0;
  // (src, dst, chan) -> sends / receives counted in chunks
  std::map<std::tuple<int, int, int>, long> sent, received;
  for (pugi::xml_node gpu : algo.children("gpu")) {
    int id = gpu.attribute("id").as_int();
    CHECK(id == gpus);
    ++gpus;
    int tb_id = 0;
    std::map<int, int> tb_steps;
    std::vector<std::pair<int, int>> deps;
    for (pugi::xml_node tb : gpu.children("tb")) {
      CHECK(tb.attribute("id").as_int() == tb_id);
      int send = tb.attribute("send").as_int(), recv = tb.attribute("recv").as_int(), chan = tb.attribute("chan").as_int();
      CHECK(send >= -1);
      CHECK(send < ngpus);
      CHECK(send != id);
      CHECK(recv >= -1);
      CHECK(recv < ngpus);
      CHECK(recv != id);
      CHECK(chan < nchannels);
      int s = 0;
      for (pugi::xml_node step : tb.children("step")) {
        for (const char* a : {"s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep"})
          CHECK_MESSAGE(step.attribute(a), a);
        CHECK(step.attribute("s").as_int() == s);
        int cnt = step.attribute("cnt").as_int();
        CHECK(cnt < 72);
        std::string type = step.attribute("type").as_string();
        if (type == "s" || type == "rrs" || type == "rcs" || type == "rrcs") {
          REQUIRE(send >= 0);
          sent[{id, send, chan}] += cnt;
        }
        if (type == "r" || type == "rrc" || type == "rrs" || type == "rcs" || type == "rrcs") {
          REQUIRE(recv >= 0);
          received[{recv, id, chan}] += cnt;
        }
        if (step.attribute("depid").as_int() >= 0) deps.push_back({step.attribute("depid").as_int(), step.attribute("deps").as_int()});
        ++s;
        ++steps;
      }
      CHECK(s <= max_steps);
      tb_steps[tb_id] = s;
      ++tb_id;
      ++tbs;
    }
    for (auto [tb, s] : deps) {
      REQUIRE(tb_steps.count(tb));
      CHECK(s >= 0);
      CHECK(s < tb_steps[tb]);
    }
  }
  CHECK(gpus == ngpus);
  CHECK(sent == received);
  return {gpus, tbs, steps};
}

}  // namespace

TEST_CASE("msccl export: ring AllReduce on 4 ranks") {
  auto plan = generate("ring", Request{Collective::AllReduce, 4096, 4, 0}, nullptr);
  std::string xml = to_msccl_xml(*plan, {});
  auto [gpus, tbs, steps] = check_structure(xml);
  CHECK(gpus == 4);
  CHECK(tbs == 4);          // one tb per rank: send to next, receive from prev
  CHECK(steps == 4 * 12);   // 2(p-1) send + receive pairs
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  pugi::xml_node algo = doc.child("algo");
  CHECK(std::string(algo.attribute("name").as_string()) == "ring-allreduce-4");
  CHECK(std::string(algo.attribute("coll").as_string()) == "allreduce");
  CHECK(algo.attribute("nchunksperloop").as_int() == 4);
  CHECK(algo.attribute("nchannels").as_int() == 1);
  pugi::xml_node tb = algo.child("gpu").child("tb");
  CHECK(tb.attribute("send").as_int() == 1);
  CHECK(tb.attribute("recv").as_int() == 3);
  pugi::xml_node first = tb.child("step");
  CHECK(std::string(first.attribute("type").as_string()) == "s");
  CHECK(std::string(first.attribute("srcbuf").as_string()) == "i");
  CHECK(first.attribute("srcoff").as_int() == 3);
  CHECK(std::string(first.next_sibling("step").attribute("type").as_string()) == "rrc");
}

TEST_CASE("msccl export: other collectives and algorithms keep their structure") {
  for (Collective c : {Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast})
    for (int p : {2, 3, 5}) {
      auto plan = generate("ring", Request{c, 8ull * 64 * static_cast<std::uint64_t>(p), p, 0}, nullptr);
      INFO(testing::describe_plan(plan->info()));
      check_structure(to_msccl_xml(*plan, {}));
    }
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  auto t = topo::synth({"pcie-8gpu:gpus=4", 3, "single-switch"});
  auto plan = generate("hier", Request{Collective::AllReduce, 8 * 12 * 12, 12, 0}, &t);
  std::string xml = to_msccl_xml(*plan, {});
  auto [gpus, tbs, steps] = check_structure(xml);
  CHECK(gpus == 12);
  CHECK(tbs == 24);  // an intra-host and an inter-host threadblock per rank
  CHECK(xml.find("hasdep=\"1\"") != std::string::npos);
}

TEST_CASE("msccl export: several dependencies go through nop steps, big counts are split") {
  using namespace algo;
  PlanInfo info = two_rank_allreduce(128, 3);
  std::vector<Op> r0{send(1, in(0), 100, 0), send(1, in(100), 28, 1), copy(in(0), out(0), 1, 2)};
  r0[2].depend_on(0);
  r0[2].depend_on(1);
  std::vector<Op> r1{recv(0, out(0), 100, 0), recv(0, out(100), 28, 1)};
  ExplicitPlan plan(info, {r0, r1});
  std::string xml = to_msccl_xml(plan, {});
  check_structure(xml);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  pugi::xml_node gpu0 = doc.child("algo").child("gpu");
  pugi::xml_node tb0 = gpu0.child("tb");
  CHECK(tb0.child("step").attribute("cnt").as_int() == 71);
  CHECK(tb0.child("step").next_sibling("step").attribute("cnt").as_int() == 29);
  CHECK(std::string(tb0.child("step").next_sibling("step").attribute("hasdep").as_string()) == "1");
  pugi::xml_node tb2 = tb0.next_sibling("tb").next_sibling("tb");
  CHECK(tb2.attribute("chan").as_int() == 2);
  pugi::xml_node nop = tb2.child("step");
  CHECK(std::string(nop.attribute("type").as_string()) == "nop");
  CHECK(nop.attribute("depid").as_int() == 0);
  CHECK(nop.attribute("deps").as_int() == 1);
  pugi::xml_node cpy = nop.next_sibling("step");
  CHECK(std::string(cpy.attribute("type").as_string()) == "cpy");
  CHECK(cpy.attribute("depid").as_int() == 1);
  CHECK(cpy.attribute("deps").as_int() == 0);
}

TEST_CASE("msccl export: refusals") {
  AlgoOptions deep;
  deep.pipeline = 8;
  auto plan = generate("ring", Request{Collective::AllReduce, 8 * 64, 4, 0}, nullptr, deep);
  CHECK_THROWS_WITH_AS(
      to_msccl_xml(*plan, {}),
      "rank 0 threadblock 0 needs 96 steps, MSCCL allows 64 (--max-steps for a runtime built with a larger MSCCL_MAX_NUM_STEPS)",
      InputError);
  MscclOptions roomy;
  roomy.max_steps = 256;  // the old runtime's limit
  check_structure(to_msccl_xml(*plan, roomy), 256);

  PlanInfo info;
  info.req = Request{Collective::AllReduce, 1024, 2, 0};
  info.algorithm = "explicit";
  info.in_chunks = 4;
  info.out_chunks = 2;
  ExplicitPlan odd(info, {{}, {}});
  CHECK_THROWS_WITH_AS(to_msccl_xml(odd, {}),
                       "MSCCL needs one chunk size for all buffers: input chunks hold 256 bytes, output chunks 512",
                       InputError);
}

TEST_CASE("msccl export: ops past their buffers are refused as verify refuses them") {
  using namespace algo;
  PlanInfo info = two_rank_allreduce(4, 1);
  // A count of 4294967295 once split into steps without end; a chunk past the buffer was written out.
  ExplicitPlan huge(info, {{send(1, in(0), 0xffffffffu, 0)}, {recv(0, out(0), 0xffffffffu, 0)}});
  CHECK_THROWS_WITH_AS(to_msccl_xml(huge, {}),
                       "rank 0 op 0 (send to 1 ch 0): input chunks 0-4294967294 are out of range (input has 4 chunks)", InputError);
  ExplicitPlan past(info, {{send(1, in(3), 1, 0)}, {recv(0, out(4), 1, 0)}});
  CHECK_THROWS_WITH_AS(to_msccl_xml(past, {}), "rank 1 op 0 (recv from 0 ch 0): output chunk 4 is out of range (output has 4 chunks)",
                       InputError);
}

TEST_CASE("msccl export: show plan lists ops") {
  auto plan = generate("ring", Request{Collective::AllReduce, 4096, 4, 0}, nullptr);
  std::string text = describe_plan(*plan, 1, 1);
  CHECK(text.rfind("ring allreduce, 4096 bytes, 4 ranks, 1 channel(s); chunks: input 4, output 4, scratch 0\n", 0) == 0);
  CHECK(text.find("rank 1 ch 0  #0 send -> 2  input[0]\n") != std::string::npos);
  CHECK(text.find("rank 1 ch 0  #1 recv_reduce <- 0  input[3] -> output[3]\n") != std::string::npos);
  CHECK(text.find("rank 0") == std::string::npos);
  CHECK(text.find("rank 2") == std::string::npos);
  Op op = algo::send(3, algo::out(4), 2, 0);
  op.depend_on(1);
  PlanInfo info;
  info.req = Request{Collective::AllReduce, 1024, 1, 0};
  info.algorithm = "explicit";
  info.out_chunks = info.in_chunks = 8;
  ExplicitPlan hand(info, {{algo::copy(algo::in(0), algo::out(0), 1, 0), op}});
  CHECK(describe_plan(hand, 0, -1).find("rank 0 ch 0  #1 send -> 3  output[4..5]  deps 1\n") != std::string::npos);
}

TEST_CASE("msccl export: synth plans, their tree arcs' channels shared within MSCCL's 32, read back op for op") {
  // One threadblock per tree arc and direction (the plan's channel per arc), arcs towards
  // different peers sharing MSCCL channels; every op comes back as one step of the same kind,
  // peer, chunks and buffers.
  topo::Topology t = topo::synth({"dgx-a100", 1, ""});
  int p = static_cast<int>(t.num_ranks());
  for (Collective c :
       {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce, Collective::Broadcast, Collective::Reduce}) {
    CAPTURE(to_string(c));
    AlgoOptions opt;
    opt.pipeline = 4;
    auto plan = generate("synth", Request{c, 8ull * 64 * 64 * static_cast<std::uint64_t>(p), p, 2}, &t, opt);
    std::string xml = to_msccl_xml(*plan, {});
    check_structure(xml);
    pugi::xml_document doc;
    REQUIRE(doc.load_string(xml.c_str()));
    pugi::xml_node algo = doc.child("algo");
    CHECK(algo.attribute("nchannels").as_int() <= 32);
    using Key = std::tuple<std::string, int, std::string, int, std::string, int, int>;
    const char* bufs = "ios";
    for (pugi::xml_node gpu : algo.children("gpu")) {
      int r = gpu.attribute("id").as_int();
      CAPTURE(r);
      std::multiset<Key> steps, ops;
      std::set<std::tuple<int, int, bool>> peers;  // (chan, peer, sends): one tb each
      for (pugi::xml_node tb : gpu.children("tb")) {
        int chan = tb.attribute("chan").as_int(), send = tb.attribute("send").as_int(), recv = tb.attribute("recv").as_int();
        if (send >= 0) CHECK(peers.insert({chan, send, true}).second);
        if (recv >= 0) CHECK(peers.insert({chan, recv, false}).second);
        for (pugi::xml_node st : tb.children("step")) {
          std::string type = st.attribute("type").as_string();
          if (type == "nop") continue;
          int peer = type == "s" ? send : type == "r" || type == "rrc" ? recv : -1;
          steps.insert({type, peer, st.attribute("srcbuf").as_string(), st.attribute("srcoff").as_int(), st.attribute("dstbuf").as_string(),
                        st.attribute("dstoff").as_int(), st.attribute("cnt").as_int()});
        }
      }
      for (const Op& o : plan->program(r)) {
        static const char* names[] = {"s", "r", "rrc", "cpy", "re"};
        bool reads = o.type != OpType::Recv, writes = o.type != OpType::Send;
        ops.insert({names[static_cast<int>(o.type)], o.type == OpType::Copy || o.type == OpType::Reduce ? -1 : o.peer,
                    std::string(1, reads ? bufs[static_cast<int>(o.src.buf)] : 'i'), reads ? static_cast<int>(o.src.chunk) : -1,
                    std::string(1, writes ? bufs[static_cast<int>(o.dst.buf)] : 'o'), writes ? static_cast<int>(o.dst.chunk) : -1,
                    static_cast<int>(o.count)});
      }
      CHECK(steps == ops);
    }
  }
}

TEST_CASE("msccl export: synth plans over MSCCL's limits are refused with the reason") {
  topo::Topology t = topo::synth({"dgx-a100", 1, ""});
  AlgoOptions deep;
  deep.pipeline = 65;  // 65 sends on one tree arc's threadblock (the root's copy on a threadblock of its own)
  CHECK_THROWS_WITH_AS(
      to_msccl_xml(*generate("synth", Request{Collective::AllGather, 8ull * 65 * 64 * 8, 8, 0}, &t, deep), {}),
      "rank 0 threadblock 1 needs 65 steps, MSCCL allows 64 (--max-steps for a runtime built with a larger MSCCL_MAX_NUM_STEPS)",
      InputError);
  // 40 trees per rank between two GPUs: 40 arcs each way between the same two ranks, which no
  // two MSCCL channels' threadblocks may share.
  topo::Topology pair = testing::uniform(2, 100, 1);
  AlgoOptions many;
  many.channels = 40;
  many.pipeline = 1;
  CHECK_THROWS_WITH_AS(to_msccl_xml(*generate("synth", Request{Collective::AllGather, 8ull * 80, 2, 0}, &pair, many), {}),
                       "the plan's 81 channels need 40 MSCCL channels (those towards one peer cannot share one), MSCCL allows 32 "
                       "(--max-channels for a runtime with more)",
                       InputError);
}
