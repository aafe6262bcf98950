// The scheduler of program.h run with threads as ranks over an in-process transport (STYLE.md
// rule 10): every algorithm, collective, rank count, datatype and placement must produce exactly
// what pattern.h defines, the same check coll-run makes under mpirun.

#include <doctest/doctest.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "collkit/core/error.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/pattern.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/transform.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/synth.h"
#include "host_rank.h"
#include "program.h"
#include "stream_copy.h"

using namespace collkit;
using namespace collkit::exec;
using plan::Collective;

namespace {

// Eager, in-order mailboxes per (sender, receiver, channel), shared by all ranks.
struct PostOffice {
  std::mutex mu;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<std::byte>>> boxes;
};

class Loopback final : public detail::Transport {
 public:
  Loopback(PostOffice& po, int rank) : po_(po), rank_(rank) {}
  std::uint32_t post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) override {
    std::lock_guard lock(po_.mu);
    po_.boxes[{rank_, peer, channel}].emplace_back(data, data + bytes);
    done_.push_back(next_);
    return next_++;
  }
  std::uint32_t post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) override {
    recvs_.push_back({next_, peer, channel, data, bytes});
    return next_++;
  }
  void poll(std::vector<std::uint32_t>& finished) override {
    finished.insert(finished.end(), done_.begin(), done_.end());
    done_.clear();
    std::lock_guard lock(po_.mu);
    // Receives of one (peer, channel) complete in the order they were posted.
    for (auto it = recvs_.begin(); it != recvs_.end();) {
      auto& box = po_.boxes[{it->peer, rank_, it->channel}];
      bool earlier = false;
      for (auto jt = recvs_.begin(); jt != it; ++jt) earlier |= jt->peer == it->peer && jt->channel == it->channel;
      if (earlier || box.empty()) {
        ++it;
        continue;
      }
      // On a rank's thread: a mismatch throws, and run_threads reports it from the main thread
      // (doctest's assertions are not for worker threads).
      if (box.front().size() != it->bytes)
        throw std::runtime_error("receive of " + std::to_string(it->bytes) + " bytes from rank " + std::to_string(it->peer) +
                                 " matched a send of " + std::to_string(box.front().size()));
      std::memcpy(it->data, box.front().data(), it->bytes);
      box.pop_front();
      finished.push_back(it->handle);
      it = recvs_.erase(it);
    }
  }

 private:
  struct Recv {
    std::uint32_t handle;
    int peer;
    std::uint16_t channel;
    std::byte* data;
    std::uint64_t bytes;
  };
  PostOffice& po_;
  int rank_;
  std::uint32_t next_ = 0;
  std::vector<std::uint32_t> done_;
  std::vector<Recv> recvs_;
};

// Runs `p` once on every rank in threads; returns #wrong over all ranks.
std::uint64_t run_threads(const plan::Plan& p, const Job& job, Placement placement, InPlaceMode mode) {
  int n = p.nranks();
  PostOffice po;
  std::vector<std::uint64_t> wrong(static_cast<std::size_t>(n));
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        // The buffers, placements, staged copy and Avg's division of the mpi and rdma backends.
        detail::HostRank host;
        host.setup(Setup{&p, job, mode, 20}, r);
        std::vector<std::byte> input(input_count(job) * size_of(job.type));
        fill_input(job, r, input.data());
        host.write_input(placement, input);
        Loopback t(po, r);
        host.run(t, placement);
        wrong[static_cast<std::size_t>(r)] = count_wrong(job, r, host.output(placement));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    CHECK(errors[static_cast<std::size_t>(r)] == "");
    total += wrong[static_cast<std::size_t>(r)];
  }
  return total;
}

}  // namespace

