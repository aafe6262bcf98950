// collkit.tuning/1: written by the sweep, read back (also by the NCCL tuner plugin), every
// malformed table refused with the file and the field.

#include <doctest/doctest.h>

#include <string>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/plan/tuning.h"

using namespace collkit::plan;

namespace {

std::string refusal(const std::string& text) {
  try {
    (void)read_tuning_table("t.json", text);
  } catch (const collkit::InputError& e) {
    return e.what();
  }
  return "(read)";
}

std::string table(const std::string& ranges) {
  return R"({"schema": "collkit.tuning/1", "collective": "allgather", "nranks": 16, "ranges": [)" + ranges + "]}";
}

}  // namespace

TEST_CASE("tuning table: written and read back the same, an open last range has no max_bytes") {
  TuningTable t;
  t.collective = Collective::ReduceScatter;
  t.nranks = 1024;
  t.topology_name = "dgx-h100x128-fat-tree";
  t.topology_fingerprint = "02c98fe336d7a5dc";
  t.ranges.push_back({0, 262143, "rd", 4, 16.87, 0, NcclChoice{NcclAlgo::Tree, NcclProto::LL, 2, 20.5}});
  t.ranges.push_back({262144, std::nullopt, "hier", 8, 390.2, 377.5, NcclChoice{NcclAlgo::Ring, std::nullopt, 8, 401.0}});
  std::string text = write_tuning_table(t);
  CHECK(text.find("18446744073709551615") == std::string::npos);
  TuningTable back = read_tuning_table("t.json", text);
  CHECK(back.collective == t.collective);
  CHECK(back.nranks == 1024);
  CHECK(back.topology_fingerprint == t.topology_fingerprint);
  REQUIRE(back.ranges.size() == 2);
  CHECK(back.ranges[0].max_bytes == 262143u);
  CHECK(!back.ranges[1].max_bytes);
  REQUIRE(back.ranges[0].nccl);
  CHECK(back.ranges[0].nccl->algorithm == NcclAlgo::Tree);
  CHECK(back.ranges[0].nccl->protocol == NcclProto::LL);
  CHECK(back.ranges[0].nccl->channels == 2);
  CHECK(!back.ranges[1].nccl->protocol);
  CHECK(back.ranges[0].measured_us_at_min == 0);
  CHECK(back.ranges[1].measured_us_at_min == 377.5);
  CHECK(write_tuning_table(back) == text);
  CHECK(back.find(0) == &back.ranges[0]);
  CHECK(back.find(262143) == &back.ranges[0]);
  CHECK(back.find(262144) == &back.ranges[1]);
  CHECK(back.find(std::uint64_t{1} << 60) == &back.ranges[1]);
}

TEST_CASE("tuning table: malformed tables are refused with the file and the field") {
  int checked = 0;
  struct Case {
    std::string text, error;
  };
  const Case cases[] = {
      {R"({"schema": "collkit.plan/1"})", "t.json: /schema: expected \"collkit.tuning/1\", got \"collkit.plan/1\""},
      {table(R"({"min_bytes": 0, "max_bytes": 18446744073709551615, "algorithm": "ring"})"),
       "t.json: /ranges/0/max_bytes: integer 18446744073709551615 is out of range (at most 9223372036854775807)"},
      {table(R"({"min_bytes": 0, "max_bytes": 9007199254740992, "algorithm": "ring"})"),
       "t.json: /ranges/0/max_bytes: sizes must be below 2^53 (9007199254740992) to survive JSON readers; leave out max_bytes "
       "for no upper end"},
      {table(R"({"min_bytes": 10, "max_bytes": 5, "algorithm": "ring"})"),
       "t.json: /ranges/0/max_bytes: max_bytes 5 is below min_bytes 10"},
      {table(R"({"min_bytes": 0, "max_bytes": 100, "algorithm": "ring"}, {"min_bytes": 100, "algorithm": "rd"})"),
       "t.json: /ranges/1/min_bytes: ranges must ascend without overlap: 100 is within the range before"},
      {table(R"({"min_bytes": 0, "algorithm": "ring"}, {"min_bytes": 100, "algorithm": "rd"})"),
       "t.json: /ranges/1/min_bytes: ranges must ascend without overlap: 100 is within the range before"},
      {table(R"({"min_bytes": 0, "algorithm": "ring", "nccl": {"algorithm": "butterfly"}})"),
       "t.json: /ranges/0/nccl/algorithm: unknown NCCL algorithm \"butterfly\" (expected tree, ring, collnet_direct, "
       "collnet_chain, nvls, nvls_tree or pat)"},
      {table(R"({"min_bytes": 0, "algorithm": "ring", "nccl": {"algorithm": "ring", "channels": 65}})"),
       "t.json: /ranges/0/nccl/channels: channels must be 0..64 (NCCL's MAXCHANNELS), got 65"},
      {table(R"({"min_bytes": -1, "algorithm": "ring"})"), "t.json: /ranges/0/min_bytes: must be >= 0, got -1"},
      {table(R"({"min_bytes": 0, "algorithm": "ring", "chanels": 2})"), ""},  // the misspelt key: message from expect_keys
      {R"({"schema": "collkit.tuning/1", "collective": "allscatter", "nranks": 16, "ranges": []})",
       "t.json: /collective: unknown collective \"allscatter\""},
      {R"({"schema": "collkit.tuning/1", "collective": "allgather", "nranks": 0, "ranges": []})",
       "t.json: /nranks: must be a rank count >= 1, got 0"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    std::string got = refusal(c.text);
    if (c.error.empty()) CHECK(got.find("t.json: /ranges/0") == 0);
    else CHECK(got == c.error);
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE("tuning table: docs/examples/tuning.json reads") {
  std::string path = std::string(COLLKIT_DOCS_DIR) + "/examples/tuning.json";
  TuningTable t = read_tuning_table(path, collkit::read_file(path));
  CHECK(t.collective == Collective::AllReduce);
  CHECK(t.nranks == 16);
  // coll-plan sweep --topo (dgx-h100 x2) --coll allreduce -b 1K -e 1G -f 16 --json: the winners,
  // and NCCL's tree up to 4 MiB and ring above.
  REQUIRE(t.ranges.size() == 5);
  CHECK(t.find(1 << 20)->algorithm == "hier");
  CHECK(t.find(1 << 20)->nccl->algorithm == NcclAlgo::Tree);
  CHECK(t.find(std::uint64_t{1} << 40)->nccl->algorithm == NcclAlgo::Ring);
  CHECK(!t.ranges.back().max_bytes);
}
