// libnccl-tuner-collkit.so as NCCL uses it: dlopen'ed, its v5 and v4 structs looked up by name,
// init / getCollInfo / finalize called on a float[7][3] cost table laid out as NCCL passes it.

#include <dlfcn.h>
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nccl_tuner_abi.h"

namespace {

std::vector<std::string> g_log;  // what the plugin logged, one line per call

extern "C" void capture_log(int level, unsigned long flags, const char*, int, const char* fmt, ...) {
  char line[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  g_log.push_back(std::to_string(level) + ":" + std::to_string(flags) + ":" + line);
}

struct Plugin {
  void* handle = dlopen(COLLKIT_TUNER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ~Plugin() {
    if (handle) dlclose(handle);
  }
  template <typename T>
  T* symbol(const char* name) const {
    return handle ? static_cast<T*>(dlsym(handle, name)) : nullptr;
  }
};

// NCCL's table before the plugin: Tree and Ring costed for every protocol, the rest impossible.
struct CostTable {
  float cells[7][3];
  CostTable() {
    for (auto& row : cells)
      for (float& c : row) c = -1.0f;
    const float tree[3] = {30, 20, 25}, ring[3] = {40, 35, 10};
    for (int p = 0; p < 3; ++p) cells[0][p] = tree[p], cells[1][p] = ring[p];
  }
  float** ptr() { return reinterpret_cast<float**>(cells); }
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/collkit-tuner-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& file, const std::string& text) const {
    std::ofstream(path / file) << text;
    return (path / file).string();
  }
};

// An AllReduce table for 8 ranks: tree below 64 KiB (LL forced), ring from 64 KiB to 1 MiB with 4
// channels and NCCL's protocol, a range with no NCCL choice above, nothing past 16 MiB.
const char* kAllReduce8 = R"({"schema": "collkit.tuning/1", "collective": "allreduce", "nranks": 8,
  "ranges": [
    {"min_bytes": 0, "max_bytes": 65535, "algorithm": "tree", "channels": 2, "nccl": {"algorithm": "tree", "protocol": "ll"}},
    {"min_bytes": 65536, "max_bytes": 1048575, "algorithm": "hier", "channels": 8, "nccl": {"algorithm": "ring", "channels": 4}},
    {"min_bytes": 1048576, "max_bytes": 16777215, "algorithm": "rhd", "channels": 1}
  ]})";

}  // namespace

TEST_CASE("nccl tuner plugin: v5 forces the table's NCCL algorithm, protocol and channels per size") {
  Plugin plugin;
  REQUIRE_MESSAGE(plugin.handle, dlerror());
  auto* v5 = plugin.symbol<collkit_ncclTuner_v5_t>("ncclTunerPlugin_v5");
  REQUIRE(v5);
  CHECK(std::string(v5->name) == "collkit");
  TempDir dir;
  std::string table = dir.write("ar8.json", kAllReduce8);
  // A table for another rank count is skipped, saying so; the one for 8 ranks is used.
  std::string other =
      dir.write("ar16.json", std::string(kAllReduce8).replace(std::string(kAllReduce8).find("\"nranks\": 8"), 11, "\"nranks\": 16"));
  setenv("COLLKIT_TUNING_FILE", (other + ":" + table).c_str(), 1);
  g_log.clear();
  void* ctx = nullptr;
  collkit_ncclNvlDomainInfo_v5_t nvl{1, 8, 8};
  collkit_ncclTunerConstants_v5_t constants{};
  REQUIRE(v5->init(&ctx, 42, 8, 1, capture_log, &nvl, &constants) == collkitNcclSuccess);
  REQUIRE(ctx);
  REQUIRE(g_log.size() == 2);
  CHECK(g_log[0] == "3:64:collkit tuner: " + other + " is for 16 ranks, this communicator has 8: not used");
  CHECK(g_log[1] == "3:64:collkit tuner: " + table + ": allreduce on 8 ranks, 3 size ranges");

  int checked = 0;
  struct Case {
    int coll;
    std::size_t bytes;
    int algo, proto;  // the cell forced to 0; -1: the table is left as NCCL filled it
    int channels;     // *nChannels after the call (it starts at 0)
  };
  const Case cases[] = {
      {COLLKIT_NCCL_ALLREDUCE, 1024, 0, 0, 0},        // tree, the table's protocol (LL, though LL128 is cheaper)
      {COLLKIT_NCCL_ALLREDUCE, 65535, 0, 0, 0},       // the range's last byte
      {COLLKIT_NCCL_ALLREDUCE, 65536, 1, 2, 4},       // ring, NCCL's cheapest protocol for it (Simple), 4 channels
      {COLLKIT_NCCL_ALLREDUCE, 4 << 20, -1, -1, 0},   // collkit's rhd has no NCCL counterpart: NCCL's choice
      {COLLKIT_NCCL_ALLREDUCE, 64 << 20, -1, -1, 0},  // no range covers it
      {COLLKIT_NCCL_ALLGATHER, 1024, -1, -1, 0},      // no AllGather table
      {5, 1024, -1, -1, 0},                           // SendRecv: not a costed function
  };
  for (const Case& c : cases) {
    CAPTURE(c.coll);
    CAPTURE(c.bytes);
    CostTable before, after;
    int channels = 0;
    CHECK(v5->getCollInfo(ctx, c.coll, c.bytes, 1, after.ptr(), 7, 3, 0, &channels) == collkitNcclSuccess);
    for (int a = 0; a < 7; ++a)
      for (int p = 0; p < 3; ++p) {
        CAPTURE(a);
        CAPTURE(p);
        CHECK(after.cells[a][p] == (a == c.algo && p == c.proto ? 0.0f : before.cells[a][p]));
      }
    CHECK(channels == c.channels);
    ++checked;
  }
  CHECK(checked == 7);
  // Each range's first use is logged once.
  CostTable again;
  int channels = 0;
  v5->getCollInfo(ctx, COLLKIT_NCCL_ALLREDUCE, 2048, 1, again.ptr(), 7, 3, 0, &channels);
  CHECK(g_log.size() == 4);
  CHECK(g_log[2] == "3:64:collkit tuner: allreduce of 1024 bytes: algorithm 0 protocol 0 channels 0 (collkit's best there: tree)");

  // An algorithm NCCL cannot run for this call (its row all -1) leaves NCCL's choice.
  CostTable no_tree;
  for (float& c : no_tree.cells[0]) c = -1.0f;
  CostTable expect = no_tree;
  CHECK(v5->getCollInfo(ctx, COLLKIT_NCCL_ALLREDUCE, 1024, 1, no_tree.ptr(), 7, 3, 0, &channels) == collkitNcclSuccess);
  CHECK(std::equal(&no_tree.cells[0][0], &no_tree.cells[0][0] + 21, &expect.cells[0][0]));
  CHECK(v5->finalize(ctx) == collkitNcclSuccess);
  unsetenv("COLLKIT_TUNING_FILE");
}

