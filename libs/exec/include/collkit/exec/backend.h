#pragma once
// One interface for every way coll-run moves data (STYLE.md: backends as mirrored folders under
// src/backends/, the hardware ones compiled only when found). The harness (harness.h) owns the
// loop over sizes, the data and the clock; a backend owns buffers and communication.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/exec/adapt.h"
#include "collkit/exec/pattern.h"
#include "collkit/exec/world.h"
#include "collkit/plan/plan.h"

namespace collkit::exec {

enum class Placement : std::uint8_t { OutOfPlace, InPlace };
enum class Subject : std::uint8_t { Plan, Native };

/// Where in-place puts a rank's input and output inside its one buffer (NCCL's definition:
/// AllGather's input is the rank's slot of the output, ReduceScatter's output the rank's slot of
/// the input; the others share the start).
struct InPlaceOffsets {
  std::uint64_t buffer_bytes = 0, input_offset = 0, output_offset = 0;
};
InPlaceOffsets in_place_offsets(const plan::Request& req, int rank);

/// How a plan runs in place: directly on the overlapping buffers when verify() proved that safe
/// (plan/transform.h), or with the input first copied aside (counted in the time).
enum class InPlaceMode : std::uint8_t { Direct, Staged };

/// Everything a backend needs to set up one size.
struct Setup {
  const plan::Plan* plan = nullptr;  ///< resized to the job's bytes
  Job job;
  InPlaceMode in_place = InPlaceMode::Direct;
  double timeout_s = 60;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// "mpi", "nccl", "cuda", "rdma".
  virtual std::string_view name() const = 0;
  /// The communication library and its version: "Open MPI v4.1.4", "NCCL 2.28.3".
  virtual std::string library_version() const = 0;
  /// The plan ranks this process runs (one for mpi/nccl/rdma; all of them for cuda).
  virtual std::vector<int> local_ranks() const = 0;
  /// How many plan ranks the job has.
  virtual int nranks() const = 0;
  /// Bytes this process may still allocate for buffers (host memory or device memory).
  virtual std::uint64_t memory_available() const = 0;
  /// Why this backend cannot run the job (datatype, operator, collective); empty when it can.
  virtual std::string cannot_run(const Job& job) const = 0;
  /// The native collective's name ("MPI_Allreduce", "ncclAllReduce") and why it cannot run the
  /// job (empty when it can).
  virtual std::string native_name(plan::Collective c) const = 0;
  virtual std::string native_cannot_run(const Job& job) const = 0;

  /// Allocates buffers and prepares the plan's programs for one size.
  virtual void setup(const Setup& s) = 0;
  /// Bytes a setup of this job takes on this process (checked against memory_available()).
  virtual std::uint64_t bytes_needed(const Setup& s) const = 0;
  /// Writes local rank `local`'s input (input_count elements) where `p` expects it.
  virtual void write_input(std::size_t local, Placement p, std::span<const std::byte> data) = 0;
  /// Reads local rank `local`'s output (output_count elements) of the last run of `who`.
  virtual void read_output(std::size_t local, Placement p, Subject who, std::span<std::byte> data) = 0;
  /// One collective: the plan or the native one. Returns when this process's part is complete
  /// (device work may still be queued: synchronize()).
  virtual void run(Subject who, Placement p) = 0;
  /// Waits for queued device work.
  virtual void synchronize() = 0;

  /// Slows the plan's messages from now on as `inj` says (coll-run --inject; empty: none); every rank
  /// calls it (the first faults measure the pairs' own rates, against which messages are held). The
  /// native collective is not slowed. UnsupportedError where the backend cannot (the default).
  virtual void inject(const Injection& inj);
  /// This rank's time in microseconds to receive `bytes` from every other rank through the plan's
  /// transport, faults included (index: the sender; 0 for itself): the probe adaptation reads.
  /// UnsupportedError where the backend cannot (the default).
  virtual std::vector<double> probe(std::uint64_t bytes, double timeout_s);
  /// Times every send of the plan's runs from now on (or stops): how adaptation finds a slow peer
  /// from the collective's own iterations. UnsupportedError where the backend cannot (the default).
  virtual void time_sends(bool on);
  /// Per peer, the fastest of this rank's plan's sends to it (post to finished) since the last call
  /// or time_sends(true), in microseconds per MiB; 0 for a peer sent nothing. Starts over.
  virtual std::vector<double> send_times();
};

struct BackendOptions {
  std::string name = "mpi";
  double timeout_s = 60;
  /// cuda only: the plan ranks its one process runs (0: one per visible GPU); the others take
  /// one rank per process from the launcher.
  int ranks = 0;
};

/// The backend by name; throws InputError for an unknown one and UnsupportedError for one this
/// build or machine lacks ("nccl: this build has no NCCL", "rdma: no RDMA device found").
std::unique_ptr<Backend> make_backend(const BackendOptions& opt, World& world);
/// Names this build knows, in order.
std::vector<std::string> backend_names();

}  // namespace collkit::exec
