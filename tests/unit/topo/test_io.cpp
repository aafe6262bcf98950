#include <doctest/doctest.h>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/topo/io.h"

using namespace collkit;
using namespace collkit::topo;

namespace {
std::string fixture(const std::string& name) { return std::string(COLLKIT_FIXTURES) + "/topology/" + name; }
// Errors name the file as the user gave it; fixtures are loaded by their bare name.
std::string load_error(const std::string& name) {
  try {
    from_json(read_file(fixture(name)), name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("a topology file loads and round-trips with the same fingerprint") {
  Topology t = load(fixture("two-gpus.json"));
  CHECK(t.name == "two-gpus");
  CHECK(t.num_vertices() == 3);
  CHECK(t.num_links() == 3);
  REQUIRE(t.num_ranks() == 2);
  CHECK(t.vertex(t.rank_vertex(1)).id == "h0/gpu1");
  CHECK(t.link(2).type == LinkType::NvLink);
  CHECK(t.link(2).lanes == 4);
  Topology again = from_json(to_json(t), "again.json");
  CHECK(again.fingerprint() == t.fingerprint());
  CHECK(to_json(again) == to_json(t));
}

TEST_CASE("the fingerprint of figures past 9e12 (micro-units beyond int64) is defined and tells them apart") {
  // Found by fuzz_nccl_xml: a 5.7e131 bandwidth made the fingerprint cast a double past int64 (UB).
  auto with_bw = [](const std::string& bw) {
    return from_json(
        R"({"schema": "collkit.topology/1", "name": "t", "vertices": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}],
      "links": [{"a": "g0", "b": "g1", "type": "nvlink", "bw_gbps": )" +
            bw + R"(, "latency_us": 1}], "ranks": ["g0", "g1"]})",
        "t.json");
  };
  Topology a = with_bw("5.7e131"), b = with_bw("1e300"), c = with_bw("9e12");
  CHECK(a.fingerprint() != b.fingerprint());
  CHECK(b.fingerprint() != c.fingerprint());
  CHECK(from_json(to_json(a), "again.json").fingerprint() == a.fingerprint());
  CHECK(with_bw("100").fingerprint() == with_bw("100.0000001").fingerprint());  // below, micro-units as before
}

TEST_CASE("the fingerprint changes with any link figure") {
  Topology t = load(fixture("two-gpus.json"));
  std::string text = to_json(t);
  auto pos = text.find("\"bw_gbps\":100");
  REQUIRE(pos != std::string::npos);
  text.replace(pos, 13, "\"bw_gbps\":101");
  CHECK(from_json(text, "edited.json").fingerprint() != t.fingerprint());
}

TEST_CASE("malformed topology files get one precise line each") {
  CHECK(load_error("bad-syntax.json") ==
        "bad-syntax.json:4:21: invalid JSON: syntax error while parsing object - unexpected string literal; expected '}'");
  CHECK(load_error("bad-schema-kind.json") == "bad-schema-kind.json: /schema: expected \"collkit.topology/1\", got \"collkit.plan/1\"");
  CHECK(load_error("bad-schema-version.json") ==
        "bad-schema-version.json: /schema: unsupported version \"collkit.topology/2\" (this collkit reads \"collkit.topology/1\")");
  CHECK(load_error("bad-dangling-link.json") == "bad-dangling-link.json: /links/1/b: unknown vertex \"h0/cpu9\"");
  CHECK(load_error("bad-zero-bandwidth.json") == "bad-zero-bandwidth.json: /links/2/bw_gbps: must be > 0, got 0");
  CHECK(load_error("bad-negative-bandwidth.json") == "bad-negative-bandwidth.json: /links/0/bw_gbps: must be > 0, got -5");
  CHECK(load_error("bad-bandwidth-type.json") == "bad-bandwidth-type.json: /links/0/bw_gbps: expected number, got string \"fast\"");
  CHECK(load_error("bad-missing-latency.json") == "bad-missing-latency.json: /links/0: missing field \"latency_us\"");
  CHECK(load_error("bad-duplicate-id.json") == "bad-duplicate-id.json: /vertices/2/id: duplicate id \"h0/gpu0\" (first at /vertices/1)");
  CHECK(load_error("bad-vertex-kind.json") ==
        "bad-vertex-kind.json: /vertices/1/kind: unknown vertex kind \"tpu\" (expected gpu, cpu, pci_switch, nic, nvswitch, net_switch or host)");
  CHECK(load_error("bad-link-type.json") ==
        "bad-link-type.json: /links/0/type: unknown link type \"carrier-pigeon\" (expected nvlink, pcie, xgmi, c2c, smp, infiniband or ethernet)");
  CHECK(load_error("bad-unknown-field.json") ==
        "bad-unknown-field.json: /links/0: unknown field \"bandwidth\" (expected a, b, type, bw_gbps, latency_us, lanes)");
  CHECK(load_error("bad-no-ranks.json") == "bad-no-ranks.json: /ranks: the topology has no ranks");
  CHECK(load_error("bad-unknown-rank.json") == "bad-unknown-rank.json: /ranks/1: unknown vertex \"h0/gpu7\"");
  CHECK(load_error("bad-disconnected.json") ==
        "bad-disconnected.json: /ranks: rank set is not connected: rank 2 (h0/gpu2) cannot be reached from rank 0 (h0/gpu0)");
}

TEST_CASE("a missing file is a system error naming it") {
  CHECK_THROWS_WITH_AS(load("/nonexistent/topo.json"), "/nonexistent/topo.json: cannot open: No such file or directory", SystemError);
}

TEST_CASE("a calibration block round-trips, and a malformed one is refused with its field") {
  Topology t = load(fixture("two-gpus.json"));
  CHECK_FALSE(t.calibration);
  Calibration c;
  c.per_message_us = 21.5;
  c.reduce_gbps = 24.9;
  c.source = "coll-run calibrate, mpi backend (Open MPI v4.1.4), 4 ranks on 1 host(s), 2026-12-04";
  c.classes.push_back({"shared memory on vm/cpu0", 23.0, 14.8, 21.0, 8.0});
  c.classes.push_back({"ethernet route (4 hops, 1.25 GB/s nominal)", 80.0, 0.11, 0, 3.0});
  t.calibration = c;
  Topology back = from_json(to_json(t), "t.json");
  REQUIRE(back.calibration);
  CHECK(back.calibration->per_message_us == 21.5);
  CHECK(back.calibration->reduce_gbps == 24.9);
  CHECK(back.calibration->source == c.source);
  REQUIRE(back.calibration->classes.size() == 2);
  CHECK(back.calibration->classes[0].shared_bw_gbps == 21.0);
  CHECK(back.calibration->classes[1].shared_bw_gbps == 0);
  CHECK(back.calibration->classes[1].name == c.classes[1].name);
  CHECK(to_json(back) == to_json(t));
  CHECK(back.fingerprint() == t.fingerprint());  // what it changes is in the links and vertices

  std::string text = to_json(t);
  std::string bad = text.replace(text.find("\"reduce_gbps\":24.9"), 18, "\"reduce_gbps\":-1");
  CHECK_THROWS_WITH_AS(from_json(bad, "t.json"), "t.json: /calibration/reduce_gbps: must be >= 0, got -1", InputError);

  // The memory model: written only when a cache size is known, read back as written.
  CHECK(text.find("cache_bytes") == std::string::npos);
  t.calibration->cache_bytes = 32u << 20;
  t.calibration->beyond_cache_factor = 0.55;
  std::string cached = to_json(t);
  Topology with_cache = from_json(cached, "t.json");
  CHECK(with_cache.calibration->cache_bytes == (32u << 20));
  CHECK(with_cache.calibration->beyond_cache_factor == 0.55);
  std::string neg = cached;
  neg.replace(neg.find("\"cache_bytes\":33554432"), 22, "\"cache_bytes\":-5");
  CHECK_THROWS_WITH_AS(from_json(neg, "t.json"), "t.json: /calibration/cache_bytes: expected a whole number of bytes >= 0, got -5",
                       InputError);
  std::string zero = cached;
  zero.replace(zero.find("\"beyond_cache_factor\":0.55"), 26, "\"beyond_cache_factor\":0");
  CHECK_THROWS_WITH_AS(from_json(zero, "t.json"), "t.json: /calibration/beyond_cache_factor: must be > 0, got 0", InputError);

  // The cores and a core's own cache: written only when known, read back as written.
  CHECK(cached.find("\"cores\"") == std::string::npos);
  CHECK(cached.find("core_cache") == std::string::npos);
  t.calibration->cores = 2;
  t.calibration->core_cache_bytes = 1u << 20;
  t.calibration->core_cache_factor = 2.5;
  std::string cores = to_json(t);
  Topology with_cores = from_json(cores, "t.json");
  CHECK(with_cores.calibration->cores == 2);
  CHECK(with_cores.calibration->core_cache_bytes == (1u << 20));
  CHECK(with_cores.calibration->core_cache_factor == 2.5);
  std::string none = cores;
  none.replace(none.find("\"cores\":2"), 9, "\"cores\":0");
  CHECK_THROWS_WITH_AS(from_json(none, "t.json"), "t.json: /calibration/cores: expected a whole number of cores, 1 to 1000000, got 0",
                       InputError);
  std::string slow = cores;
  slow.replace(slow.find("\"core_cache_factor\":2.5"), 23, "\"core_cache_factor\":-1");
  CHECK_THROWS_WITH_AS(from_json(slow, "t.json"), "t.json: /calibration/core_cache_factor: must be > 0, got -1", InputError);
}

TEST_CASE("a topology's provenance is written, ignored when read, and never part of its fingerprint") {
  Topology t = load(fixture("two-gpus.json"));
  std::string text = to_json(t);
  // The last member, on one line.
  REQUIRE(text.find("\n  \"provenance\": {\"date\":\"") != std::string::npos);
  CHECK(text.substr(text.rfind("\n  \"")).find("\n  \"provenance\": {") == 0);
  CHECK(text.ends_with("}\n}\n"));
  // Another tool, command and date (and a field this collkit does not know): the same topology.
  std::string start = "\n  \"provenance\": ";
  std::size_t at = text.find(start) + start.size();
  std::string other =
      text.substr(0, at) +
      R"({"tool": "coll-run", "version": "0.0.1", "command": ["coll-run", "calibrate"], "date": "2020-01-01T00:00:00Z", "host": "x"})" +
      text.substr(text.find('\n', at));
  Topology back = from_json(other, "other.json");
  CHECK(back.fingerprint() == t.fingerprint());
  CHECK(back.fingerprint_hex() == t.fingerprint_hex());
  CHECK(to_json(back) == text);  // written with this process's provenance, not the file's
}
