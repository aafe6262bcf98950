// The scheduler of program.h run with threads as ranks over an in-process transport (STYLE.md
// rule 10): every algorithm, collective, rank count, datatype and placement must produce exactly
// what pattern.h defines, the same check coll-run makes under mpirun.

#include <doctest/doctest.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "collkit/core/error.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/pattern.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/transform.h"
#include "collkit/plan/verify.h"
#include "program.h"

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
      REQUIRE(box.front().size() == it->bytes);
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
        detail::RankProgram prog = detail::compile(p, r);
        detail::Runner runner(prog, job.type, job.op, 20);
        std::size_t es = size_of(job.type);
        std::vector<std::byte> in(input_count(job) * es), out(output_count(job) * es), scratch(prog.region_bytes[2]);
        InPlaceOffsets ip = in_place_offsets(job.req, r);
        std::vector<std::byte> one(ip.buffer_bytes), stage(in.size());
        std::array<std::byte*, 3> regions{in.data(), out.data(), scratch.data()};
        if (placement == Placement::InPlace) {
          regions[0] = one.data() + ip.input_offset;
          regions[1] = one.data() + ip.output_offset;
        }
        fill_input(job, r, regions[0]);
        if (placement == Placement::InPlace && mode == InPlaceMode::Staged) {
          std::memcpy(stage.data(), regions[0], stage.size());
          regions[0] = stage.data();
        }
        Loopback t(po, r);
        runner.run(t, regions);
        bool mean = job.op == RedOp::Avg && plan::facts(job.req.coll).reduces &&
                    (job.req.coll != Collective::Reduce || r == job.req.root);
        if (mean) scale_mean(job.type, regions[1], output_count(job), n);
        wrong[static_cast<std::size_t>(r)] = count_wrong(job, r, regions[1]);
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
        std::uint64_t step = plan::granularity(p0->info()).step;
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

TEST_CASE("resized plans keep their programs and refuse sizes their chunks do not divide") {
  auto p = plan::generate("ring", plan::Request{Collective::AllReduce, 4096, 4, 0}, nullptr);
  std::uint64_t step = plan::granularity(p->info()).step;
  CHECK(step > 0);
  auto q = plan::resized(*p, step * 4 * 7, 4);
  CHECK(q->info().req.bytes == step * 28);
  CHECK(q->program(1).size() == p->program(1).size());
  CHECK_THROWS_AS(plan::resized(*p, step * 4 + 4, 4), InputError);
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