TEST_CASE("every algorithm runs every collective exactly, out of place and in place, threads as ranks") {
  const Collective colls[] = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                              Collective::AlltoAll,  Collective::Broadcast,     Collective::Reduce};
  int runs = 0, direct = 0;
  for (int n : {1, 2, 3, 4, 5, 8})
    for (Collective c : colls)
      for (const plan::Algorithm* algo : plan::algorithms()) {
        plan::Request req{c, 0, n, n > 1 ? 1 : 0};
        // A size every chunking divides: elements = multiple of the plan's granularity.
        req.bytes = 4ull * 64 * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n);
        std::string why;
        if (!algo->supports(req, nullptr, &why)) continue;
        auto p0 = plan::generate(algo->name(), req, nullptr);
        std::uint64_t step = plan::granularity(p0->info()).even;
        REQUIRE(step > 0);
        for (DataType t : {DataType::Float32, DataType::BFloat16, DataType::Int8}) {
          std::uint64_t count = step * 3;
          auto p = plan::resized(*p0, count * size_of(t), size_of(t));
          for (RedOp op : plan::facts(c).reduces ? std::vector<RedOp>{RedOp::Sum, RedOp::Prod, RedOp::Avg}
                                                  : std::vector<RedOp>{RedOp::Sum}) {
            Job job{p->info().req, t, op};
            INFO(algo->name() << " " << plan::to_string(c) << " n=" << n << " " << to_string(t) << " " << to_string(op));
            CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
            bool safe = plan::in_place_problem(*p).empty();
            direct += safe;
            CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
            ++runs;
          }
        }
      }
  CHECK(runs > 300);
  CHECK(direct > runs / 2);  // most plans run in place with no copy
}

TEST_CASE(
    "synth: AllGather, ReduceScatter, AllReduce, Broadcast and Reduce from packed trees run exactly on the topologies they were made for, "
    "threads as ranks") {
  // The loops above give no topology, which synth needs; here it gets presets whose trees differ
  // (stars on one NVSwitch, deeper trees across hosts and on DGX-1's cube-mesh), at each k.
  // Broadcast and Reduce from the last rank: one root's trees.
  int runs = 0;
  // INFO names the pair: clang 14 (CI's sanitizer pass) cannot capture a structured binding.
  for (auto nh : {std::pair{"dgx-a100", 1}, {"dgx-h100", 2}, {"dgx1-v100", 1}})
    for (auto [node, hosts] = nh; int k : {1, 2})
      for (Collective c :
           {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce, Collective::Broadcast, Collective::Reduce}) {
        topo::Topology t = topo::synth({node, hosts, ""});
        int n = static_cast<int>(t.num_ranks());
        plan::AlgoOptions opt;
        opt.channels = k;
        opt.pipeline = 3;
        plan::Request req{c, 0, n, n - 1};
        req.bytes = 4ull * 64 * static_cast<std::uint64_t>(n * n * k * 3);
        auto p0 = plan::generate("synth", req, &t, opt);
        for (DataType dt : {DataType::Float32, DataType::Int8}) {
          auto p = plan::resized(*p0, plan::granularity(p0->info()).even * 5 * size_of(dt), size_of(dt));
          for (RedOp op : plan::facts(c).reduces ? std::vector<RedOp>{RedOp::Sum, RedOp::Avg} : std::vector<RedOp>{RedOp::Sum}) {
            Job job{p->info().req, dt, op};
            INFO(nh.first << " x" << nh.second << " k=" << k << " " << plan::to_string(c) << " " << to_string(dt) << " " << to_string(op));
            CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
            bool safe = plan::in_place_problem(*p).empty();
            CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
            ++runs;
          }
        }
      }
  CHECK(runs == 96);
}

TEST_CASE("synth: a host share (sends staged through host memory, channel_paths) runs exactly, threads as ranks") {
  // dgx-a100 x1 at 1 GiB: synth sends a share of each root's slice as stars on "host" channels
  // (docs/synth.md "The PCIe path beside NVLink"), Broadcast's and Reduce's share down a chain
  // of them, AlltoAll's last chunks of each block straight; resized small, the plan's data is the same.
  // Each collective once per data type it needs (a gather moves bytes: one type), each
  // reduction op once (the sanitizer pass runs this test 20 x slower).
  topo::Topology t = topo::synth({"dgx-a100", 1, ""});
  int n = static_cast<int>(t.num_ranks()), runs = 0;
  struct Case {
    Collective coll;
    DataType dt;
    RedOp op;
  };
  for (Case k : {Case{Collective::AllGather, DataType::Float32, RedOp::Sum}, Case{Collective::ReduceScatter, DataType::Float32, RedOp::Sum},
                 Case{Collective::ReduceScatter, DataType::Int8, RedOp::Avg}, Case{Collective::AllReduce, DataType::Int8, RedOp::Sum},
                 Case{Collective::AllReduce, DataType::Float32, RedOp::Avg}, Case{Collective::Broadcast, DataType::Float32, RedOp::Sum},
                 Case{Collective::Reduce, DataType::Float32, RedOp::Max}, Case{Collective::AlltoAll, DataType::Float32, RedOp::Sum}}) {
    plan::Request req{k.coll, std::uint64_t{1} << 30, n, 0};
    // One root's trees at 32 chunks, the fewest at which the host share pays (at their default,
    // 128, the run takes 4 times as long); every rank's at one tree a root, the default's count
    // here, so that no tree count that packs the host paths themselves (host arcs) is laid out.
    plan::AlgoOptions opt;
    if (k.coll == Collective::Broadcast || k.coll == Collective::Reduce) opt.pipeline = 32;
    else if (k.coll != Collective::AlltoAll) opt.channels = 1;
    auto p0 = plan::generate("synth", req, &t, opt);
    REQUIRE(p0->info().params.count("host_chunks"));
    REQUIRE_FALSE(p0->info().channel_paths.empty());
    auto p = plan::resized(*p0, plan::granularity(p0->info()).even * 3 * size_of(k.dt), size_of(k.dt));
    Job job{p->info().req, k.dt, k.op};
    INFO(plan::to_string(k.coll) << " " << to_string(k.dt) << " " << to_string(k.op));
    CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
    bool safe = plan::in_place_problem(*p).empty();
    CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
    ++runs;
  }
  CHECK(runs == 8);
}

