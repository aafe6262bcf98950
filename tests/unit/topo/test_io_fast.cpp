// from_json's streaming fast path (from_json_fast) against the DOM loader (from_json_dom): the same
// Topology, field by field, for every file the fast path accepts; nullopt for every file the DOM
// loader refuses, so that every error still comes from the DOM loader word for word.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/topo/io.h"
#include "collkit/topo/synth.h"

using namespace collkit;
using namespace collkit::topo;

namespace {

void same_topology(const Topology& a, const Topology& b) {
  CHECK(a.name == b.name);
  CHECK(a.source == b.source);
  CHECK(a.notes == b.notes);
  REQUIRE(a.num_vertices() == b.num_vertices());
  for (VertexId i = 0; i < a.num_vertices(); ++i) {
    const Vertex &x = a.vertex(i), &y = b.vertex(i);
    bool same = x.id == y.id && x.kind == y.kind && x.host == y.host && x.label == y.label && x.busid == y.busid && x.numa == y.numa &&
                x.index == y.index && x.local_bw_gbps == y.local_bw_gbps && x.port_gbps == y.port_gbps && x.attrs == y.attrs;
    if (!same) FAIL_CHECK("vertex " << i << " (" << x.id << ") differs");
  }
  REQUIRE(a.num_links() == b.num_links());
  for (LinkId i = 0; i < a.num_links(); ++i) {
    const Link &x = a.link(i), &y = b.link(i);
    bool same =
        x.a == y.a && x.b == y.b && x.type == y.type && x.bw_gbps == y.bw_gbps && x.latency_us == y.latency_us && x.lanes == y.lanes;
    if (!same) FAIL_CHECK("link " << i << " differs");
  }
  CHECK(std::ranges::equal(a.rank_vertices(), b.rank_vertices()));
  REQUIRE(a.calibration.has_value() == b.calibration.has_value());
  if (a.calibration) {
    CHECK(a.calibration->per_message_us == b.calibration->per_message_us);
    CHECK(a.calibration->reduce_gbps == b.calibration->reduce_gbps);
    CHECK(a.calibration->source == b.calibration->source);
    REQUIRE(a.calibration->classes.size() == b.calibration->classes.size());
    for (std::size_t i = 0; i < a.calibration->classes.size(); ++i) {
      const auto &x = a.calibration->classes[i], &y = b.calibration->classes[i];
      CHECK((x.name == y.name && x.latency_us == y.latency_us && x.bw_gbps == y.bw_gbps && x.shared_bw_gbps == y.shared_bw_gbps &&
             x.residual_percent == y.residual_percent));
    }
  }
  CHECK(a.fingerprint() == b.fingerprint());
  CHECK(to_json(a) == to_json(b));
}

struct Tally {
  int accepted = 0;  // the fast path read it, the same as the DOM loader
  int refused = 0;   // both refused it (the error from_json gives is the DOM loader's)
  int fell_back = 0;  // the DOM loader read it, the fast path handed it over (e.g. a repeated field)
};

// `must_accept`: a well-formed file the fast path has to read itself (not hand to the DOM loader).
void compare(const std::string& text, const std::string& name, bool must_accept, Tally& tally) {
  CAPTURE(name);
  std::optional<Topology> fast = from_json_fast(text, name);
  std::optional<Topology> dom;
  std::string dom_error;
  try {
    dom = from_json_dom(text, name);
  } catch (const InputError& e) {
    dom_error = e.what();
  }
  if (!dom) {
    CAPTURE(dom_error);
    CHECK_FALSE(fast);
    CHECK_THROWS_WITH_AS(from_json(text, name), dom_error.c_str(), InputError);
    ++tally.refused;
    return;
  }
  if (must_accept) REQUIRE(fast);
  if (!fast) {
    ++tally.fell_back;
    return;
  }
  same_topology(*fast, *dom);
  ++tally.accepted;
}

Calibration sample_calibration() {
  Calibration c;
  c.per_message_us = 21.5;
  c.reduce_gbps = 24.9;
  c.source = "coll-run calibrate, mpi backend, 2026-12-04";
  c.classes.push_back({"shared memory on vm/cpu0", 23.0, 14.8, 21.0, 8.0});
  c.classes.push_back({"nvlink route", 3.5, 380.0, 0, 1.5});
  return c;
}

}  // namespace

