#include "collkit/plan/io.h"

#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/provenance_json.h"
#include "collkit/plan/algorithm.h"

namespace collkit::plan {

using nlohmann::json;
using collkit::json::Cursor;

namespace {

json chunk_json(const ChunkRef& c) { return json::array({to_string(c.buf), c.chunk}); }

json op_json(const Op& o) {
  json j{{"op", to_string(o.type)}};
  if (o.type == OpType::Send || o.type == OpType::Recv || o.type == OpType::RecvReduce) j["peer"] = o.peer;
  if (o.type != OpType::Recv) j["src"] = chunk_json(o.src);
  if (o.type != OpType::Send) j["dst"] = chunk_json(o.dst);
  if (o.count != 1) j["count"] = o.count;
  if (o.channel != 0) j["ch"] = o.channel;
  if (o.num_deps() > 0) {
    json d = json::array();
    for (std::size_t i = 0; i < o.num_deps(); ++i) d.push_back(o.deps[i]);
    j["deps"] = std::move(d);
  }
  return j;
}

OpType read_op_type(const Cursor& c) {
  std::string s = c.string();
  for (OpType t : {OpType::Send, OpType::Recv, OpType::RecvReduce, OpType::Copy, OpType::Reduce})
    if (to_string(t) == s) return t;
  c.fail("unknown op \"" + s + "\" (expected send, recv, recv_reduce, copy or reduce)");
}

ChunkRef read_chunk(const Cursor& c) {
  c.expect_array();
  if (c.size() != 2) c.fail("expected [buffer, chunk]");
  std::string b = c[0].string();
  ChunkRef r;
  if (b == "input") r.buf = Buf::Input;
  else if (b == "output") r.buf = Buf::Output;
  else if (b == "scratch") r.buf = Buf::Scratch;
  else c[0].fail("unknown buffer \"" + b + "\" (expected input, output or scratch)");
  auto chunk = c[1].integer();
  if (chunk < 0 || chunk > 0xfffffffe) c[1].fail("chunk index out of range");
  r.chunk = static_cast<std::uint32_t>(chunk);
  return r;
}

Op read_op(const Cursor& c, int nranks, std::size_t index) {
  c.expect_keys({"op", "peer", "src", "dst", "count", "ch", "deps"});
  Op o;
  o.type = read_op_type(c.at("op"));
  bool p2p = o.type == OpType::Send || o.type == OpType::Recv || o.type == OpType::RecvReduce;
  if (p2p) {
    auto peer = c.at("peer");
    auto v = peer.integer();
    if (v < 0 || v >= nranks) peer.fail("peer " + std::to_string(v) + " is not a rank of " + std::to_string(nranks));
    o.peer = static_cast<std::int32_t>(v);
  } else if (c.find("peer")) {
    c.at("peer").fail("a " + std::string(to_string(o.type)) + " has no peer");
  }
  if (o.type != OpType::Recv) o.src = read_chunk(c.at("src"));
  if (o.type != OpType::Send) o.dst = read_chunk(c.at("dst"));
  if (auto n = c.find("count")) {
    auto v = n->integer();
    if (v < 1 || v > 0xffffffff) n->fail("must be >= 1, got " + std::to_string(v));
    o.count = static_cast<std::uint32_t>(v);
  }
  if (auto ch = c.find("ch")) {
    auto v = ch->integer();
    if (v < 0 || v > 0xffff) ch->fail("channel out of range");
    o.channel = static_cast<std::uint16_t>(v);
  }
  if (auto deps = c.find("deps")) {
    if (deps->size() > kMaxDeps) deps->fail("at most " + std::to_string(kMaxDeps) + " dependencies");
    for (std::size_t i = 0; i < deps->size(); ++i) {
      auto d = (*deps)[i].integer();
      if (d < 0 || static_cast<std::size_t>(d) >= index)
        (*deps)[i].fail("dependency " + std::to_string(d) + " is not an earlier op of this rank");
      o.depend_on(static_cast<std::uint32_t>(d));
    }
  }
  return o;
}

std::uint32_t read_chunks(const Cursor& c, const char* key, bool allow_zero) {
  auto f = c.at(key);
  auto v = f.integer();
  if (v < (allow_zero ? 0 : 1) || v > 0xffffffff) f.fail(std::string("must be ") + (allow_zero ? ">= 0" : ">= 1") + ", got " + std::to_string(v));
  return static_cast<std::uint32_t>(v);
}

}  // namespace

std::string to_json(const Plan& plan) {
  const PlanInfo& i = plan.info();
  json j;
  j["schema"] = "collkit.plan/" + std::to_string(kPlanSchemaMajor);
  j["collective"] = to_string(i.req.coll);
  j["bytes"] = i.req.bytes;
  j["nranks"] = i.req.nranks;
  if (facts(i.req.coll).has_root) j["root"] = i.req.root;
  if (i.req.elem_bytes != 1) j["elem_bytes"] = i.req.elem_bytes;
  j["algorithm"] = plan.is_explicit() ? std::string("explicit") : i.algorithm;
  if (plan.is_explicit() && i.algorithm != "explicit" && !i.algorithm.empty()) j["made_by"] = i.algorithm;
  j["params"] = i.params;
  j["chunks"] = {{"input", i.in_chunks}, {"output", i.out_chunks}, {"scratch", i.scratch_chunks}};
  j["scratch_bytes"] = i.scratch_bytes;
  j["channels"] = i.channels;
  if (!i.topo_name.empty() || !i.topo_fingerprint.empty())
    j["topology"] = {{"name", i.topo_name}, {"fingerprint", i.topo_fingerprint}};
  if (i.predicted_us > 0) j["predicted_us"] = i.predicted_us;
  if (i.bound_us > 0) j["bound_us"] = i.bound_us;
  if (!i.channel_nics.empty()) j["channel_nics"] = i.channel_nics;
  if (!i.channel_paths.empty()) {
    json paths = json::array();
    for (ChannelPath c : i.channel_paths) paths.push_back(std::string(to_string(c)));
    j["channel_paths"] = std::move(paths);
  }
  std::string out = j.dump(2);
  if (!plan.is_explicit()) return append_provenance(out + "\n", 2);
  // Programs one op per line: big explicit plans stay readable and diffable.
  out.pop_back();  // the closing brace
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  out += ",\n  \"programs\": [\n";
  for (int r = 0; r < plan.nranks(); ++r) {
    auto prog = plan.program(r);
    out += "    [\n";
    for (std::size_t k = 0; k < prog.size(); ++k) out += "      " + op_json(prog[k]).dump() + (k + 1 < prog.size() ? ",\n" : "\n");
    out += r + 1 < plan.nranks() ? "    ],\n" : "    ]\n";
  }
  out += "  ]\n}\n";
  return append_provenance(std::move(out), 2);
}

std::unique_ptr<Plan> from_json(const std::string& text, const std::string& file) {
  json doc = collkit::json::parse(file, text);
  Cursor root(file, doc);
  root.expect_schema("plan", kPlanSchemaMajor);
  root.expect_keys({"schema", "collective", "bytes", "nranks", "root", "elem_bytes", "algorithm", "made_by", "params", "chunks",
                    "scratch_bytes", "channels", "topology", "predicted_us", "bound_us", "channel_nics", "channel_paths", "programs",
                    "provenance"});
  PlanInfo info;
  auto coll = root.at("collective");
  auto c = parse_collective(coll.string());
  if (!c) coll.fail("unknown collective \"" + coll.string() + "\" (expected allreduce, reducescatter, allgather, alltoall, broadcast or reduce)");
  info.req.coll = *c;
  auto bytes = root.at("bytes");
  if (bytes.integer() < 0) bytes.fail("must be >= 0");
  info.req.bytes = static_cast<std::uint64_t>(bytes.integer());
  auto nranks = root.at("nranks");
  if (nranks.integer() < 1 || nranks.integer() > kMaxPlanRanks)
    nranks.fail("must be between 1 and " + std::to_string(kMaxPlanRanks) + ", got " + std::to_string(nranks.integer()));
  info.req.nranks = static_cast<int>(nranks.integer());
  if (auto r = root.find("root")) {
    // Checked before the narrowing to int: 4294967297 once verified as root 1.
    if (r->integer() < 0 || r->integer() >= info.req.nranks)
      r->fail("root " + std::to_string(r->integer()) + " is not a rank of " + std::to_string(info.req.nranks));
    info.req.root = static_cast<int>(r->integer());
  }
  if (auto e = root.find("elem_bytes")) {
    if (e->integer() < 1 || e->integer() > 1 << 16) e->fail("must be between 1 and 65536, got " + std::to_string(e->integer()));
    info.req.elem_bytes = static_cast<std::uint32_t>(e->integer());
  }
  try {
    check(info.req);
  } catch (const InputError& e) {
    root.fail(e.what());
  }
  info.algorithm = root.at("algorithm").string();
  if (auto m = root.find("made_by")) info.algorithm = info.algorithm == "explicit" ? m->string() : info.algorithm;
  if (auto p = root.find("params")) {
    p->expect_object();
    for (auto& [key, val] : p->value().items()) info.params[key] = p->at(key).string();
  }
  auto chunks = root.at("chunks");
  chunks.expect_keys({"input", "output", "scratch"});
  info.in_chunks = read_chunks(chunks, "input", false);
  info.out_chunks = read_chunks(chunks, "output", false);
  info.scratch_chunks = read_chunks(chunks, "scratch", true);
  if (auto s = root.find("scratch_bytes")) {
    info.scratch_bytes = static_cast<std::uint64_t>(s->non_negative_number());
    if (info.scratch_bytes % info.req.elem_bytes != 0)
      s->fail(std::to_string(info.scratch_bytes) + " bytes are not a whole number of " + std::to_string(info.req.elem_bytes) +
              "-byte elements");
  }
  auto ch = root.at("channels");
  if (ch.integer() < 1 || ch.integer() > kMaxPlanChannels) ch.fail("must be between 1 and " + std::to_string(kMaxPlanChannels));
  info.channels = static_cast<std::uint16_t>(ch.integer());
  if (auto t = root.find("topology")) {
    t->expect_keys({"name", "fingerprint"});
    info.topo_name = t->at("name").string();
    info.topo_fingerprint = t->at("fingerprint").string();
  }
  if (auto p = root.find("predicted_us")) info.predicted_us = p->non_negative_number();
  if (auto b = root.find("bound_us")) info.bound_us = b->non_negative_number();
  if (auto n = root.find("channel_nics")) {
    n->expect_array();
    if (n->size() < 1 || n->size() > kMaxPlanChannels) n->fail("must hold 1 to " + std::to_string(kMaxPlanChannels) + " NIC numbers");
    for (std::size_t k = 0; k < n->size(); ++k) {
      Cursor v = (*n)[k];
      if (v.integer() < -1 || v.integer() > kMaxChannelNic)
        v.fail("a NIC number is -1 (the route's) or 0 to " + std::to_string(kMaxChannelNic) + ", got " + std::to_string(v.integer()));
      info.channel_nics.push_back(static_cast<std::int16_t>(v.integer()));
    }
  }
  if (auto n = root.find("channel_paths")) {
    n->expect_array();
    if (n->size() < 1 || n->size() > kMaxPlanChannels) n->fail("must hold 1 to " + std::to_string(kMaxPlanChannels) + " paths");
    for (std::size_t k = 0; k < n->size(); ++k) {
      Cursor v = (*n)[k];
      std::optional<ChannelPath> path = parse_channel_path(v.string());
      if (!path) v.fail("a channel path is \"route\" or \"host\", got \"" + v.string() + "\"");
      info.channel_paths.push_back(*path);
    }
  }

  if (auto programs = root.find("programs")) {
    if (programs->size() != static_cast<std::size_t>(info.req.nranks))
      programs->fail(std::to_string(programs->size()) + " programs for " + std::to_string(info.req.nranks) + " ranks");
    std::vector<std::vector<Op>> progs(programs->size());
    for (std::size_t r = 0; r < programs->size(); ++r) {
      auto prog = (*programs)[r];
      for (std::size_t k = 0; k < prog.size(); ++k) progs[r].push_back(read_op(prog[k], info.req.nranks, k));
    }
    if (root.at("algorithm").string() != "explicit") root.at("algorithm").fail("a plan with programs must say \"explicit\"");
    return std::make_unique<ExplicitPlan>(std::move(info), std::move(progs));
  }
  auto algo_name = root.at("algorithm");
  if (algo_name.string() == "explicit") root.fail("missing field \"programs\" (the plan says it is explicit)");
  const Algorithm* algo = nullptr;
  try {
    algo = &algorithm(algo_name.string());
  } catch (const InputError& e) {
    algo_name.fail(e.what());
  }
  return std::make_unique<GeneratedPlan>(std::move(info), *algo);
}

std::unique_ptr<Plan> load(const std::string& path) { return from_json(read_file(path), path); }

void save(const Plan& plan, const std::string& path) { write_file_atomic(path, to_json(plan)); }

}  // namespace collkit::plan