TEST_CASE("synth: symmetric trees (host 0's replicated, --inter symmetric) run exactly, threads as ranks") {
  // Two dgx-h100 and two mi300x hosts: one group of twin hosts, stars inside that rotate.
  int runs = 0;
  for (const char* node : {"dgx-h100", "mi300x"})
    for (int k : {1, 2})
      for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
        topo::Topology t = topo::synth({node, 2, ""});
        int n = static_cast<int>(t.num_ranks());
        plan::AlgoOptions opt;
        opt.channels = k;
        opt.pipeline = 3;
        opt.inter = "symmetric";
        plan::Request req{c, 4ull * 64 * static_cast<std::uint64_t>(n * n * k * 3), n, 0};
        auto p0 = plan::generate("synth", req, &t, opt);
        REQUIRE(p0->info().params.count("sym_grid"));
        for (DataType dt : {DataType::Float32, DataType::Int8}) {
          auto p = plan::resized(*p0, plan::granularity(p0->info()).even * 5 * size_of(dt), size_of(dt));
          Job job{p->info().req, dt, RedOp::Sum};
          INFO(node << " k=" << k << " " << plan::to_string(c) << " " << to_string(dt));
          CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
          bool safe = plan::in_place_problem(*p).empty();
          CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
          ++runs;
        }
      }
  CHECK(runs == 24);
}

TEST_CASE("synth: Broadcast and Reduce by rails (one root's trees on hosts of one size) run exactly, threads as ranks") {
  // Two dgx-h100 hosts (one inter-host arc a rail) and four PCIe hosts of 4 GPUs (chains or
  // mirrored heaps), the root on the first host and on a later one at another local index.
  int runs = 0;
  for (auto nh : {std::pair{"dgx-h100", 2}, {"pcie-8gpu:gpus=4", 4}})
    for (Collective c : {Collective::Broadcast, Collective::Reduce}) {
      topo::Topology t = topo::synth({nh.first, nh.second, ""});
      int n = static_cast<int>(t.num_ranks());
      for (int root : {0, n - 3}) {
        plan::AlgoOptions opt;
        opt.pipeline = 2;
        opt.inter = "symmetric";
        plan::Request req{c, 4ull * 64 * 112 * 2, n, root};
        auto p0 = plan::generate("synth", req, &t, opt);
        REQUIRE(p0->info().params.count("rails_fanout"));
        auto p = plan::resized(*p0, plan::granularity(p0->info()).even * 3 * size_of(DataType::Float32), size_of(DataType::Float32));
        Job job{p->info().req, DataType::Float32, RedOp::Sum};
        INFO(nh.first << " x" << nh.second << " " << plan::to_string(c) << " root " << root);
        CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
        bool safe = plan::in_place_problem(*p).empty();
        CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
        ++runs;
      }
    }
  CHECK(runs == 8);
}

