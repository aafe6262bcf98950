// The nccl backend: one rank per process, each on its own GPU (the local rank's, mod the GPUs it
// sees), device buffers, and the plan run as schedule.h's rounds: each round one
// ncclGroupStart/End of this rank's sends and receives in the global order every rank computes
// alike, so every group finds its peers' matching group (see schedule.h); local copies and the
// reduction kernel (receive-and-reduce lands in a per-channel staging buffer, then
// dst = src (op) staged) run between rounds. Everything goes on one stream: a group whose
// operations use several streams makes all of them wait for it and it for all of them (NCCL's
// "CUDA Stream Semantics"), so with one group per round, streams per channel would meet at every
// round anyway; the group itself moves all channels' transfers at once.
// The NCCL unique id travels over MPI. The communicator is non-blocking and every wait polls
// ncclCommGetAsyncError: a dead or stalled peer ends in ncclCommAbort and a message naming the
// operation and peer, never a hang.
// Baseline: NCCL's own collective on the same buffers.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "../../schedule.h"
#include "../cuda_common/cuda_check.h"
#include "../cuda_common/kernels.h"
#include "../registry.h"
#include "collkit/core/error.h"
#include "nccl_check.h"
#include "world_time.h"

namespace collkit::exec {

namespace {

using detail::StepKind;
using plan::Collective;
using plan::OpType;

// This rank's part of the schedule.
struct Action {
  enum class Kind : std::uint8_t { Local, Reach, Group } kind;
  std::uint32_t index;  // op index, or round index for Group
};
struct Xfer {
  bool send;
  std::uint32_t op;  // this rank's op
  int peer;
};

// What one run() left queued on the stream, for the wait that names what is stuck.
struct Flight {
  bool active = false;
  bool native = false;
  std::vector<cudaEvent_t> rounds;  // recorded after each of this rank's groups
  std::size_t used = 0;
  cudaEvent_t end = nullptr;
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(World& world, double timeout_s) : world_(world), timeout_s_(timeout_s) {
    // Every rank learns whether every rank can start before any of them joins the communicator,
    // so a rank without a GPU stops the job with one message instead of leaving the others waiting.
    std::vector<std::string> hosts = world.hosts();
    auto sharing = static_cast<int>(std::count(hosts.begin(), hosts.end(), world.host()));
    std::string why;
    int devices = cuda::device_count(&why);
    if (devices == 0) {
      why = "no GPU found (" + why + ")";
    } else {
      if (sharing > devices)
        why = std::to_string(sharing) + " ranks on " + world.host() + " but " + std::to_string(devices) +
              " GPU(s) visible: NCCL needs a GPU of its own for each rank";
      device_ = world.local_rank() % devices;
      sharing_ = sharing;
    }
    std::vector<std::string> all = world.allgather(why, timeout_s);
    for (std::size_t r = 0; r < all.size(); ++r)
      if (!all[r].empty()) throw UnsupportedError("nccl: rank " + std::to_string(r) + ": " + all[r]);

    cuda::use_device(device_);
    cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    ncclUniqueId id{};
    if (world.rank() == 0) nccl::check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr);
    std::string mine(reinterpret_cast<const char*>(&id), sizeof id);
    std::string got = world.broadcast(world.rank() == 0 ? mine : std::string(), timeout_s);
    if (got.size() != sizeof id) throw SystemError("nccl: rank 0's unique id arrived with " + std::to_string(got.size()) + " bytes");
    std::memcpy(&id, got.data(), sizeof id);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    if (nccl::check(ncclCommInitRankConfig(&comm_, world.size(), id, world.rank(), &config), "ncclCommInitRankConfig", nullptr))
      settle("ncclCommInitRankConfig", "creating the NCCL communicator");
    version_ = nccl::version() + ", " + cuda::runtime_version();
  }

  ~NcclBackend() override {
    for (Flight& f : flights_) {
      for (cudaEvent_t e : f.rounds) (void)cudaEventDestroy(e);
      if (f.end) (void)cudaEventDestroy(f.end);
    }
    if (comm_) {
      // Leaving on an exception (perhaps a peer's death): abort, which never waits on peers.
      // Otherwise finalise properly, but not forever.
      bool clean = std::uncaught_exceptions() == 0;
      if (clean) {
        ncclResult_t rc = ncclCommFinalize(comm_);
        clean = rc == ncclSuccess || rc == ncclInProgress;
      }
      double start = detail::wall_seconds();
      ncclResult_t state = ncclInProgress;
      while (clean && state == ncclInProgress && detail::wall_seconds() - start < timeout_s_)
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      if (clean && state == ncclSuccess) (void)ncclCommDestroy(comm_);
      else (void)ncclCommAbort(comm_);
    }
    if (stream_) (void)cudaStreamDestroy(stream_);
    (void)cudaGetLastError();
  }