TEST_CASE("nccl tuner plugin: v4 reads the same tables, no table leaves NCCL's choices, a bad table fails init") {
  Plugin plugin;
  REQUIRE_MESSAGE(plugin.handle, dlerror());
  auto* v4 = plugin.symbol<collkit_ncclTuner_v4_t>("ncclTunerPlugin_v4");
  REQUIRE(v4);
  TempDir dir;
  setenv("COLLKIT_TUNING_FILE", dir.write("ar8.json", kAllReduce8).c_str(), 1);
  void* ctx = nullptr;
  REQUIRE(v4->init(8, 1, capture_log, &ctx) == collkitNcclSuccess);
  CostTable t;
  int channels = 0;
  v4->getCollInfo(ctx, COLLKIT_NCCL_ALLREDUCE, 100000, 1, t.ptr(), 7, 3, 0, &channels);
  CHECK(t.cells[1][2] == 0.0f);
  CHECK(channels == 4);
  CHECK(v4->destroy(ctx) == collkitNcclSuccess);

  unsetenv("COLLKIT_TUNING_FILE");
  g_log.clear();
  REQUIRE(v4->init(8, 1, capture_log, &ctx) == collkitNcclSuccess);
  CHECK(g_log == std::vector<std::string>{"3:64:collkit tuner: COLLKIT_TUNING_FILE is not set; NCCL's own choices stand"});
  CostTable untouched, reference;
  v4->getCollInfo(ctx, COLLKIT_NCCL_ALLREDUCE, 1024, 1, untouched.ptr(), 7, 3, 0, &channels);
  CHECK(std::equal(&untouched.cells[0][0], &untouched.cells[0][0] + 21, &reference.cells[0][0]));
  CHECK(v4->destroy(ctx) == collkitNcclSuccess);

  // The user named a table that cannot be used: init fails, naming the file and the field.
  std::string bad = dir.write("bad.json", std::string(kAllReduce8).replace(std::string(kAllReduce8).find("\"ll\""), 4, "\"ll64\""));
  setenv("COLLKIT_TUNING_FILE", bad.c_str(), 1);
  g_log.clear();
  ctx = nullptr;
  CHECK(v4->init(8, 1, capture_log, &ctx) == collkitNcclInvalidUsage);
  CHECK(ctx == nullptr);
  CHECK(g_log == std::vector<std::string>{"2:64:collkit tuner: " + bad +
                                          ": /ranges/0/nccl/protocol: unknown NCCL protocol \"ll64\" (expected ll, ll128 or simple)"});
  setenv("COLLKIT_TUNING_FILE", (dir.path / "none.json").c_str(), 1);
  g_log.clear();
  CHECK(v4->init(8, 1, capture_log, &ctx) == collkitNcclInvalidUsage);
  REQUIRE(g_log.size() == 1);
  CHECK(g_log[0].find((dir.path / "none.json").string()) != std::string::npos);
  unsetenv("COLLKIT_TUNING_FILE");
}
