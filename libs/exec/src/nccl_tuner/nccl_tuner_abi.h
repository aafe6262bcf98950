#pragma once
// NCCL's tuner plugin ABI, v4 (NCCL 2.24-2.27) and v5 (2.28-2.29), declared from its documented
// layout (REFERENCE.md, section 2; NCCL's src/include/plugin/tuner/tuner_v{4,5}.h) so the plugin
// builds without NCCL's headers. Only what a tuner touches is declared.

#include <cstddef>
#include <cstdint>

extern "C" {

typedef enum { collkitNcclSuccess = 0, collkitNcclInternalError = 3, collkitNcclInvalidUsage = 5 } collkit_ncclResult_t;

/// ncclDebugLogLevel and the subsystem flag a tuner logs under.
enum { COLLKIT_NCCL_LOG_WARN = 2, COLLKIT_NCCL_LOG_INFO = 3 };
enum : unsigned long { COLLKIT_NCCL_TUNING = 0x40 };
typedef void (*collkit_ncclDebugLogger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

/// ncclFunc_t: the five functions of NCCL's cost tables, then point-to-point and the rest.
enum {
  COLLKIT_NCCL_BROADCAST = 0,
  COLLKIT_NCCL_REDUCE = 1,
  COLLKIT_NCCL_ALLGATHER = 2,
  COLLKIT_NCCL_REDUCESCATTER = 3,
  COLLKIT_NCCL_ALLREDUCE = 4
};

typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} collkit_ncclNvlDomainInfo_v5_t;

/// ncclTunerConstants_v5_t: the cost model's constants, which a v5 init may rewrite in place.
typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
} collkit_ncclTunerConstants_v5_t;

/// getCollInfo, the same in v4 and v5. `collCostTable` is a float[numAlgo][numProto] passed as
/// float**: cells below 0 are not possible, 0 forces a cell, NCCL takes the cheapest cell.
typedef collkit_ncclResult_t (*collkit_getCollInfo_t)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                                      int numAlgo, int numProto, int regBuff, int* nChannels);

typedef struct {
  const char* name;
  collkit_ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, collkit_ncclDebugLogger_t logFunction,
                               collkit_ncclNvlDomainInfo_v5_t* nvlDomainInfo, collkit_ncclTunerConstants_v5_t* constants);
  collkit_getCollInfo_t getCollInfo;
  collkit_ncclResult_t (*finalize)(void* context);
} collkit_ncclTuner_v5_t;

typedef struct {
  const char* name;
  collkit_ncclResult_t (*init)(size_t nRanks, size_t nNodes, collkit_ncclDebugLogger_t logFunction, void** context);
  collkit_getCollInfo_t getCollInfo;
  collkit_ncclResult_t (*destroy)(void* context);
} collkit_ncclTuner_v4_t;

}  // extern "C"