TEST_CASE("synth: torus trees (rank 0's translated, --inter torus) run exactly, threads as ranks") {
  // A 3x3 torus and a 2x2x2 one (rings of 2: one link a dimension) of one GPU a host.
  int runs = 0;
  for (const char* dims : {"3x3", "2x2x2"})
    for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
      int n = std::string(dims) == "3x3" ? 9 : 8;
      topo::Topology t = topo::synth({"pcie-8gpu:gpus=1", n, std::string("torus:dims=") + dims});
      plan::AlgoOptions opt;
      opt.pipeline = 2;
      opt.inter = "torus";
      plan::Request req{c, 4ull * 64 * static_cast<std::uint64_t>(n * n * 6 * 2), n, 0};
      auto p0 = plan::generate("synth", req, &t, opt);
      REQUIRE(p0->info().params.count("sym_torus"));
      auto p = plan::resized(*p0, plan::granularity(p0->info()).even * 5 * size_of(DataType::Float32), size_of(DataType::Float32));
      Job job{p->info().req, DataType::Float32, RedOp::Sum};
      INFO(dims << " " << plan::to_string(c));
      CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
      bool safe = plan::in_place_problem(*p).empty();
      CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
      ++runs;
    }
  CHECK(runs == 6);
}

TEST_CASE("synth: AlltoAll from the flow LP runs exactly on the topologies it was made for, threads as ranks") {
  // A star of one NVSwitch (straight sends only), DGX-1's cube-mesh (chunks relayed over NVLink)
  // and two DGX H100 hosts (a lane per link out of each rank: the peers behind a NIC in turn), each
  // laid out at 1 GiB as it would be planned, then run at a small size.
  int runs = 0;
  for (auto nh : {std::pair{"dgx-a100", 1}, {"dgx1-v100", 1}, {"dgx-h100", 2}}) {
    auto [node, hosts] = nh;  // INFO names nh: clang 14 cannot capture a structured binding
    topo::Topology t = topo::synth({node, hosts, ""});
    int n = static_cast<int>(t.num_ranks());
    auto p0 = plan::generate(
        "synth",
        {Collective::AlltoAll, (std::uint64_t{1} << 30) / static_cast<std::uint64_t>(n * n) * static_cast<std::uint64_t>(n * n), n, 0}, &t);
    if (hosts == 2) CHECK(p0->info().channels < n * (n - 1));  // fewer lanes than peers
    if (std::string(node) == "dgx1-v100") CHECK_FALSE(p0->info().params.at("relays").empty());
    for (DataType dt : {DataType::Float32, DataType::Int8}) {
      auto p = plan::resized(*p0, plan::granularity(p0->info()).even * size_of(dt), size_of(dt));
      Job job{p->info().req, dt, RedOp::Sum};
      INFO(nh.first << " x" << nh.second << " " << to_string(dt));
      CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
      bool safe = plan::in_place_problem(*p).empty();
      CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
      ++runs;
    }
  }
  CHECK(runs == 6);
}

TEST_CASE("uneven sizes: every algorithm, collective and datatype, chunks split at whole elements, threads as ranks") {
  const Collective colls[] = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                              Collective::AlltoAll,  Collective::Broadcast,     Collective::Reduce};
  int runs = 0;
  for (int n : {1, 3, 5, 7})
    for (Collective c : colls)
      for (const plan::Algorithm* algo : plan::algorithms()) {
        // Odd sizes (1000 bytes, 64K + 24 bytes) rounded to whole elements (per rank), as nccl-tests does.
        for (std::uint64_t bytes : {std::uint64_t{1000}, std::uint64_t{(1 << 16) + 24}})
          for (DataType t : kDataTypes) {
            plan::Request req{c, bytes, n, n - 1, static_cast<std::uint32_t>(size_of(t))};
            if (!algo->supports(req, nullptr, nullptr)) continue;
            plan::Rounded r = plan::round_to_elements(req);
            auto p = plan::generate(algo->name(), r.req, nullptr);
            if (plan::granularity(p->info()).even != 0 && r.req.bytes / size_of(t) % plan::granularity(p->info()).even == 0) continue;
            Job job{p->info().req, t, RedOp::Sum};
            INFO(algo->name() << " " << plan::to_string(c) << " n=" << n << " " << r.req.bytes << " bytes " << to_string(t));
            CHECK(plan::verify(*p).error == "");
            CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
            bool safe = plan::in_place_problem(*p).empty();
            CHECK(run_threads(*p, job, Placement::InPlace, safe ? InPlaceMode::Direct : InPlaceMode::Staged) == 0);
            ++runs;
          }
      }
  // Only sizes whose chunks split unevenly count; most of them do.
  CHECK(runs >= 300);
}