  std::string_view name() const override { return "nccl"; }
  std::string library_version() const override { return version_; }
  std::vector<int> local_ranks() const override { return {world_.rank()}; }
  int nranks() const override { return world_.size(); }
  // The harness multiplies bytes_needed() by the ranks sharing this host, which share host memory;
  // here each has a GPU of its own, so this GPU's free memory counts once per such rank.
  std::uint64_t memory_available() const override {
    return cuda::free_memory(device_) * static_cast<std::uint64_t>(std::max(sharing_, 1));
  }
  std::string cannot_run(const Job&) const override { return {}; }
  std::string native_cannot_run(const Job&) const override { return {}; }

  std::string native_name(Collective c) const override {
    switch (c) {
      case Collective::AllReduce: return "ncclAllReduce";
      case Collective::ReduceScatter: return "ncclReduceScatter";
      case Collective::AllGather: return "ncclAllGather";
      case Collective::AlltoAll: return "ncclAlltoAll";
      case Collective::Broadcast: return "ncclBroadcast";
      case Collective::Reduce: return "ncclReduce";
    }
    return "?";
  }

  std::uint64_t bytes_needed(const Setup& s) const override {
    detail::GlobalSchedule g = detail::make_schedule(*s.plan);
    const int me = world_.rank();
    return fixed_bytes(s) + detail::send_copies(g, s.job.req, me, s.in_place == InPlaceMode::Staged).bytes +
           staging_bytes(g) * g.programs[static_cast<std::size_t>(me)].channels;
  }

  void setup(const Setup& s) override {
    synchronize();
    setup_ = s;
    const int me = world_.rank();
    const plan::Request& req = s.job.req;
    detail::GlobalSchedule g = detail::make_schedule(*s.plan);
    program_ = g.programs[static_cast<std::size_t>(me)];
    actions_.clear();
    rounds_.clear();
    std::vector<Xfer> round;
    for (const detail::Step& st : g.steps) {
      switch (st.kind) {
        case StepKind::Local:
          if (st.rank == me) actions_.push_back({Action::Kind::Local, st.op});
          break;
        case StepKind::Reach:
          if (st.rank == me) actions_.push_back({Action::Kind::Reach, st.op});
          break;
        case StepKind::Transfer:
          if (st.peer == me) round.push_back({true, st.peer_op, st.rank});
          if (st.rank == me) round.push_back({false, st.op, st.peer});
          break;
        case StepKind::RoundEnd:
          if (round.empty()) break;
          actions_.push_back({Action::Kind::Group, static_cast<std::uint32_t>(rounds_.size())});
          rounds_.push_back(std::move(round));
          round.clear();
          break;
      }
    }
    for (Flight& f : flights_) {
      while (f.rounds.size() < rounds_.size()) f.rounds.push_back(new_event());
      if (!f.end) f.end = new_event();
    }

    ip_ = in_place_offsets(req, me);
    send_ = zeroed(plan::input_bytes(req));
    recv_ = zeroed(plan::output_bytes(req));
    inplace_ = zeroed(ip_.buffer_bytes);
    scratch_ = zeroed(s.plan->info().scratch_bytes);
    stage_ = zeroed(s.in_place == InPlaceMode::Staged ? plan::input_bytes(req) : 0);
    native_stage_ = zeroed(req.coll == Collective::AlltoAll ? plan::input_bytes(req) : 0);
    copies_ = detail::send_copies(g, req, me, s.in_place == InPlaceMode::Staged);
    bounce_ = zeroed(copies_.bytes);
    std::uint64_t per_channel = staging_bytes(g);
    staging_.clear();
    for (std::uint16_t c = 0; c < program_.channels; ++c) staging_.push_back(zeroed(per_channel));
    synchronize();
  }

  void write_input(std::size_t, Placement p, std::span<const std::byte> data) override {
    std::byte* dst = p == Placement::OutOfPlace ? send_.data() : inplace_.data() + ip_.input_offset;
    copy_host(dst, data.data(), data.size(), cudaMemcpyHostToDevice);
  }

