// The mpi backend: host buffers, MPI non-blocking point-to-point on a communicator of its own (a
// duplicate of its World's: MPI_COMM_WORLD's, or a group's from World::split()), the plan's
// channels as concurrent pipelines (program.h's scheduler), host reductions (reduce.cpp). Its
// baseline is the MPI library's own collective on the same buffers.

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>

#include "../../host_rank.h"
#include "../../mpi_check.h"
#include "../../slow_transport.h"
#include "../registry.h"
#include "collkit/core/error.h"
#include "collkit/core/memory.h"

namespace collkit::exec {

namespace {

using plan::Collective;

// Messages over 1 GiB go as several: MPI counts are ints.
constexpr std::uint64_t kMaxMessage = 1ull << 30;

class MpiTransport final : public detail::Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {}

  std::uint32_t post_send(int peer, std::uint16_t channel, const std::byte* data, std::uint64_t bytes) override {
    return post(peer, channel, const_cast<std::byte*>(data), bytes, true);
  }
  std::uint32_t post_recv(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes) override {
    return post(peer, channel, data, bytes, false);
  }

  void poll(std::vector<std::uint32_t>& finished) override {
    if (active_ == 0) return;
    int count = 0;
    indices_.resize(reqs_.size());
    mpi::check(MPI_Testsome(static_cast<int>(reqs_.size()), reqs_.data(), &count, indices_.data(), MPI_STATUSES_IGNORE),
               "MPI_Testsome");
    if (count == MPI_UNDEFINED) return;
    for (int k = 0; k < count; ++k) {
      auto slot = static_cast<std::size_t>(indices_[k]);
      std::uint32_t h = owner_[slot];
      free_slots_.push_back(slot);
      --active_;
      if (--parts_left_[h] == 0) {
        finished.push_back(h);
        free_handles_.push_back(h);
      }
    }
  }

 private:
  std::uint32_t post(int peer, std::uint16_t channel, std::byte* data, std::uint64_t bytes, bool send) {
    std::uint32_t h;
    if (free_handles_.empty()) {
      h = static_cast<std::uint32_t>(parts_left_.size());
      parts_left_.push_back(0);
    } else {
      h = free_handles_.back();
      free_handles_.pop_back();
    }
    std::uint64_t off = 0;
    do {
      auto n = static_cast<int>(std::min(bytes - off, kMaxMessage));
      std::size_t slot = take_slot();
      int rc = send ? MPI_Isend(data + off, n, MPI_BYTE, peer, channel, comm_, &reqs_[slot])
                    : MPI_Irecv(data + off, n, MPI_BYTE, peer, channel, comm_, &reqs_[slot]);
      mpi::check(rc, send ? "MPI_Isend" : "MPI_Irecv");
      owner_[slot] = h;
      ++parts_left_[h];
      ++active_;
      off += static_cast<std::uint64_t>(n);
    } while (off < bytes);
    return h;
  }

  std::size_t take_slot() {
    if (!free_slots_.empty()) {
      std::size_t s = free_slots_.back();
      free_slots_.pop_back();
      return s;
    }
    reqs_.push_back(MPI_REQUEST_NULL);
    owner_.push_back(0);
    return reqs_.size() - 1;
  }

