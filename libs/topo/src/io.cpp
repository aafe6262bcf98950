#include "collkit/topo/io.h"

#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/provenance_json.h"

namespace collkit::topo {

using nlohmann::json;

std::string to_json(const Topology& t) {
  json j;
  j["schema"] = "collkit.topology/" + std::to_string(kTopologySchemaMajor);
  j["name"] = t.name;
  j["source"] = t.source;
  j["fingerprint"] = t.fingerprint_hex();
  j["notes"] = t.notes;
  json vs = json::array();
  for (const Vertex& v : t.vertices()) {
    json o{{"id", v.id}, {"kind", to_string(v.kind)}};
    if (!v.host.empty()) o["host"] = v.host;
    if (!v.label.empty()) o["label"] = v.label;
    if (!v.busid.empty()) o["busid"] = v.busid;
    if (v.numa >= 0) o["numa"] = v.numa;
    if (v.index >= 0) o["index"] = v.index;
    if (v.local_bw_gbps > 0) o["local_bw_gbps"] = v.local_bw_gbps;
    if (v.port_gbps > 0) o["port_gbps"] = v.port_gbps;
    if (!v.attrs.empty()) o["attrs"] = v.attrs;
    vs.push_back(std::move(o));
  }
  j["vertices"] = std::move(vs);
  json ls = json::array();
  for (const Link& l : t.links()) {
    json o{{"a", t.vertex(l.a).id},
           {"b", t.vertex(l.b).id},
           {"type", to_string(l.type)},
           {"bw_gbps", l.bw_gbps},
           {"latency_us", l.latency_us}};
    if (l.lanes != 1) o["lanes"] = l.lanes;
    ls.push_back(std::move(o));
  }
  j["links"] = std::move(ls);
  json rs = json::array();
  for (VertexId v : t.rank_vertices()) rs.push_back(t.vertex(v).id);
  j["ranks"] = std::move(rs);
  if (t.calibration) {
    const Calibration& c = *t.calibration;
    json classes = json::array();
    for (const Calibration::PairClass& k : c.classes) {
      json o{{"name", k.name}, {"latency_us", k.latency_us}, {"bw_gbps", k.bw_gbps}, {"residual_percent", k.residual_percent}};
      if (k.shared_bw_gbps > 0) o["shared_bw_gbps"] = k.shared_bw_gbps;
      classes.push_back(std::move(o));
    }
    j["calibration"] = {
        {"per_message_us", c.per_message_us}, {"reduce_gbps", c.reduce_gbps}, {"source", c.source}, {"classes", std::move(classes)}};
  }
  // One vertex, link or rank per line keeps 16k-GPU files diffable and quick to write.
  std::string out = "{\n";
  bool first = true;
  for (auto& [key, value] : j.items()) {
    if (!first) out += ",\n";
    first = false;
    out += "  " + json(key).dump() + ": ";
    if (value.is_array() && !value.empty()) {
      out += "[\n";
      for (std::size_t i = 0; i < value.size(); ++i) {
        out += "    " + value[i].dump();
        out += i + 1 < value.size() ? ",\n" : "\n";
      }
      out += "  ]";
    } else {
      out += value.dump();
    }
  }
  out += "\n}\n";
  return append_provenance(std::move(out), 2);
}

namespace {

Vertex read_vertex(const collkit::json::Cursor& c) {
  c.expect_keys({"id", "kind", "host", "label", "busid", "numa", "index", "local_bw_gbps", "port_gbps", "attrs"});
  Vertex v;
  v.id = c.at("id").string();
  if (v.id.empty()) c.at("id").fail("must not be empty");
  auto kind = c.at("kind");
  auto k = parse_vertex_kind(kind.string());
  if (!k) kind.fail("unknown vertex kind \"" + kind.string() + "\" (expected gpu, cpu, pci_switch, nic, nvswitch, net_switch or host)");
  v.kind = *k;
  if (auto h = c.find("host")) v.host = h->string();
  if (auto x = c.find("label")) v.label = x->string();
  if (auto x = c.find("busid")) v.busid = x->string();
  if (auto x = c.find("numa")) v.numa = static_cast<int>(x->integer());
  if (auto x = c.find("index")) v.index = static_cast<int>(x->integer());
  if (auto x = c.find("local_bw_gbps")) v.local_bw_gbps = x->non_negative_number();
  if (auto x = c.find("port_gbps")) v.port_gbps = x->non_negative_number();
  if (auto x = c.find("attrs")) {
    x->expect_object();
    for (auto& [key, val] : x->value().items()) {
      auto vc = *x->find(key);
      v.attrs[key] = vc.string();
    }
  }
  return v;
}

Calibration read_calibration(const collkit::json::Cursor& c) {
  c.expect_object();
  c.expect_keys({"per_message_us", "reduce_gbps", "source", "classes"});
  Calibration cal;
  cal.per_message_us = c.at("per_message_us").non_negative_number();
  cal.reduce_gbps = c.at("reduce_gbps").non_negative_number();
  if (auto s = c.find("source")) cal.source = s->string();
  if (auto classes = c.find("classes")) {
    for (std::size_t i = 0; i < classes->size(); ++i) {
      auto k = (*classes)[i];
      k.expect_keys({"name", "latency_us", "bw_gbps", "shared_bw_gbps", "residual_percent"});
      Calibration::PairClass pc;
      pc.name = k.at("name").string();
      pc.latency_us = k.at("latency_us").non_negative_number();
      pc.bw_gbps = k.at("bw_gbps").positive_number();
      if (auto x = k.find("shared_bw_gbps")) pc.shared_bw_gbps = x->non_negative_number();
      if (auto x = k.find("residual_percent")) pc.residual_percent = x->non_negative_number();
      cal.classes.push_back(std::move(pc));
    }
  }
  return cal;
}

}  // namespace

Topology from_json(const std::string& text, const std::string& file) {
  json doc = collkit::json::parse(file, text);
  collkit::json::Cursor root(file, doc);
  root.expect_schema("topology", kTopologySchemaMajor);
  root.expect_keys({"schema", "name", "source", "fingerprint", "notes", "vertices", "links", "ranks", "calibration", "provenance"});
  Topology t;
  if (auto n = root.find("name")) t.name = n->string();
  if (auto s = root.find("source")) t.source = s->string();
  if (auto notes = root.find("notes"))
    for (std::size_t i = 0; i < notes->size(); ++i) t.notes.push_back((*notes)[i].string());

  auto vertices = root.at("vertices");
  std::unordered_map<std::string, std::size_t> first_at;
  for (std::size_t i = 0; i < vertices.size(); ++i) {
    auto c = vertices[i];
    Vertex v = read_vertex(c);
    auto [it, fresh] = first_at.emplace(v.id, i);
    if (!fresh) c.at("id").fail("duplicate id \"" + v.id + "\" (first at /vertices/" + std::to_string(it->second) + ")");
    t.add_vertex(std::move(v));
  }

  auto links = root.at("links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    auto c = links[i];
    c.expect_keys({"a", "b", "type", "bw_gbps", "latency_us", "lanes"});
    Link l;
    auto endpoint = [&](const char* key) {
      auto e = c.at(key);
      auto v = t.find(e.string());
      if (!v) e.fail("unknown vertex \"" + e.string() + "\"");
      return *v;
    };
    l.a = endpoint("a");
    l.b = endpoint("b");
    if (l.a == l.b) c.at("b").fail("a link must join two different vertices, both ends are \"" + t.vertex(l.a).id + "\"");
    auto type = c.at("type");
    auto lt = parse_link_type(type.string());
    if (!lt) type.fail("unknown link type \"" + type.string() + "\" (expected nvlink, pcie, xgmi, c2c, smp, infiniband or ethernet)");
    l.type = *lt;
    l.bw_gbps = c.at("bw_gbps").positive_number();
    l.latency_us = c.at("latency_us").non_negative_number();
    if (auto lanes = c.find("lanes")) {
      auto n = lanes->integer();
      if (n < 1) lanes->fail("must be >= 1, got " + std::to_string(n));
      l.lanes = static_cast<int>(n);
    }
    t.add_link(l);
  }

  auto ranks = root.at("ranks");
  if (ranks.size() == 0) ranks.fail("the topology has no ranks");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    auto c = ranks[i];
    auto v = t.find(c.string());
    if (!v) c.fail("unknown vertex \"" + c.string() + "\"");
    t.add_rank(*v);
  }
  try {
    t.check_connected();
  } catch (const InputError& e) {
    ranks.fail(std::string("rank set is not connected: ") + e.what());
  }
  if (auto cal = root.find("calibration")) t.calibration = read_calibration(*cal);
  return t;
}

Topology load(const std::string& path) { return from_json(read_file(path), path); }

void save(const Topology& t, const std::string& path) { write_file_atomic(path, to_json(t)); }

}  // namespace collkit::topo
