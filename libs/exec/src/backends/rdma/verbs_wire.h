#pragma once
// The Wire over ibverbs: one reliable-connected queue pair per peer on one completion queue,
// both regions registered (the landing one for remote writes), queue pair addresses and the
// landing region's address and key exchanged over MPI. Each queue pair keeps `depth` receives
// posted (writes with immediate and messages both consume one) and reposts as they complete.

#include <memory>
#include <vector>

#include "collkit/exec/world.h"
#include "verbs.h"
#include "wire.h"

namespace collkit::exec::rdma {

class VerbsWire final : public Wire {
 public:
  /// `depth`: work requests each queue pair may have outstanding per direction.
  VerbsWire(Device& device, World& world, std::uint64_t region_bytes, int depth, double timeout_s);
  ~VerbsWire() override;
  VerbsWire(const VerbsWire&) = delete;
  VerbsWire& operator=(const VerbsWire&) = delete;

  std::byte* outgoing() override { return outgoing_.get(); }
  std::byte* landing() override { return landing_.get(); }
  std::uint64_t region_bytes() const override { return bytes_; }
  void write(int peer, std::uint64_t from, std::uint64_t to, std::uint64_t bytes, std::uint32_t imm, std::uint64_t id) override;
  void message(int peer, std::uint32_t imm, std::uint64_t id) override;
  void poll(std::vector<Completion>& out) override;

 private:
  void post_receive(int peer);

  int me_ = 0;
  std::uint64_t bytes_ = 0;
  std::unique_ptr<std::byte[]> outgoing_, landing_;
  ibv_mr* out_mr_ = nullptr;
  ibv_mr* land_mr_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;  // by peer; none for this rank
  std::vector<std::uint64_t> remote_addr_;
  std::vector<std::uint32_t> remote_key_;
};

}  // namespace collkit::exec::rdma
