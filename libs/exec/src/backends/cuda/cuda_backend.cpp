// The cuda backend: one process runs every rank of the plan on the visible GPUs (rank r on GPU
// r mod #GPUs, so several ranks may share one), to check a plan on a single machine. It walks
// schedule.h's global order with one stream per GPU: a receive is a device copy
// (cudaMemcpyPeerAsync), a receive-and-reduce the reduction kernel reading the sender's bytes in
// place where the GPUs reach each other's memory (else through a staging buffer), local copies and
// reductions are copies and kernels on the rank's GPU. One stream per GPU keeps the order without
// events; between GPUs, each transfer orders the two streams both ways with an event each. A
// transfer on a channel the plan stages through host memory (PlanInfo::channel_paths "host")
// between two GPUs is two copies instead: device to a pinned host buffer of the sender's GPU on
// its stream, then host to device on the receiver's (its PCIe path, not NVLink). The
// channels' concurrency is given up: this backend checks plans and times them on one GPU, it does
// not compete with NCCL. It has no native collective.

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "../../schedule.h"
#include "../cuda_common/cuda_check.h"
#include "../cuda_common/kernels.h"
#include "../registry.h"
#include "collkit/core/error.h"
#include "world_time.h"

namespace collkit::exec {

namespace {

using detail::StepKind;
using plan::OpType;

struct RankBuffers {
  cuda::DeviceBuffer in, out, inplace, scratch, stage, bounce;
  InPlaceOffsets ip;
  detail::SendCopies copies;  // where sends overwritten before their data moves keep a copy, in `bounce`
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(World& world, int nranks, double timeout_s) : timeout_s_(timeout_s) {
    if (world.size() != 1)
      throw InputError("cuda: the cuda backend runs every rank in one process: start coll-run without mpirun or with -np 1 (this job has " +
                       std::to_string(world.size()) + " processes; --ranks sets the plan's ranks)");
    std::string why;
    devices_ = cuda::device_count(&why);
    if (devices_ == 0) throw UnsupportedError("cuda: no GPU found (" + why + ")");
    nranks_ = nranks > 0 ? nranks : devices_;
    for (int d = 0; d < devices_; ++d) {
      cuda::use_device(d);
      cudaStream_t s = nullptr;
      cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      streams_.push_back(s);
      cudaEvent_t e = nullptr;
      cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      events_.push_back(e);
    }
    reach_.assign(static_cast<std::size_t>(devices_ * devices_), false);
    for (int d = 0; d < devices_; ++d)
      for (int e = 0; e < devices_; ++e) {
        if (d == e) {
          reach_[static_cast<std::size_t>(d * devices_ + e)] = true;
          continue;
        }
        int ok = 0;
        cuda::check(cudaDeviceCanAccessPeer(&ok, d, e), "cudaDeviceCanAccessPeer");
        if (!ok) continue;
        cuda::use_device(d);
        cudaError_t rc = cudaDeviceEnablePeerAccess(e, 0);
        if (rc == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
        else cuda::check(rc, "cudaDeviceEnablePeerAccess");
        reach_[static_cast<std::size_t>(d * devices_ + e)] = true;
      }
    version_ = cuda::runtime_version() + ", " + std::to_string(devices_) + (devices_ == 1 ? " GPU" : " GPUs");
  }

  ~CudaBackend() override {
    for (int d = 0; d < devices_; ++d) {
      if (cudaSetDevice(d) != cudaSuccess) continue;
      (void)cudaStreamSynchronize(streams_[static_cast<std::size_t>(d)]);
      (void)cudaStreamDestroy(streams_[static_cast<std::size_t>(d)]);
      (void)cudaEventDestroy(events_[static_cast<std::size_t>(d)]);
    }
    (void)cudaGetLastError();
  }

  std::string_view name() const override { return "cuda"; }
  std::string library_version() const override { return version_; }
  std::vector<int> local_ranks() const override {
    std::vector<int> all(static_cast<std::size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r) all[static_cast<std::size_t>(r)] = r;
    return all;
  }
  int nranks() const override { return nranks_; }

  // bytes_needed() counts every rank; the GPUs hold ceil(ranks / GPUs) ranks at most each, so the
  // job fits when the fullest GPU's share does: the least free memory scaled to all ranks.
  std::uint64_t memory_available() const override {
    std::uint64_t least = ~0ull;
    for (int d = 0; d < devices_; ++d) least = std::min(least, cuda::free_memory(d));
    auto per_gpu = static_cast<std::uint64_t>((nranks_ + devices_ - 1) / devices_);
    return least / per_gpu * static_cast<std::uint64_t>(nranks_);
  }

  std::string cannot_run(const Job&) const override { return {}; }
  std::string native_name(plan::Collective) const override { return "none"; }
  std::string native_cannot_run(const Job&) const override {
    return "the cuda backend has no native collective (compare with --backend nccl)";
  }

  std::uint64_t bytes_needed(const Setup& s) const override {
    detail::GlobalSchedule g = detail::make_schedule(*s.plan);
    std::uint64_t total = 0;
    for (int r = 0; r < nranks_; ++r)
      total += rank_bytes(s, r) + detail::send_copies(g, s.job.req, r, s.in_place == InPlaceMode::Staged).bytes;
    for (int d = 0; d < devices_; ++d) total += staging_bytes(g, s.plan->info(), d);
    return total;  // the pinned host buffers (host_bytes) are host memory, not counted here
  }

  void setup(const Setup& s) override {
    synchronize();
    setup_ = s;
    ranks_.clear();
    staging_.clear();
    schedule_ = detail::make_schedule(*s.plan);
    const plan::Request& req = s.job.req;
    ranks_.resize(static_cast<std::size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r) {
      RankBuffers& b = ranks_[static_cast<std::size_t>(r)];
      int d = device_of(r);
      b.ip = in_place_offsets(req, r);
      b.in = zeroed(d, plan::input_bytes(req));
      b.out = zeroed(d, plan::output_bytes(req));
      b.inplace = zeroed(d, b.ip.buffer_bytes);
      b.scratch = zeroed(d, s.plan->info().scratch_bytes);
      b.stage = zeroed(d, s.in_place == InPlaceMode::Staged ? plan::input_bytes(req) : 0);
      b.copies = detail::send_copies(schedule_, req, r, s.in_place == InPlaceMode::Staged);
      b.bounce = zeroed(d, b.copies.bytes);
    }
    for (int d = 0; d < devices_; ++d) staging_.push_back(zeroed(d, staging_bytes(schedule_, s.plan->info(), d)));
    pinned_.clear();
    for (int d = 0; d < devices_; ++d) pinned_.emplace_back(host_bytes(schedule_, d));
    synchronize();
  }

  void write_input(std::size_t local, Placement p, std::span<const std::byte> data) override {
    RankBuffers& b = ranks_.at(local);
    std::byte* dst = p == Placement::OutOfPlace ? b.in.data() : b.inplace.data() + b.ip.input_offset;
    copy_host(device_of(static_cast<int>(local)), dst, data.data(), data.size(), cudaMemcpyHostToDevice);
  }

  void read_output(std::size_t local, Placement p, Subject, std::span<std::byte> data) override {
    RankBuffers& b = ranks_.at(local);
    const std::byte* src = p == Placement::OutOfPlace ? b.out.data() : b.inplace.data() + b.ip.output_offset;
    copy_host(device_of(static_cast<int>(local)), data.data(), src, data.size(), cudaMemcpyDeviceToHost);
  }

  void run(Subject who, Placement p) override {
    if (who == Subject::Native) throw UnsupportedError(native_cannot_run(setup_.job));
    const std::size_t pi = p == Placement::OutOfPlace ? 0 : 1;
    const Job& job = setup_.job;
    std::vector<std::array<std::byte*, 3>> regions(static_cast<std::size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r) {
      RankBuffers& b = ranks_[static_cast<std::size_t>(r)];
      auto& reg = regions[static_cast<std::size_t>(r)];
      reg = {b.in.data(), b.out.data(), b.scratch.data()};
      if (p == Placement::InPlace) {
        reg[0] = b.inplace.data() + b.ip.input_offset;
        reg[1] = b.inplace.data() + b.ip.output_offset;
        if (setup_.in_place == InPlaceMode::Staged) {
          copy_async(r, b.stage.data(), reg[0], b.stage.size());
          reg[0] = b.stage.data();
        }
      }
    }
    auto at = [&](int r, plan::Buf buf, std::uint64_t off) { return regions[static_cast<std::size_t>(r)][static_cast<std::size_t>(buf)] + off; };
    auto op_of = [&](int r, std::uint32_t i) -> const detail::ExecOp& { return schedule_.programs[static_cast<std::size_t>(r)].ops[i]; };

    for (const detail::Step& st : schedule_.steps) {
      switch (st.kind) {
        case StepKind::Local: {
          const detail::ExecOp& o = op_of(st.rank, st.op);
          std::byte* dst = at(st.rank, o.dst_buf, o.dst_off);
          const std::byte* src = at(st.rank, o.src_buf, o.src_off);
          if (o.type == OpType::Reduce) {
            reduce(st.rank, dst, dst, src, o.bytes);
          } else if (dst != src) {
            if (dst < src + o.bytes && src < dst + o.bytes) {  // overlapping: through the staging buffer
              std::byte* tmp = staging_[static_cast<std::size_t>(device_of(st.rank))].data();
              copy_async(st.rank, tmp, src, o.bytes);
              src = tmp;
            }
            copy_async(st.rank, dst, src, o.bytes);
          }
          break;
        }
        case StepKind::Reach: {
          std::uint64_t off = ranks_[static_cast<std::size_t>(st.rank)].copies.offset[pi][st.op];
          if (off == detail::kNoCopy) break;
          const detail::ExecOp& o = op_of(st.rank, st.op);
          copy_async(st.rank, ranks_[static_cast<std::size_t>(st.rank)].bounce.data() + off, at(st.rank, o.src_buf, o.src_off), o.bytes);
          break;
        }
        case StepKind::Transfer: {
          const detail::ExecOp& so = op_of(st.peer, st.peer_op);
          const detail::ExecOp& ro = op_of(st.rank, st.op);
          std::uint64_t off = ranks_[static_cast<std::size_t>(st.peer)].copies.offset[pi][st.peer_op];
          const std::byte* src = off == detail::kNoCopy ? at(st.peer, so.src_buf, so.src_off)
                                              : ranks_[static_cast<std::size_t>(st.peer)].bounce.data() + off;
          transfer(st.peer, src, st.rank, ro, at(st.rank, ro.dst_buf, ro.dst_off), at(st.rank, ro.src_buf, ro.src_off));
          break;
        }
        case StepKind::RoundEnd: break;
      }
    }
    if (job.op == RedOp::Avg && plan::facts(job.req.coll).reduces)
      for (int r = 0; r < nranks_; ++r) {
        if (job.req.coll == plan::Collective::Reduce && r != job.req.root) continue;
        set_device(device_of(r));
        cuda::check(cuda::launch_scale_mean(job.type, regions[static_cast<std::size_t>(r)][1], output_count(job), nranks_,
                                            stream_of(r)),
                    "scale kernel launch");
      }
  }

  // Waits for every GPU; work that makes no progress for the timeout is reported, not waited on.
  void synchronize() override {
    for (int d = 0; d < devices_; ++d) {
      double start = detail::wall_seconds();
      for (;;) {
        cudaError_t rc = cudaStreamQuery(streams_[static_cast<std::size_t>(d)]);
        if (rc == cudaSuccess) break;
        if (rc != cudaErrorNotReady) cuda::check(rc, "cudaStreamQuery");
        if (detail::wall_seconds() - start > timeout_s_) {
          char t[32];
          std::snprintf(t, sizeof t, "%g", timeout_s_);
          throw TimeoutError("cuda: GPU " + std::to_string(d) + " did not finish its queued copies and kernels in " + t + " s");
        }
      }
    }
  }

 private:
  int device_of(int rank) const { return rank % devices_; }
  cudaStream_t stream_of(int rank) const { return streams_[static_cast<std::size_t>(device_of(rank))]; }
  bool reaches(int reader, int owner) const { return reach_[static_cast<std::size_t>(reader * devices_ + owner)]; }

  // Always set: other calls (memory queries, allocations) move the current device too.
  void set_device(int d) { cuda::use_device(d); }

  cuda::DeviceBuffer zeroed(int d, std::uint64_t bytes) {
    cuda::DeviceBuffer b(d, bytes);
    if (bytes) {
      set_device(d);
      cuda::check(cudaMemsetAsync(b.data(), 0, bytes, streams_[static_cast<std::size_t>(d)]), "cudaMemsetAsync");
    }
    return b;
  }

  void copy_host(int d, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    synchronize();
    set_device(d);
    cudaStream_t s = streams_[static_cast<std::size_t>(d)];
    cuda::check(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    cuda::check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

  void copy_async(int rank, void* dst, const void* src, std::uint64_t bytes) {
    set_device(device_of(rank));
    cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(rank)), "cudaMemcpyAsync");
  }

  void reduce(int rank, void* dst, const void* a, const void* b, std::uint64_t bytes) {
    set_device(device_of(rank));
    cuda::check(cuda::launch_reduce(setup_.job.type, setup_.job.op, dst, a, b, bytes / size_of(setup_.job.type), stream_of(rank)),
                "reduction kernel launch");
  }

  // `from`'s bytes at `src` land in `to`'s receive `ro` (dst, and for receive-and-reduce its source).
  void transfer(int from, const std::byte* src, int to, const detail::ExecOp& ro, std::byte* dst, const std::byte* local) {
    int df = device_of(from), dt = device_of(to);
    cudaStream_t sf = streams_[static_cast<std::size_t>(df)], stt = streams_[static_cast<std::size_t>(dt)];
    // Staged through host memory (channel_paths): the first copy, device to the sender GPU's pinned
    // buffer, on its stream. The buffer is free: the sender's stream waited (below) for the
    // receiver's copy out of it at the last such transfer.
    bool host = df != dt && plan::channel_path(setup_.plan->info(), ro.channel) == plan::ChannelPath::Host;
    std::byte* bounce = host ? pinned_[static_cast<std::size_t>(df)].data() : nullptr;
    if (host) {
      set_device(df);
      cuda::check(cudaMemcpyAsync(bounce, src, ro.bytes, cudaMemcpyDeviceToHost, sf), "cudaMemcpyAsync");
    }
    if (df != dt) {  // the receiver's GPU waits for the sender's to reach this point
      set_device(df);
      cuda::check(cudaEventRecord(events_[static_cast<std::size_t>(df)], sf), "cudaEventRecord");
      set_device(dt);
      cuda::check(cudaStreamWaitEvent(stt, events_[static_cast<std::size_t>(df)], 0), "cudaStreamWaitEvent");
    }
    set_device(dt);
    if (host) {
      // The second copy, host to device; a receive-and-reduce adds from the staging buffer.
      std::byte* to_at = ro.type == OpType::Recv ? dst : staging_[static_cast<std::size_t>(dt)].data();
      cuda::check(cudaMemcpyAsync(to_at, bounce, ro.bytes, cudaMemcpyHostToDevice, stt), "cudaMemcpyAsync");
      if (ro.type != OpType::Recv) reduce(to, dst, local, to_at, ro.bytes);
    } else if (ro.type == OpType::Recv) {
      cuda::check(cudaMemcpyPeerAsync(dst, dt, src, df, ro.bytes, stt), "cudaMemcpyPeerAsync");
    } else if (reaches(dt, df)) {
      reduce(to, dst, local, src, ro.bytes);
    } else {
      std::byte* tmp = staging_[static_cast<std::size_t>(dt)].data();
      cuda::check(cudaMemcpyPeerAsync(tmp, dt, src, df, ro.bytes, stt), "cudaMemcpyPeerAsync");
      reduce(to, dst, local, tmp, ro.bytes);
    }
    if (df != dt) {  // and the sender's GPU does not overwrite the source before the copy has read it
      cuda::check(cudaEventRecord(events_[static_cast<std::size_t>(dt)], stt), "cudaEventRecord");
      set_device(df);
      cuda::check(cudaStreamWaitEvent(sf, events_[static_cast<std::size_t>(dt)], 0), "cudaStreamWaitEvent");
    }
  }

  std::uint64_t rank_bytes(const Setup& s, int r) const {
    const plan::Request& req = s.job.req;
    return plan::input_bytes(req) + plan::output_bytes(req) + in_place_offsets(req, r).buffer_bytes +
           s.plan->info().scratch_bytes + (s.in_place == InPlaceMode::Staged ? plan::input_bytes(req) : 0);
  }

  // Staging on GPU d: for overlapping local copies and for receive-and-reduce from a GPU it cannot
  // read or through host memory (channel_paths).
  std::uint64_t staging_bytes(const detail::GlobalSchedule& g, const plan::PlanInfo& info, int d) const {
    std::uint64_t most = 0;
    for (int r = d; r < nranks_; r += devices_)
      for (const detail::ExecOp& o : g.programs[static_cast<std::size_t>(r)].ops) {
        bool other = device_of(o.peer) != d;
        bool host = other && plan::channel_path(info, o.channel) == plan::ChannelPath::Host;
        if (o.type == OpType::Copy || (o.type == OpType::RecvReduce && (host || !reaches(d, device_of(o.peer)))))
          most = std::max(most, o.bytes);
      }
    return most;
  }

  // The pinned host buffer of GPU d: the largest transfer from it on a channel staged through host
  // memory (PlanInfo::channel_paths), 0 where the plan stages none.
  std::uint64_t host_bytes(const detail::GlobalSchedule& g, int d) const {
    std::uint64_t most = 0;
    const plan::PlanInfo& info = setup_.plan->info();
    if (info.channel_paths.empty()) return 0;
    for (int r = 0; r < nranks_; ++r)
      for (const detail::ExecOp& o : g.programs[static_cast<std::size_t>(r)].ops)
        if ((o.type == OpType::Recv || o.type == OpType::RecvReduce) && device_of(o.peer) == d && device_of(r) != d &&
            plan::channel_path(info, o.channel) == plan::ChannelPath::Host)
          most = std::max(most, o.bytes);
    return most;
  }

  double timeout_s_;
  int devices_ = 0, nranks_ = 0;
  std::string version_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
  std::vector<bool> reach_;  // reach_[reader * devices + owner]: the reader's kernels may read the owner's memory
  Setup setup_;
  detail::GlobalSchedule schedule_;
  std::vector<RankBuffers> ranks_;
  std::vector<cuda::DeviceBuffer> staging_;
  std::vector<cuda::PinnedBuffer> pinned_;
};

}  // namespace

namespace detail {
std::unique_ptr<Backend> make_cuda_backend(World& world, int nranks, double timeout_s) {
  return std::make_unique<CudaBackend>(world, nranks, timeout_s);
}
}  // namespace detail

}  // namespace collkit::exec