TEST_CASE("pattern: #wrong counts exactly the corrupted elements") {
  Job job{{Collective::AllReduce, 4 * 100, 5, 0}, DataType::Float32, RedOp::Sum};
  std::vector<float> out(100);
  // The right answer, built from the definition by hand.
  for (std::size_t i = 0; i < out.size(); ++i) {
    double s = 0;
    for (int r = 0; r < 5; ++r) s += input_value(job, r, i);
    out[i] = static_cast<float>(s);
  }
  CHECK(count_wrong(job, 2, out.data()) == 0);
  out[17] += 1;
  out[99] = 0;
  CHECK(count_wrong(job, 2, out.data()) == 2);
}

TEST_CASE("resized plans keep their programs, split chunks unevenly at whole elements, refuse part elements per rank") {
  auto p = plan::generate("ring", plan::Request{Collective::AllReduce, 4096, 4, 0}, nullptr);
  plan::Granularity g = plan::granularity(p->info());
  CHECK(g.step == 1);
  CHECK(g.even == 4);  // 4 chunks
  // 7 floats over 4 chunks: 1, 2, 2, 2 elements, never a part of one.
  auto q = plan::resized(*p, 4 * 7, 4);
  CHECK(q->info().req.bytes == 28);
  CHECK(q->info().req.elem_bytes == 4);
  CHECK(q->program(1).size() == p->program(1).size());
  detail::RankProgram prog = detail::compile(*q, 1);
  std::vector<std::uint64_t> sizes;
  for (std::uint32_t c = 0; c < 4; ++c) sizes.push_back(plan::chunk_bytes(q->info(), plan::Buf::Input, c, 1));
  CHECK(sizes == std::vector<std::uint64_t>{4, 8, 8, 8});
  for (const detail::ExecOp& o : prog.ops) {
    CHECK(o.bytes % 4 == 0);
    CHECK(o.src_off % 4 == 0);
    CHECK(o.dst_off % 4 == 0);
  }
  CHECK_THROWS_WITH_AS(plan::resized(*p, 30, 4), "plan: cannot run at 30 bytes of 4-byte elements: needs a multiple of 1 elements",
                       InputError);
  auto ag = plan::generate("ring", plan::Request{Collective::AllGather, 4096, 4, 0}, nullptr);
  CHECK(plan::granularity(ag->info()).step == 4);
  CHECK_THROWS_WITH_AS(plan::resized(*ag, 4 * 6, 4), "plan: cannot run at 24 bytes of 4-byte elements: needs a multiple of 4 elements",
                       InputError);
}

TEST_CASE("in place: a rank's copy of its own block onto itself is dropped, what it ordered is kept") {
  // direct AllGather copies its input into its own output slot: in place that is a copy onto
  // itself, whose write would race with the sends reading the block on other channels.
  auto ag = plan::generate("direct", plan::Request{Collective::AllGather, 4 * 64 * 4, 4, 0}, nullptr);
  CHECK(plan::in_place_problem(*ag) == "");
  plan::ExplicitPlan form = plan::in_place_form(*ag);
  for (int r = 0; r < 4; ++r)
    for (const plan::Op& o : form.program_ref(r)) CHECK_FALSE((o.type == plan::OpType::Copy && o.src == o.dst));
  // Still caught: a plan that overwrites what in place still needs (pairwise AlltoAll receives
  // step 1's block into the slot that step 2 has yet to send).
  auto a2a = plan::generate("pairwise", plan::Request{Collective::AlltoAll, 4 * 9 * 8, 3, 0}, nullptr);
  CHECK(plan::in_place_problem(*a2a).find("not safe on overlapping buffers: rank 0 output chunk") == 0);
}

TEST_CASE("streaming copy: every byte of every size and alignment, nothing around it") {
  std::vector<std::byte> src(3 << 20), dst(src.size() + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{63},
                        std::size_t{64}, std::size_t{65}, std::size_t{4096 + 17}, std::size_t{(2 << 20) + 5}})
    for (std::size_t d : {0, 1, 8, 15})
      for (std::size_t s : {0, 3}) {
        INFO("n=" << n << " dst+" << d << " src+" << s);
        std::fill(dst.begin(), dst.end(), std::byte{0xee});
        detail::copy_streaming(dst.data() + d, src.data() + s, n);
        CHECK(std::memcmp(dst.data() + d, src.data() + s, n) == 0);
        bool untouched = true;
        for (std::size_t i = 0; i < dst.size(); ++i)
          if (i < d || i >= d + n) untouched = untouched && dst[i] == std::byte{0xee};
        CHECK(untouched);
      }
}

