// The rdma backend: host buffers, the plan run by program.h's scheduler over ibverbs (one
// reliable-connected queue pair per peer, RDMA writes with immediate into landing slots:
// rdma_transport.h), queue pairs exchanged over MPI. On a machine without an RDMA device it stops
// at start, before any data moves. It has no native collective of its own (the mpi backend's
// baseline is MPI's).

#include <algorithm>
#include <cstring>

#include "../../host_memory.h"
#include "../../program.h"
#include "../registry.h"
#include "collkit/core/error.h"
#include "rdma_transport.h"
#include "verbs_wire.h"

namespace collkit::exec {

namespace {

using plan::Collective;

class RdmaBackend final : public Backend {
 public:
  RdmaBackend(World& world, double timeout_s) : world_(world) {
    // Every rank learns whether every rank has a device before any of them connects.
    std::string why;
    try {
      device_ = std::make_unique<rdma::Device>();
    } catch (const UnsupportedError& e) {
      why = e.what();
    }
    std::vector<std::string> all = world.allgather(why, timeout_s);
    if (!why.empty()) throw UnsupportedError(why);
    for (std::size_t r = 0; r < all.size(); ++r)
      if (!all[r].empty()) throw UnsupportedError("rdma: rank " + std::to_string(r) + ": " + all[r]);
    wire_ = std::make_unique<rdma::VerbsWire>(*device_, world, shape_.region_bytes(world.size()), shape_.depth(), timeout_s);
    transport_ = std::make_unique<rdma::Transport>(*wire_, world.rank(), world.size(), shape_);
  }

  std::string_view name() const override { return "rdma"; }
  std::string library_version() const override { return "ibverbs on " + device_->name(); }
  std::vector<int> local_ranks() const override { return {world_.rank()}; }
  int nranks() const override { return world_.size(); }
  std::uint64_t memory_available() const override { return detail::host_memory_available(); }
  std::string cannot_run(const Job&) const override { return {}; }
  std::string native_name(Collective) const override { return "none"; }
  std::string native_cannot_run(const Job&) const override {
    return "the rdma backend has no native collective (compare with --backend mpi)";
  }

  std::uint64_t bytes_needed(const Setup& s) const override {
    const plan::PlanInfo& info = s.plan->info();
    std::uint64_t in = plan::input_bytes(s.job.req), out = plan::output_bytes(s.job.req);
    return in + out + in_place_offsets(s.job.req, world_.rank()).buffer_bytes + info.scratch_bytes +
           (s.in_place == InPlaceMode::Staged ? in : 0) + info.channels * std::min(in, plan::buffer_bytes(info, plan::Buf::Input));
  }

  void setup(const Setup& s) override {
    if (s.plan->info().channels > shape_.max_channels)
      throw UnsupportedError("rdma: the plan has " + std::to_string(s.plan->info().channels) + " channels, this backend carries at most " +
                             std::to_string(shape_.max_channels) + " (lower --channels)");
    setup_ = s;
    int rank = world_.rank();
    program_ = detail::compile(*s.plan, rank);
    runner_ = std::make_unique<detail::Runner>(program_, s.job.type, s.job.op, s.timeout_s);
    const plan::Request& req = s.job.req;
    send_.assign(plan::input_bytes(req), std::byte{0});
    recv_.assign(plan::output_bytes(req), std::byte{0});
    ip_ = in_place_offsets(req, rank);
    inplace_.assign(ip_.buffer_bytes, std::byte{0});
    scratch_.assign(s.plan->info().scratch_bytes, std::byte{0});
    stage_.assign(s.in_place == InPlaceMode::Staged ? send_.size() : 0, std::byte{0});
  }

  void write_input(std::size_t, Placement p, std::span<const std::byte> data) override {
    std::byte* dst = p == Placement::OutOfPlace ? send_.data() : inplace_.data() + ip_.input_offset;
    std::memcpy(dst, data.data(), data.size());
  }

  void read_output(std::size_t, Placement p, Subject, std::span<std::byte> data) override {
    const std::byte* src = p == Placement::OutOfPlace ? recv_.data() : inplace_.data() + ip_.output_offset;
    std::memcpy(data.data(), src, data.size());
  }

  void run(Subject who, Placement p) override {
    if (who == Subject::Native) throw UnsupportedError(native_cannot_run(setup_.job));
    std::array<std::byte*, 3> regions{send_.data(), recv_.data(), scratch_.data()};
    if (p == Placement::InPlace) {
      regions[0] = inplace_.data() + ip_.input_offset;
      regions[1] = inplace_.data() + ip_.output_offset;
      if (setup_.in_place == InPlaceMode::Staged) {
        std::memcpy(stage_.data(), regions[0], stage_.size());
        regions[0] = stage_.data();
      }
    }
    runner_->run(*transport_, regions);
    const plan::Request& req = setup_.job.req;
    if (setup_.job.op == RedOp::Avg && plan::facts(req.coll).reduces && (req.coll != Collective::Reduce || world_.rank() == req.root))
      scale_mean(setup_.job.type, regions[1], output_count(setup_.job), req.nranks);
  }

  void synchronize() override {}

 private:
  World& world_;
  rdma::Shape shape_;  // 4 slots of 128 KiB per peer and channel, 8 channels
  std::unique_ptr<rdma::Device> device_;
  std::unique_ptr<rdma::VerbsWire> wire_;
  std::unique_ptr<rdma::Transport> transport_;
  Setup setup_;
  detail::RankProgram program_;
  std::unique_ptr<detail::Runner> runner_;
  InPlaceOffsets ip_;
  std::vector<std::byte> send_, recv_, inplace_, scratch_, stage_;
};

}  // namespace

namespace detail {
std::unique_ptr<Backend> make_rdma_backend(World& world, double timeout_s) {
  return std::make_unique<RdmaBackend>(world, timeout_s);
}
}  // namespace detail

}  // namespace collkit::exec
