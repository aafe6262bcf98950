// libnccl-tuner-collkit.so: NCCL's tuner plugin (v5 for NCCL 2.28-2.29, v4 for 2.24-2.27) driven by
// collkit tuning tables (docs/tuning.md). NCCL fills its cost table, then asks the plugin; for a
// collective and size a table covers, the plugin forces the range's NCCL algorithm (its protocol
// when the table names one, else NCCL's cheapest for that algorithm) and its channel count. Where
// no table speaks, or NCCL cannot run the algorithm there, NCCL's own choice stands.
//
// Tables come from COLLKIT_TUNING_FILE (one path, or several joined by ':'), read at init; a table
// for another rank count than the communicator's is skipped, saying so.

#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/plan/tuning.h"
#include "nccl_tuner_abi.h"

namespace {

using collkit::plan::Collective;
using collkit::plan::TuningRange;
using collkit::plan::TuningTable;

constexpr const char* kEnv = "COLLKIT_TUNING_FILE";

struct Tuner {
  collkit_ncclDebugLogger_t log = nullptr;
  std::size_t nranks = 0;
  std::vector<TuningTable> tables;
  std::vector<std::vector<char>> announced;  // per table, per range: its first use was logged

  template <typename... Args>
  void say(int level, const char* fmt, Args... args) const {
    if (log) log(level, COLLKIT_NCCL_TUNING, __FILE__, __LINE__, fmt, args...);
  }
};

std::optional<Collective> collective_of(int coll_type) {
  switch (coll_type) {
    case COLLKIT_NCCL_BROADCAST: return Collective::Broadcast;
    case COLLKIT_NCCL_REDUCE: return Collective::Reduce;
    case COLLKIT_NCCL_ALLGATHER: return Collective::AllGather;
    case COLLKIT_NCCL_REDUCESCATTER: return Collective::ReduceScatter;
    case COLLKIT_NCCL_ALLREDUCE: return Collective::AllReduce;
    default: return std::nullopt;  // point-to-point and the rest: NCCL's table has no algorithms for them
  }
}

std::vector<std::string> paths_in(const char* value) {
  std::vector<std::string> out;
  std::string all(value);
  std::size_t start = 0;
  while (start <= all.size()) {
    std::size_t end = all.find(':', start);
    if (end == std::string::npos) end = all.size();
    if (end > start) out.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

collkit_ncclResult_t init_tuner(void** context, std::size_t nranks, collkit_ncclDebugLogger_t log) {
  *context = nullptr;
  auto tuner = std::unique_ptr<Tuner>(new (std::nothrow) Tuner);
  if (!tuner) return collkitNcclInternalError;
  tuner->log = log;
  tuner->nranks = nranks;
  const char* env = std::getenv(kEnv);
  if (!env || !*env) {
    tuner->say(COLLKIT_NCCL_LOG_INFO, "collkit tuner: %s is not set; NCCL's own choices stand", kEnv);
  } else {
    try {
      for (const std::string& path : paths_in(env)) {
        TuningTable t = collkit::plan::read_tuning_table(path, collkit::read_file(path));
        std::string coll(collkit::plan::to_string(t.collective));
        if (static_cast<std::size_t>(t.nranks) != nranks) {
          tuner->say(COLLKIT_NCCL_LOG_INFO, "collkit tuner: %s is for %d ranks, this communicator has %zu: not used", path.c_str(),
                     t.nranks, nranks);
          continue;
        }
        bool duplicate = false;
        for (const TuningTable& other : tuner->tables) duplicate = duplicate || other.collective == t.collective;
        if (duplicate) {
          tuner->say(COLLKIT_NCCL_LOG_WARN, "collkit tuner: %s is a second %s table for %zu ranks: not used", path.c_str(), coll.c_str(),
                     nranks);
          continue;
        }
        tuner->say(COLLKIT_NCCL_LOG_INFO, "collkit tuner: %s: %s on %zu ranks, %zu size ranges", path.c_str(), coll.c_str(), nranks,
                   t.ranges.size());
        tuner->announced.emplace_back(t.ranges.size(), 0);
        tuner->tables.push_back(std::move(t));
      }
    } catch (const std::exception& e) {
      // A table the user named but that cannot be used fails the communicator's set-up loudly,
      // rather than running untuned while the user believes otherwise.
      tuner->say(COLLKIT_NCCL_LOG_WARN, "collkit tuner: %s", e.what());
      return collkitNcclInvalidUsage;
    }
  }
  *context = tuner.release();
  return collkitNcclSuccess;
}

collkit_ncclResult_t get_coll_info(void* context, int coll_type, std::size_t bytes, int /*num_pipe_ops*/, float** cost_table, int num_algo,
                                   int num_proto, int /*reg_buff*/, int* channels) {
  auto* tuner = static_cast<Tuner*>(context);
  auto coll = collective_of(coll_type);
  if (!tuner || !coll || !cost_table || num_proto <= 0) return collkitNcclSuccess;
  for (std::size_t i = 0; i < tuner->tables.size(); ++i) {
    const TuningTable& t = tuner->tables[i];
    if (t.collective != *coll) continue;
    const TuningRange* range = t.find(bytes);
    if (!range || !range->nccl) return collkitNcclSuccess;
    // The table is float[num_algo][num_proto] passed as float** (REFERENCE.md 2.3).
    float* cells = reinterpret_cast<float*>(cost_table);
    int algo = static_cast<int>(range->nccl->algorithm);
    if (algo >= num_algo) return collkitNcclSuccess;
    float* row = cells + static_cast<std::ptrdiff_t>(algo) * num_proto;
    int proto = -1;
    if (range->nccl->protocol) {
      int p = static_cast<int>(*range->nccl->protocol);
      if (p < num_proto && row[p] >= 0) proto = p;
    }
    for (int p = 0; proto < 0 && p < num_proto; ++p)
      if (row[p] >= 0) proto = p;
    for (int p = proto + 1; proto >= 0 && !range->nccl->protocol && p < num_proto; ++p)
      if (row[p] >= 0 && row[p] < row[proto]) proto = p;
    if (proto < 0) return collkitNcclSuccess;  // NCCL cannot run that algorithm here: its choice stands
    row[proto] = 0.0f;
    if (range->nccl->channels > 0 && channels) *channels = range->nccl->channels;
    std::size_t index = static_cast<std::size_t>(range - t.ranges.data());
    if (!tuner->announced[i][index]) {
      tuner->announced[i][index] = 1;
      tuner->say(COLLKIT_NCCL_LOG_INFO, "collkit tuner: %s of %zu bytes: algorithm %d protocol %d channels %d (collkit's best there: %s)",
                 std::string(collkit::plan::to_string(t.collective)).c_str(), bytes, algo, proto, range->nccl->channels,
                 range->algorithm.c_str());
    }
    return collkitNcclSuccess;
  }
  return collkitNcclSuccess;
}

collkit_ncclResult_t finalize_tuner(void* context) {
  delete static_cast<Tuner*>(context);
  return collkitNcclSuccess;
}

collkit_ncclResult_t init_v5(void** context, uint64_t /*comm_id*/, size_t nranks, size_t /*nnodes*/, collkit_ncclDebugLogger_t log,
                             collkit_ncclNvlDomainInfo_v5_t* /*nvl_domains*/, collkit_ncclTunerConstants_v5_t* /*constants*/) {
  return init_tuner(context, nranks, log);
}

collkit_ncclResult_t init_v4(size_t nranks, size_t /*nnodes*/, collkit_ncclDebugLogger_t log, void** context) {
  return init_tuner(context, nranks, log);
}

}  // namespace

// The symbols NCCL looks up, newest first (REFERENCE.md 2.4); nothing else is exported.
extern "C" {
__attribute__((visibility("default"))) collkit_ncclTuner_v5_t ncclTunerPlugin_v5 = {"collkit", init_v5, get_coll_info, finalize_tuner};
__attribute__((visibility("default"))) collkit_ncclTuner_v4_t ncclTunerPlugin_v4 = {"collkit", init_v4, get_coll_info, finalize_tuner};
}