TEST_CASE("streaming copies: large copies into bytes nothing else reads, per placement") {
  constexpr std::uint64_t kBlock = detail::kStreamingCopyBytes;
  auto copies = [](const plan::Plan& p, bool in_place) {
    detail::RankProgram prog = detail::compile(p, 1);
    InPlaceOffsets ip = in_place_offsets(p.info().req, 1);
    std::vector<std::byte> in(prog.region_bytes[0]), out(prog.region_bytes[1]), one(ip.buffer_bytes);
    std::array<std::byte*, 3> regions{in.data(), out.data(), nullptr};
    if (in_place) regions = {one.data() + ip.input_offset, one.data() + ip.output_offset, nullptr};
    std::vector<bool> s = detail::streaming_copies(prog, regions);
    int streamed = 0, large = 0;
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      large += prog.ops[i].type == plan::OpType::Copy && prog.ops[i].bytes >= kBlock;
      streamed += s[i];
    }
    return std::pair{streamed, large};
  };
  plan::Request big{Collective::AllGather, 4 * kBlock, 4, 0};
  // direct and ring send their own block from the input: its copy into the output is never read.
  auto direct = plan::generate("direct", big, nullptr);
  CHECK(copies(*direct, false) == std::pair{1, 1});
  CHECK(copies(*plan::generate("ring", big, nullptr), false) == std::pair{1, 1});
  // In place the copy lies onto itself: nothing to stream.
  CHECK(copies(*direct, true).first == 0);
  // Recursive doubling sends the copied block on from the output: it stays cached.
  CHECK(copies(*plan::generate("rd", big, nullptr), false) == std::pair{0, 1});
  // Below the threshold nothing streams.
  CHECK(copies(*plan::generate("direct", plan::Request{Collective::AllGather, 4 * kBlock / 2, 4, 0}, nullptr), false) ==
        std::pair{0, 0});
}

TEST_CASE("a plan whose copies stream still computes exactly, threads as ranks") {
  for (const char* algo : {"direct", "ring"}) {
    auto p = plan::generate(algo, plan::Request{Collective::AllGather, 4 * detail::kStreamingCopyBytes + 4 * 64, 4, 0},
                            nullptr);
    Job job{p->info().req, DataType::Float32, RedOp::Sum};
    INFO(algo);
    CHECK(run_threads(*p, job, Placement::OutOfPlace, InPlaceMode::Direct) == 0);
    CHECK(run_threads(*p, job, Placement::InPlace, InPlaceMode::Direct) == 0);
  }
}

namespace {

// A network where nothing ever arrives: every peer is gone.
class Silent final : public detail::Transport {
 public:
  std::uint32_t post_send(int, std::uint16_t, const std::byte*, std::uint64_t) override { return next_++; }
  std::uint32_t post_recv(int, std::uint16_t, std::byte*, std::uint64_t) override { return next_++; }
  void poll(std::vector<std::uint32_t>&) override {}

 private:
  std::uint32_t next_ = 0;
};

}  // namespace

TEST_CASE("a rank whose peers are gone stops after the timeout with a TimeoutError naming the op it waits on") {
  auto p = plan::generate("ring", {Collective::AllReduce, 4096, 4, 0}, nullptr);
  detail::RankProgram prog = detail::compile(*p, 0);
  detail::Runner runner(prog, DataType::Float32, RedOp::Sum, 0.05);
  std::vector<std::byte> in(prog.region_bytes[0] + 1), out(prog.region_bytes[1] + 1), scratch(prog.region_bytes[2] + 1);
  Silent net;
  CHECK_THROWS_AS(runner.run(net, {in.data(), out.data(), scratch.data()}), TimeoutError);
  try {
    runner.run(net, {in.data(), out.data(), scratch.data()});
  } catch (const TimeoutError& e) {
    CHECK(std::string(e.what()).rfind("rank 0: no progress for 0.05 s: waiting on op ", 0) == 0);
    CHECK(exit_code_for(e) == 3);  // still a SystemError
  }
}