  MPI_Comm comm_;
  std::vector<MPI_Request> reqs_;
  std::vector<std::uint32_t> owner_;
  std::vector<std::size_t> free_slots_;
  std::vector<int> indices_;
  std::vector<std::uint32_t> parts_left_;
  std::vector<std::uint32_t> free_handles_;
  std::size_t active_ = 0;
};

// Half and bfloat16 have no MPI type: 2-byte types of their own, reduced by user operators.
struct SixteenBit {
  MPI_Datatype half = MPI_DATATYPE_NULL, bf16 = MPI_DATATYPE_NULL;
  MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};
SixteenBit* g_sixteen = nullptr;  // MPI user operators get no closure

template <RedOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  DataType t = *type == g_sixteen->bf16 ? DataType::BFloat16 : DataType::Float16;
  reduce(t, Op, inout, in, inout, static_cast<std::size_t>(*len));
}

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(World& world, double timeout_s) : world_(world), timeout_s_(timeout_s) {
    mpi::check(MPI_Comm_dup(MPI_Comm_f2c(world.communicator()), &comm_), "MPI_Comm_dup");
    mpi::check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi::check(MPI_Type_contiguous(2, MPI_BYTE, &sixteen_.half), "MPI_Type_contiguous");
    mpi::check(MPI_Type_contiguous(2, MPI_BYTE, &sixteen_.bf16), "MPI_Type_contiguous");
    mpi::check(MPI_Type_commit(&sixteen_.half), "MPI_Type_commit");
    mpi::check(MPI_Type_commit(&sixteen_.bf16), "MPI_Type_commit");
    mpi::check(MPI_Op_create(&user_reduce<RedOp::Sum>, 1, &sixteen_.ops[0]), "MPI_Op_create");
    mpi::check(MPI_Op_create(&user_reduce<RedOp::Prod>, 1, &sixteen_.ops[1]), "MPI_Op_create");
    mpi::check(MPI_Op_create(&user_reduce<RedOp::Min>, 1, &sixteen_.ops[2]), "MPI_Op_create");
    mpi::check(MPI_Op_create(&user_reduce<RedOp::Max>, 1, &sixteen_.ops[3]), "MPI_Op_create");
    g_sixteen = &sixteen_;
    transport_ = std::make_unique<MpiTransport>(comm_);
  }

  ~MpiBackend() override {
    if (std::uncaught_exceptions() > 0) {
      // Destroyed by a failure (a stalled or dead peer, the launcher ending the job): receives and
      // sends of the abandoned plan or native collective may still be in flight, and MPI moves
      // them on in whatever MPI call comes next (the roll call), into these buffers and through
      // these operators. They stay, leaked: the process is about to end (freed, a late message
      // wrote into freed memory and the rank died of SIGSEGV instead of naming its dead peer).
      [[maybe_unused]] auto* parked = new detail::HostRank(std::move(host_));
      g_sixteen = new SixteenBit(sixteen_);
      [[maybe_unused]] auto* parked_slow = slow_.release();
      [[maybe_unused]] auto* parked_timed = timed_.release();
      [[maybe_unused]] auto* parked_transport = transport_.release();
      return;
    }
    for (MPI_Op& op : sixteen_.ops) MPI_Op_free(&op);
    MPI_Type_free(&sixteen_.half);
    MPI_Type_free(&sixteen_.bf16);
    MPI_Comm_free(&comm_);
    g_sixteen = nullptr;
  }

  std::string_view name() const override { return "mpi"; }
  std::string library_version() const override { return world_.mpi_version(); }
  std::vector<int> local_ranks() const override { return {world_.rank()}; }
  int nranks() const override { return world_.size(); }
  std::uint64_t memory_available() const override { return collkit::host_memory_available(); }
  std::string cannot_run(const Job&) const override { return {}; }
  std::string native_cannot_run(const Job& job) const override {
    // The plan splits large messages; MPI's collectives take int counts.
    std::uint64_t most = std::max(input_count(job), output_count(job));
    if (most <= static_cast<std::uint64_t>(INT_MAX)) return {};
    return native_name(job.req.coll) + " takes an int count: " + std::to_string(most) + " elements exceed 2^31-1";
  }

  std::string native_name(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "MPI_Allreduce";
      case Collective::ReduceScatter: return "MPI_Reduce_scatter_block";
      case Collective::AllGather: return "MPI_Allgather";
      case Collective::AlltoAll: return "MPI_Alltoall";
      case Collective::Broadcast: return "MPI_Bcast";
      case Collective::Reduce: return "MPI_Reduce";
    }
    return "?";
  }

  std::uint64_t bytes_needed(const Setup& s) const override { return detail::HostRank::bytes_needed(s, world_.rank()); }
  void setup(const Setup& s) override {
    host_.setup(s, world_.rank());
    native_wait_ = "in " + native_name(s.job.req.coll);  // not built inside the timed loop
  }
  void write_input(std::size_t, Placement p, std::span<const std::byte> data) override { host_.write_input(p, data); }

  void read_output(std::size_t, Placement p, Subject who, std::span<std::byte> data) override {
    const std::byte* src = host_.output(p);
    // MPI_Reduce_scatter_block in place leaves the result at the start of the buffer.
    if (p == Placement::InPlace && who == Subject::Native && host_.current().job.req.coll == Collective::ReduceScatter)
      src = host_.in_place();
    std::memcpy(data.data(), src, data.size());
  }

  void run(Subject who, Placement p) override {
    if (who == Subject::Plan) host_.run(transport(), p);
    else run_native(p);
  }

  void inject(const Injection& inj) override {
    if (inj.empty()) {
      if (slow_) slow_->set(inj);
      return;
    }
    // The pairs' own rates, measured once (every rank is here: inject() is collective), are what a
    // slowed message is held back against.
    if (!slow_)
      slow_ = std::make_unique<detail::SlowTransport>(*transport_, world_.rank(),
                                                      detail::send_rates_gbps(*transport_, world_, 1 << 20, timeout_s_));
    slow_->set(inj);
  }

  std::vector<double> probe(std::uint64_t bytes, double timeout_s) override {
    return detail::probe_receives(transport(), world_, bytes, timeout_s);
  }

  void time_sends(bool on) override {
    if (on && !timed_) timed_ = std::make_unique<detail::TimedTransport>(world_.size());
    timing_ = on;
    if (on) timed_->take_us_per_mib();  // starts over
  }

  std::vector<double> send_times() override {
    if (!timed_) return std::vector<double>(static_cast<std::size_t>(world_.size()), 0);
    return timed_->take_us_per_mib();
  }

  void synchronize() override {}

 private:
  MPI_Datatype mpi_type(DataType t) const {
    switch (t) {
      case DataType::Float32: return MPI_FLOAT;
      case DataType::Float64: return MPI_DOUBLE;
      case DataType::Int32: return MPI_INT32_T;
      case DataType::Int8: return MPI_INT8_T;
      case DataType::UInt8: return MPI_UINT8_T;
      case DataType::Float16: return sixteen_.half;
      case DataType::BFloat16: return sixteen_.bf16;
    }
    return MPI_BYTE;
  }

  MPI_Op mpi_op(DataType t, RedOp op) const {
    bool user = t == DataType::Float16 || t == DataType::BFloat16;
    switch (op) {
      case RedOp::Sum:
      case RedOp::Avg: return user ? sixteen_.ops[0] : MPI_SUM;  // Avg: sum, then divide
      case RedOp::Prod: return user ? sixteen_.ops[1] : MPI_PROD;
      case RedOp::Min: return user ? sixteen_.ops[2] : MPI_MIN;
      case RedOp::Max: return user ? sixteen_.ops[3] : MPI_MAX;
    }
    return MPI_SUM;
  }

  void run_native(Placement p) {
    const Job& job = host_.current().job;
    const plan::Request& req = job.req;
    MPI_Datatype t = mpi_type(job.type);
    MPI_Op op = mpi_op(job.type, job.op);
    bool ip = p == Placement::InPlace;
    std::byte* buf = host_.in_place();
    std::byte* send = host_.send();
    std::byte* recv = host_.recv();
    auto in = static_cast<int>(input_count(job));  // native_cannot_run() refused larger counts
    auto out = static_cast<int>(output_count(job));
    int root = req.root;
    bool is_root = world_.rank() == root;
    MPI_Request r;
    switch (req.coll) {
      case Collective::AllReduce:
        mpi::check(MPI_Iallreduce(ip ? MPI_IN_PLACE : send, ip ? buf : recv, in, t, op, comm_, &r), "MPI_Iallreduce");
        break;
      case Collective::ReduceScatter:
        mpi::check(MPI_Ireduce_scatter_block(ip ? MPI_IN_PLACE : send, ip ? buf : recv, out, t, op, comm_, &r),
                   "MPI_Ireduce_scatter_block");
        break;
      case Collective::AllGather:
        mpi::check(MPI_Iallgather(ip ? MPI_IN_PLACE : send, in, t, ip ? buf : recv, in, t, comm_, &r),
                   "MPI_Iallgather");
        break;
      case Collective::AlltoAll: {
        int per = in / req.nranks;
        mpi::check(MPI_Ialltoall(ip ? MPI_IN_PLACE : send, per, t, ip ? buf : recv, per, t, comm_, &r), "MPI_Ialltoall");
        break;
      }
      case Collective::Broadcast:
        if (!ip && is_root) std::memcpy(recv, send, plan::output_bytes(req));
        mpi::check(MPI_Ibcast(ip ? buf : recv, in, t, root, comm_, &r), "MPI_Ibcast");
        break;
      case Collective::Reduce:
        mpi::check(MPI_Ireduce(ip && is_root ? MPI_IN_PLACE : (ip ? buf : send),
                               ip ? (is_root ? buf : nullptr) : recv, in, t, op, root, comm_, &r),
                   "MPI_Ireduce");
        break;
    }
    mpi::wait_all(&r, 1, host_.current().timeout_s, native_wait_);
    finish_native(ip ? buf : recv);
  }

  void finish_native(std::byte* out) { host_.finish_mean(out); }

  // The plan's transport: through the fault injector once --inject has set one up.
  detail::Transport& transport() {
    detail::Transport& t = slow_ && !slow_->injection().empty() ? static_cast<detail::Transport&>(*slow_) : *transport_;
    if (!timing_) return t;
    timed_->wrap(t);
    return *timed_;
  }

  World& world_;
  double timeout_s_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  SixteenBit sixteen_;
  std::unique_ptr<MpiTransport> transport_;
  std::unique_ptr<detail::SlowTransport> slow_;
  std::unique_ptr<detail::TimedTransport> timed_;  // coll-run adapt's send timing
  bool timing_ = false;
  detail::HostRank host_;
  std::string native_wait_;  // what a stalled native collective was doing
};

}  // namespace

namespace detail {
std::unique_ptr<Backend> make_mpi_backend(World& world, double timeout_s) {
  return std::make_unique<MpiBackend>(world, timeout_s);
}
}  // namespace detail

}  // namespace collkit::exec