  void read_output(std::size_t, Placement p, Subject, std::span<std::byte> data) override {
    const std::byte* src = p == Placement::OutOfPlace ? recv_.data() : inplace_.data() + ip_.output_offset;
    copy_host(data.data(), src, data.size(), cudaMemcpyDeviceToHost);
  }

  void run(Subject who, Placement p) override {
    // At most two runs queued: the older one must finish (within the timeout) first.
    Flight& f = flights_[next_flight_];
    next_flight_ ^= 1;
    wait(f);
    cuda::use_device(device_);
    f.active = true;
    f.native = who == Subject::Native;
    f.used = 0;
    if (who == Subject::Plan) run_plan(p, f);
    else run_native(p);
    cuda::check(cudaEventRecord(f.end, stream_), "cudaEventRecord");
  }

  void synchronize() override {
    for (Flight& f : flights_) wait(f);
  }

 private:
  cudaEvent_t new_event() {
    cuda::use_device(device_);
    cudaEvent_t e = nullptr;
    cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return e;
  }

  cuda::DeviceBuffer zeroed(std::uint64_t bytes) {
    cuda::DeviceBuffer b(device_, bytes);
    if (bytes) cuda::check(cudaMemsetAsync(b.data(), 0, bytes, stream_), "cudaMemsetAsync");
    return b;
  }