TEST_CASE("the fast loader reads every preset, fabric, torus and calibrated topology as the DOM loader does") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  Tally tally;
  int built = 0;
  for (const std::string& preset : list_node_presets()) {
    std::vector<SynthRequest> requests = {
        {preset, 1, ""}, {preset, 3, ""}, {preset, 2, "single-switch"}, {preset, 4, "torus:dims=2x2"}, {preset, 8, "torus:dims=2x2x2"}};
    for (const SynthRequest& r : requests) {
      std::optional<Topology> t;
      try {
        t = synth(r);
      } catch (const InputError&) {
        continue;  // a preset without NICs has no multi-node fabric
      }
      ++built;
      std::string name = preset + " x" + std::to_string(r.nodes) + " " + r.fabric;
      compare(to_json(*t), name, true, tally);
      t->calibration = sample_calibration();
      compare(to_json(*t), name + " calibrated", true, tally);
    }
  }
  CHECK(built >= 20);
  CHECK(tally.accepted == 2 * built);
  MESSAGE("presets x fabrics: " << tally.accepted << " topologies read the same both ways");
}

TEST_CASE("the fast loader agrees with the DOM loader on every topology fixture, good or bad") {
  Tally tally;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(COLLKIT_FIXTURES) + "/topology")) {
    std::string name = entry.path().filename().string();
    bool good = name.rfind("bad-", 0) != 0;
    compare(read_file(entry.path().string()), name, good, tally);
    ++files;
  }
  CHECK(files >= 16);
  CHECK(tally.accepted + tally.refused == files);
  CHECK(tally.refused >= 15);
  MESSAGE("fixtures: " << tally.accepted << " read the same, " << tally.refused << " refused by both");
}

