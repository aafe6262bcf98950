// The rdma backend's landing-slot protocol (backends/rdma/rdma_transport.h) without a device:
// ranks are threads joined by an in-memory Wire that delivers writes and messages in order per
// pair, as a reliable connection does. program.h's Runner drives every algorithm's plan over it
// with tiny slots (every message cut into many pieces, credits always short), and every rank's
// output must be exact. The ibverbs side (verbs_wire.cpp) needs a device and is not run here.

#include <doctest/doctest.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "backends/rdma/rdma_transport.h"
#include "collkit/core/error.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/pattern.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/transform.h"
#include "host_rank.h"
#include "program.h"

namespace collkit::exec {

namespace {

using rdma::Completion;

struct Fabric {
  explicit Fabric(int n, std::uint64_t bytes)
      : out(static_cast<std::size_t>(n), std::vector<std::byte>(bytes)),
        land(static_cast<std::size_t>(n), std::vector<std::byte>(bytes)),
        queue(static_cast<std::size_t>(n)) {}
  std::mutex mu;
  std::vector<std::vector<std::byte>> out, land;
  std::vector<std::vector<Completion>> queue;
};

class LoopWire final : public rdma::Wire {
 public:
  LoopWire(Fabric& f, int rank) : f_(f), me_(static_cast<std::size_t>(rank)) {}
  std::byte* outgoing() override { return f_.out[me_].data(); }
  std::byte* landing() override { return f_.land[me_].data(); }
  std::uint64_t region_bytes() const override { return f_.out[me_].size(); }
  void write(int peer, std::uint64_t from, std::uint64_t to, std::uint64_t bytes, std::uint32_t imm, std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(f_.mu);
    auto p = static_cast<std::size_t>(peer);
    if (to + bytes > f_.land[p].size()) throw Error("write past the landing region");
    std::memcpy(f_.land[p].data() + to, f_.out[me_].data() + from, bytes);
    f_.queue[p].push_back({Completion::Kind::DataArrived, static_cast<int>(me_), 0, imm, static_cast<std::uint32_t>(bytes)});
    f_.queue[me_].push_back({Completion::Kind::WriteDone, peer, id, 0, 0});
  }
  void message(int peer, std::uint32_t imm, std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(f_.mu);
    f_.queue[static_cast<std::size_t>(peer)].push_back({Completion::Kind::MessageArrived, static_cast<int>(me_), 0, imm, 0});
    f_.queue[me_].push_back({Completion::Kind::MessageSent, peer, id, 0, 0});
  }
  void poll(std::vector<Completion>& out) override {
    {
      std::lock_guard<std::mutex> lock(f_.mu);
      out.insert(out.end(), f_.queue[me_].begin(), f_.queue[me_].end());
      f_.queue[me_].clear();
    }
    if (out.empty()) std::this_thread::yield();  // more threads than cores: let the peers run
  }

 private:
  Fabric& f_;
  std::size_t me_;
};

// Runs `p` on n threads over the protocol; returns the wrong elements, or throws what a rank threw.
std::uint64_t run_over_protocol(const plan::Plan& p, const Job& job, bool in_place, const rdma::Shape& shape) {
  const int n = p.nranks();
  Fabric fabric(n, shape.region_bytes(n));
  std::vector<std::uint64_t> wrong(static_cast<std::size_t>(n), 0);
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        LoopWire wire(fabric, r);
        rdma::Transport transport(wire, r, n, shape);
        detail::HostRank host;  // the rdma backend's buffers and placements
        host.setup(Setup{&p, job, InPlaceMode::Direct, 20}, r);
        Placement placement = in_place ? Placement::InPlace : Placement::OutOfPlace;
        std::vector<std::byte> input(input_count(job) * size_of(job.type));
        fill_input(job, r, input.data());
        for (int rep = 0; rep < 2; ++rep) {  // twice: the second run starts on the credits the first returned
          host.write_input(placement, input);
          host.run(transport, placement);
        }
        wrong[static_cast<std::size_t>(r)] = count_wrong(job, r, host.output(placement));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  std::uint64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (!errors[static_cast<std::size_t>(r)].empty()) throw Error("rank " + std::to_string(r) + ": " + errors[static_cast<std::size_t>(r)]);
    total += wrong[static_cast<std::size_t>(r)];
  }
  return total;
}

}  // namespace

TEST_CASE("the rdma landing-slot protocol runs every algorithm exactly with slots far smaller than the messages") {
  const plan::Collective colls[] = {plan::Collective::AllReduce, plan::Collective::ReduceScatter, plan::Collective::AllGather,
                                    plan::Collective::AlltoAll,  plan::Collective::Broadcast,     plan::Collective::Reduce};
  rdma::Shape tiny;
  tiny.slot_bytes = 12;  // not a multiple of any element size but 4 and 1: pieces split elements
  tiny.slots = 2;
  tiny.max_channels = 4;
  int plans_run = 0;
  for (int n : {2, 3, 4})
    for (plan::Collective coll : colls)
      for (const plan::Algorithm* algo : plan::algorithms())
        for (int channels : {0, 2}) {
          plan::Request req{coll, 4096, n, plan::facts(coll).has_root ? n - 1 : 0};
          std::string why;
          if (!algo->supports(req, nullptr, &why)) continue;
          plan::AlgoOptions ao;
          ao.channels = channels;
          std::unique_ptr<plan::Plan> first;
          try {
            first = plan::plan_for(algo->name(), req, nullptr, ao);
          } catch (const InputError&) {
            continue;
          }
          if (first->info().channels > tiny.max_channels) continue;
          for (DataType type : {DataType::Float64, DataType::Int8}) {
            std::uint64_t esize = size_of(type), step = plan::granularity(first->info()).step;
            REQUIRE(step > 0);
            auto p = plan::resized(*first, step * std::max<std::uint64_t>(1, 24 / step) * esize, esize);
            Job job{p->info().req, type, type == DataType::Int8 ? RedOp::Prod : RedOp::Sum};
            std::string what = std::string(algo->name()) + " " + std::string(plan::to_string(coll)) + " n=" + std::to_string(n) +
                               " channels=" + std::to_string(p->info().channels) + " " + std::string(to_string(type));
            INFO(what);
            CHECK(run_over_protocol(*p, job, false, tiny) == 0);
            // In place on overlapping buffers: the Runner copies sends that later ops overwrite.
            bool direct = plan::in_place_problem(*p).empty();
            if (direct) CHECK(run_over_protocol(*p, job, true, tiny) == 0);
            ++plans_run;
          }
        }
  CHECK(plans_run > 50);
}

TEST_CASE("the rdma protocol refuses a channel beyond its lanes") {
  Fabric fabric(2, rdma::Shape{}.region_bytes(2));
  LoopWire wire(fabric, 0);
  rdma::Transport t(wire, 0, 2);
  std::byte b{};
  CHECK_THROWS_WITH_AS(t.post_send(1, 8, &b, 1), "rdma: channel 8: this backend carries at most 8 channels", UnsupportedError);
}

}  // namespace collkit::exec