  void copy_host(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    synchronize();
    cuda::use_device(device_);
    cuda::check(cudaMemcpyAsync(dst, src, bytes, kind, stream_), "cudaMemcpyAsync");
    cuda::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void copy_async(void* dst, const void* src, std::uint64_t bytes) {
    cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
  }

  void reduce(void* dst, const void* a, const void* b, std::uint64_t bytes) {
    cuda::check(cuda::launch_reduce(setup_.job.type, setup_.job.op, dst, a, b, bytes / size_of(setup_.job.type), stream_),
                "reduction kernel launch");
  }

  void scale_mean(void* out) {
    const plan::Request& req = setup_.job.req;
    if (req.coll == Collective::Reduce && world_.rank() != req.root) return;
    cuda::check(cuda::launch_scale_mean(setup_.job.type, out, output_count(setup_.job), req.nranks, stream_), "scale kernel launch");
  }

  void run_plan(Placement p, Flight& f) {
    const std::size_t pi = p == Placement::OutOfPlace ? 0 : 1;
    std::array<std::byte*, 3> regions{send_.data(), recv_.data(), scratch_.data()};
    if (p == Placement::InPlace) {
      regions[0] = inplace_.data() + ip_.input_offset;
      regions[1] = inplace_.data() + ip_.output_offset;
      if (setup_.in_place == InPlaceMode::Staged) {
        copy_async(stage_.data(), regions[0], stage_.size());
        regions[0] = stage_.data();
      }
    }
    auto at = [&](plan::Buf b, std::uint64_t off) { return regions[static_cast<std::size_t>(b)] + off; };
    for (const Action& a : actions_) {
      switch (a.kind) {
        case Action::Kind::Local: {
          const detail::ExecOp& o = program_.ops[a.index];
          std::byte* dst = at(o.dst_buf, o.dst_off);
          const std::byte* src = at(o.src_buf, o.src_off);
          if (o.type == OpType::Reduce) {
            reduce(dst, dst, src, o.bytes);
          } else if (dst != src) {
            if (dst < src + o.bytes && src < dst + o.bytes) {  // overlapping: through channel staging
              std::byte* tmp = staging_[o.channel].data();
              copy_async(tmp, src, o.bytes);
              src = tmp;
            }
            copy_async(dst, src, o.bytes);
          }
          break;
        }
        case Action::Kind::Reach: {
          std::uint64_t off = copies_.offset[pi][a.index];
          const detail::ExecOp& o = program_.ops[a.index];
          if (off != detail::kNoCopy) copy_async(bounce_.data() + off, at(o.src_buf, o.src_off), o.bytes);
          break;
        }
        case Action::Kind::Group: {
          const std::vector<Xfer>& round = rounds_[a.index];
          nccl::check(ncclGroupStart(), "ncclGroupStart", comm_);
          for (const Xfer& x : round) {
            const detail::ExecOp& o = program_.ops[x.op];
            if (x.send) {
              std::uint64_t off = copies_.offset[pi][x.op];
              const std::byte* src = off == detail::kNoCopy ? at(o.src_buf, o.src_off) : bounce_.data() + off;
              nccl::check(ncclSend(src, o.bytes, ncclUint8, x.peer, comm_, stream_), "ncclSend", comm_);
            } else {
              std::byte* dst = o.type == OpType::Recv ? at(o.dst_buf, o.dst_off) : staging_[o.channel].data();
              nccl::check(ncclRecv(dst, o.bytes, ncclUint8, x.peer, comm_, stream_), "ncclRecv", comm_);
            }
          }
          if (nccl::check(ncclGroupEnd(), "ncclGroupEnd", comm_)) settle("ncclGroupEnd", describe_round(a.index));
          for (const Xfer& x : round) {
            const detail::ExecOp& o = program_.ops[x.op];
            if (!x.send && o.type == OpType::RecvReduce)
              reduce(at(o.dst_buf, o.dst_off), at(o.src_buf, o.src_off), staging_[o.channel].data(), o.bytes);
          }
          cuda::check(cudaEventRecord(f.rounds[a.index], stream_), "cudaEventRecord");
          f.used = a.index + 1;
          break;
        }
      }
    }
    if (setup_.job.op == RedOp::Avg && plan::facts(setup_.job.req.coll).reduces) scale_mean(regions[1]);
  }

  ncclDataType_t nccl_type(DataType t) const {
    switch (t) {
      case DataType::Float32: return ncclFloat32;
      case DataType::Float16: return ncclFloat16;
      case DataType::BFloat16: return ncclBfloat16;
      case DataType::Float64: return ncclFloat64;
      case DataType::Int32: return ncclInt32;
      case DataType::Int8: return ncclInt8;
      case DataType::UInt8: return ncclUint8;
    }
    return ncclUint8;
  }

  // NCCL's Avg pre-multiplies each float input by 1/n (exact only when n is a power of two) and
  // divides integer sums: where that would not be exact on the check's data, Sum then divide.
  bool native_avg() const {
    int n = setup_.job.req.nranks;
    return !is_float(setup_.job.type) || (n & (n - 1)) == 0;
  }

  ncclRedOp_t nccl_op(RedOp op) const {
    switch (op) {
      case RedOp::Sum: return ncclSum;
      case RedOp::Prod: return ncclProd;
      case RedOp::Min: return ncclMin;
      case RedOp::Max: return ncclMax;
      case RedOp::Avg: return native_avg() ? ncclAvg : ncclSum;
    }
    return ncclSum;
  }

  void run_native(Placement p) {
    const Job& job = setup_.job;
    const plan::Request& req = job.req;
    ncclDataType_t t = nccl_type(job.type);
    ncclRedOp_t op = nccl_op(job.op);
    bool ip = p == Placement::InPlace;
    std::byte* buf = inplace_.data();
    std::size_t in = input_count(job), out = output_count(job);
    std::string call = native_name(req.coll);
    ncclResult_t rc = ncclSuccess;
    switch (req.coll) {
      case Collective::AllReduce:
        rc = ncclAllReduce(ip ? buf : send_.data(), ip ? buf : recv_.data(), in, t, op, comm_, stream_);
        break;
      case Collective::ReduceScatter:
        rc = ncclReduceScatter(ip ? buf : send_.data(), ip ? buf + ip_.output_offset : recv_.data(), out, t, op, comm_, stream_);
        break;
      case Collective::AllGather:
        rc = ncclAllGather(ip ? buf + ip_.input_offset : send_.data(), ip ? buf : recv_.data(), in, t, comm_, stream_);
        break;
      case Collective::AlltoAll:
        // ncclAlltoAll has no in-place form: in place copies the input aside first (in the time).
        if (ip) copy_async(native_stage_.data(), buf, native_stage_.size());
        rc = ncclAlltoAll(ip ? native_stage_.data() : send_.data(), ip ? buf : recv_.data(), in / static_cast<std::size_t>(req.nranks), t,
                          comm_, stream_);
        break;
      case Collective::Broadcast:
        rc = ncclBroadcast(ip ? buf : send_.data(), ip ? buf : recv_.data(), in, t, req.root, comm_, stream_);
        break;
      case Collective::Reduce:
        rc = ncclReduce(ip ? buf : send_.data(), ip ? buf : recv_.data(), in, t, op, req.root, comm_, stream_);
        break;
    }
    if (nccl::check(rc, call.c_str(), comm_)) settle(call.c_str(), "in " + call);
    if (job.op == RedOp::Avg && plan::facts(req.coll).reduces && !native_avg())
      scale_mean(ip ? buf + ip_.output_offset : recv_.data());
  }

  // Waits for a call answered ncclInProgress to settle.
  void settle(const char* call, const std::string& what) {
    double start = detail::wall_seconds();
    for (;;) {
      ncclResult_t state = ncclSuccess;
      nccl::check(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError", comm_);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(std::string(call) + " failed: " + ncclGetErrorString(state) + " (" + ncclGetLastError(comm_) + ")");
      if (detail::wall_seconds() - start > timeout_s_) fail<TimeoutError>(stalled(what));
    }
  }

  // Waits for what `f` queued: any round finishing is progress; none for the timeout is a stall.
  void wait(Flight& f) {
    if (!f.active) return;
    cuda::use_device(device_);
    double last = detail::wall_seconds();
    std::size_t done = 0;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      nccl::check(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError", comm_);
      if (state != ncclSuccess && state != ncclInProgress)
        fail("rank " + std::to_string(world_.rank()) + ": NCCL failed: " + ncclGetErrorString(state) + " (" + ncclGetLastError(comm_) + ")");
      cudaError_t rc = cudaEventQuery(f.end);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) cuda::check(rc, "cudaEventQuery");
      std::size_t now_done = done;
      while (now_done < f.used && cudaEventQuery(f.rounds[now_done]) == cudaSuccess) ++now_done;
      if (now_done != done) {
        done = now_done;
        last = detail::wall_seconds();
      } else if (detail::wall_seconds() - last > timeout_s_) {
        fail<TimeoutError>(stalled(f.native        ? "in " + native_name(setup_.job.req.coll)
                                   : done < f.used ? describe_round(done)
                                                   : std::string("the plan's last local copies and kernels")));
      }
    }
    f.active = false;
  }

  std::string describe_round(std::size_t k) const {
    const std::vector<Xfer>& round = rounds_[k];
    std::string s = "waiting on " + detail::describe(program_.ops[round.front().op], round.front().op);
    if (round.size() > 1) s += " and " + std::to_string(round.size() - 1) + " more";
    return s;
  }

  std::string stalled(const std::string& what) const {
    char t[32];
    std::snprintf(t, sizeof t, "%g", timeout_s_);
    return "rank " + std::to_string(world_.rank()) + ": no progress for " + t + " s: " + what;
  }

  template <class E = SystemError>
  [[noreturn]] void fail(const std::string& message) {
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
    for (Flight& f : flights_) f.active = false;
    throw E(message);
  }

  std::uint64_t fixed_bytes(const Setup& s) const {
    const plan::Request& req = s.job.req;
    std::uint64_t in = plan::input_bytes(req);
    return in + plan::output_bytes(req) + in_place_offsets(req, world_.rank()).buffer_bytes + s.plan->info().scratch_bytes +
           (s.in_place == InPlaceMode::Staged ? in : 0) + (req.coll == Collective::AlltoAll ? in : 0);
  }

  // Per channel: receive-and-reduce lands here, and overlapping local copies pass through.
  std::uint64_t staging_bytes(const detail::GlobalSchedule& g) const {
    std::uint64_t most = 0;
    for (const detail::ExecOp& o : g.programs[static_cast<std::size_t>(world_.rank())].ops)
      if (o.type == OpType::RecvReduce || o.type == OpType::Copy) most = std::max(most, o.bytes);
    return most;
  }

  World& world_;
  double timeout_s_;
  int device_ = 0, sharing_ = 1;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::string version_;
  Setup setup_;
  detail::RankProgram program_;
  std::vector<Action> actions_;
  std::vector<std::vector<Xfer>> rounds_;
  std::array<Flight, 2> flights_;
  std::size_t next_flight_ = 0;
  InPlaceOffsets ip_;
  cuda::DeviceBuffer send_, recv_, inplace_, scratch_, stage_, native_stage_, bounce_;
  std::vector<cuda::DeviceBuffer> staging_;
  detail::SendCopies copies_;
};

}  // namespace

namespace detail {
std::unique_ptr<Backend> make_nccl_backend(World& world, double timeout_s) {
  return std::make_unique<NcclBackend>(world, timeout_s);
}
}  // namespace detail

}  // namespace collkit::exec
