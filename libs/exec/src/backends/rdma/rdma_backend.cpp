// The rdma backend: host buffers, the plan run by program.h's scheduler over ibverbs (one
// reliable-connected queue pair per peer, RDMA writes with immediate into landing slots:
// rdma_transport.h), queue pairs exchanged over MPI. On a machine without an RDMA device it stops
// at start, before any data moves. It has no native collective of its own (the mpi backend's
// baseline is MPI's).

#include <algorithm>
#include <cstring>

#include "../../host_rank.h"
#include "../registry.h"
#include "collkit/core/error.h"
#include "collkit/core/memory.h"
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
  std::uint64_t memory_available() const override { return collkit::host_memory_available(); }
  std::string cannot_run(const Job&) const override { return {}; }
  std::string native_name(Collective) const override { return "none"; }
  std::string native_cannot_run(const Job&) const override {
    return "the rdma backend has no native collective (compare with --backend mpi)";
  }

  std::uint64_t bytes_needed(const Setup& s) const override { return detail::HostRank::bytes_needed(s, world_.rank()); }

  void setup(const Setup& s) override {
    if (s.plan->info().channels > shape_.max_channels)
      throw UnsupportedError("rdma: the plan has " + std::to_string(s.plan->info().channels) + " channels, this backend carries at most " +
                             std::to_string(shape_.max_channels) + " (lower --channels)");
    host_.setup(s, world_.rank());
  }

  void write_input(std::size_t, Placement p, std::span<const std::byte> data) override { host_.write_input(p, data); }

  void read_output(std::size_t, Placement p, Subject, std::span<std::byte> data) override {
    std::memcpy(data.data(), host_.output(p), data.size());
  }

  void run(Subject who, Placement p) override {
    if (who == Subject::Native) throw UnsupportedError(native_cannot_run(host_.current().job));
    host_.run(*transport_, p);
  }

  void synchronize() override {}

 private:
  World& world_;
  rdma::Shape shape_;  // 4 slots of 128 KiB per peer and channel, 8 channels
  std::unique_ptr<rdma::Device> device_;
  std::unique_ptr<rdma::VerbsWire> wire_;
  std::unique_ptr<rdma::Transport> transport_;
  detail::HostRank host_;
};

}  // namespace

namespace detail {
std::unique_ptr<Backend> make_rdma_backend(World& world, double timeout_s) {
  return std::make_unique<RdmaBackend>(world, timeout_s);
}
}  // namespace detail

}  // namespace collkit::exec