TEST_CASE("the fast loader agrees on hand-written variants: key order, spacing, escapes, repeats, wrong types") {
  // A valid two-GPU file; each variant replaces one piece of it.
  const std::string base = R"({"schema": "collkit.topology/1", "name": "v", "source": "s", "fingerprint": "x",
 "notes": ["n1"],
 "vertices": [
  {"id": "h0/gpu0", "kind": "gpu", "host": "h0", "index": 0, "numa": 1, "local_bw_gbps": 3000, "attrs": {"sm": "90"}},
  {"id": "h0/gpu1", "kind": "gpu", "host": "h0", "index": 1, "label": "G1", "busid": "0000:1b:00.0", "port_gbps": 50.5},
  {"id": "h0/nvswitch", "kind": "nvswitch", "host": "h0"}
 ],
 "links": [
  {"a": "h0/gpu0", "b": "h0/nvswitch", "type": "nvlink", "bw_gbps": 450, "latency_us": 0.15, "lanes": 18},
  {"a": "h0/gpu1", "b": "h0/nvswitch", "type": "nvlink", "bw_gbps": 450.0, "latency_us": 0}
 ],
 "ranks": ["h0/gpu0", "h0/gpu1"]})";
  auto with = [&](const std::string& from, const std::string& to) {
    auto at = base.find(from);
    REQUIRE(at != std::string::npos);
    return base.substr(0, at) + to + base.substr(at + from.size());
  };
  struct Variant {
    std::string text;
    bool must_accept;
  };
  std::vector<Variant> variants = {
      {base, true},
      // links before vertices, ranks first: to_json's sorted order and others
      {R"({"links": [{"a": "a", "b": "b", "type": "pcie", "bw_gbps": 1, "latency_us": 1}], "ranks": ["a", "b"],
          "vertices": [{"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}], "schema": "collkit.topology/1"})",
       true},
      {with(R"("sm": "90")", R"("sm": "90", "sm": "80", "\u00e9/~": "caf\u00e9")"), true},  // repeated attr: last wins
      {with(R"("name": "v")", R"("name": "first", "name": "v\n\"q\"")"), true},             // repeated root key: last wins
      {with(R"("numa": 1)", R"("numa": -2)"), true},
      {with(R"("numa": 1)", R"("numa": 4294967297)"), false},
      {with(R"("notes": ["n1"])", R"("notes": [], "calibration": {"per_message_us": 1, "reduce_gbps": 2})"), true},
      {with(R"("fingerprint": "x")", R"("fingerprint": {"any": [1, null, true]})"), true},
      // refused by both, or read the same
      {with(R"("numa": 1)", R"("numa": 1.0)"), false},
      {with(R"("numa": 1)", R"("numa": 1, "numa": 2)"), false},
      {with(R"("numa": 1)", R"("numa": 18446744073709551615)"), false},
      {with(R"("lanes": 18)", R"("lanes": 0)"), false},
      {with(R"("lanes": 18)", R"("lanes": 18, "lanes": 2)"), false},
      {with(R"("lanes": 18)", R"("lanes": 1e2)"), false},
      {with(R"("local_bw_gbps": 3000)", R"("local_bw_gbps": -1)"), false},
      {with(R"("local_bw_gbps": 3000)", R"("local_bw_gbps": "3000")"), false},
      {with(R"("local_bw_gbps": 3000)", R"("local_bw_gbps": 1e400)"), false},
      {with(R"("attrs": {"sm": "90"})", R"("attrs": {"sm": 90})"), false},
      {with(R"("attrs": {"sm": "90"})", R"("attrs": ["sm"])"), false},
      {with(R"("attrs": {"sm": "90"})", R"("attrs": {"sm": "90"}, "attrs": {"x": "y"})"), false},
      {with(R"("kind": "nvswitch")", R"("kind": "router")"), false},
      {with(R"("kind": "nvswitch")", R"("kind": "nvswitch", "extra": 1)"), false},
      {with(R"("id": "h0/nvswitch")", R"("id": "")"), false},
      {with(R"("id": "h0/nvswitch")", R"("id": "h0/gpu1")"), false},
      {with(R"("id": "h0/nvswitch", )", ""), false},
      {with(R"("type": "nvlink", "bw_gbps": 450.0)", R"("type": "nvlink", "bw_gbps": 0)"), false},
      {with(R"("type": "nvlink", "bw_gbps": 450.0)", R"("type": "optical", "bw_gbps": 450.0)"), false},
      {with(R"("type": "nvlink", "bw_gbps": 450.0)", R"("bw_gbps": 450.0)"), false},
      {with(R"("latency_us": 0})", R"("latency_us": -0.5})"), false},
      {with(R"("latency_us": 0})", R"("latency_us": null})"), false},
      {with(R"("b": "h0/nvswitch", "type": "nvlink", "bw_gbps": 450.0)", R"("b": "h0/gpu1", "type": "nvlink", "bw_gbps": 450.0)"), false},
      {with(R"("b": "h0/nvswitch", "type": "nvlink", "bw_gbps": 450.0)", R"("b": "h0/nope", "type": "nvlink", "bw_gbps": 450.0)"), false},
      {with(R"("ranks": ["h0/gpu0", "h0/gpu1"])", R"("ranks": [])"), false},
      {with(R"("ranks": ["h0/gpu0", "h0/gpu1"])", R"("ranks": ["h0/gpu9"])"), false},
      {with(R"("ranks": ["h0/gpu0", "h0/gpu1"])", R"("ranks": ["h0/gpu0"], "vertices": [])"), false},
      {with(R"("ranks": ["h0/gpu0", "h0/gpu1"])", R"("ranks": ["h0/gpu0"], "links": [])"), false},
      {with(R"("ranks": ["h0/gpu0", "h0/gpu1"])", R"("ranks": ["h0/gpu0"], "extra": 1)"), false},
      {with(R"("schema": "collkit.topology/1")", R"("schema": "collkit.topology/2")"), false},
      {with(R"("notes": ["n1"])", R"("notes": "n1")"), false},
      {with(R"("notes": ["n1"])", R"("notes": [], "calibration": {"per_message_us": -1, "reduce_gbps": 2})"), false},
      {with(R"("vertices": [)", R"("vertices": {"x": [)"), false},
      {with(R"("links": [)", R"("links": [[], )"), false},
      {base + "x", false},
      {base.substr(0, base.size() - 3), false},
      {with(R"("name": "v")", std::string("\"name\": \"v\0\"", 12)), false},
      {"[1, 2]", false},
      {"", false},
  };
  Tally tally;
  int must = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    compare(variants[i].text, "variant" + std::to_string(i) + ".json", variants[i].must_accept, tally);
    must += variants[i].must_accept;
  }
  CHECK(tally.accepted >= must);
  CHECK(tally.refused >= 30);
  CHECK(tally.accepted + tally.refused + tally.fell_back == static_cast<int>(variants.size()));
  MESSAGE("variants: " << variants.size() << " (" << tally.accepted << " read the same, " << tally.refused << " refused by both, "
                       << tally.fell_back << " read by the DOM loader alone)");
}
