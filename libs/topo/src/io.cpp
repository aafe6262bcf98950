#include "collkit/topo/io.h"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

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
    if (c.cache_bytes > 0) {
      j["calibration"]["cache_bytes"] = c.cache_bytes;
      j["calibration"]["beyond_cache_factor"] = c.beyond_cache_factor;
    }
    if (c.cores > 0) j["calibration"]["cores"] = c.cores;
    if (c.core_cache_bytes > 0) {
      j["calibration"]["core_cache_bytes"] = c.core_cache_bytes;
      j["calibration"]["core_cache_factor"] = c.core_cache_factor;
    }
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
  c.expect_keys({"per_message_us", "reduce_gbps", "source", "classes", "cache_bytes", "beyond_cache_factor", "cores", "core_cache_bytes",
                 "core_cache_factor"});
  Calibration cal;
  cal.per_message_us = c.at("per_message_us").non_negative_number();
  cal.reduce_gbps = c.at("reduce_gbps").non_negative_number();
  if (auto x = c.find("cache_bytes")) {
    std::int64_t b = x->integer();
    if (b < 0) x->fail("expected a whole number of bytes >= 0, got " + std::to_string(b));
    cal.cache_bytes = static_cast<std::uint64_t>(b);
  }
  if (auto x = c.find("beyond_cache_factor")) cal.beyond_cache_factor = x->positive_number();
  if (auto x = c.find("cores")) {
    std::int64_t n = x->integer();
    if (n < 1 || n > 1'000'000) x->fail("expected a whole number of cores, 1 to 1000000, got " + std::to_string(n));
    cal.cores = static_cast<int>(n);
  }
  if (auto x = c.find("core_cache_bytes")) {
    std::int64_t b = x->integer();
    if (b < 0) x->fail("expected a whole number of bytes >= 0, got " + std::to_string(b));
    cal.core_cache_bytes = static_cast<std::uint64_t>(b);
  }
  if (auto x = c.find("core_cache_factor")) cal.core_cache_factor = x->positive_number();
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

namespace {

// The root's fields other than "vertices" and "links", read the same way by both loaders.
void read_head(const collkit::json::Cursor& root, Topology& t) {
  root.expect_schema("topology", kTopologySchemaMajor);
  root.expect_keys({"schema", "name", "source", "fingerprint", "notes", "vertices", "links", "ranks", "calibration", "provenance"});
  if (auto n = root.find("name")) t.name = n->string();
  if (auto s = root.find("source")) t.source = s->string();
  if (auto notes = root.find("notes"))
    for (std::size_t i = 0; i < notes->size(); ++i) t.notes.push_back((*notes)[i].string());
}

void read_tail(const collkit::json::Cursor& root, Topology& t) {
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
}

// A link as the fast path reads it, before its ends are looked up (files list links before
// vertices: to_json writes the root's keys sorted).
struct RawLink {
  std::string a, b;
  Link link;
};

// nlohmann SAX handler for the fast path. "vertices" and "links" at the root are read straight
// into Vertex and RawLink values; everything else at the root is built into a small DOM (`rest`)
// that read_head and read_tail read as the DOM loader does. Anything the DOM loader would refuse,
// or that this handler does not mirror exactly (a repeated key in a vertex or link, a float where
// an integer goes), stops the parse: the caller then falls back to the DOM loader for its error.
class FastHandler {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  json rest;
  std::vector<Vertex> vertices;
  std::vector<RawLink> links;
  bool seen_vertices = false, seen_links = false;

  bool null() { return section_ == Section::None && put(json(nullptr), false); }
  bool boolean(bool b) { return section_ == Section::None && put(json(b), false); }
  bool binary(binary_t&) { return false; }

  bool number_integer(number_integer_t i) {
    if (section_ == Section::None) return put(json(i), false);
    if (depth_ != 2) return false;
    if (integer_field()) return set_integer(i);
    return set_number(static_cast<double>(i));
  }
  bool number_unsigned(number_unsigned_t u) {
    if (section_ == Section::None) return put(json(u), false);
    if (depth_ != 2) return false;
    if (integer_field()) {
      if (u > static_cast<number_unsigned_t>(INT64_MAX)) return false;
      return set_integer(static_cast<std::int64_t>(u));
    }
    return set_number(static_cast<double>(u));
  }
  bool number_float(number_float_t d, const string_t&) {
    if (section_ == Section::None) return put(json(d), false);
    if (depth_ != 2 || integer_field() || !std::isfinite(d)) return false;
    return set_number(d);
  }

  bool string(string_t& s) {
    if (section_ == Section::None) return put(json(s), false);
    if (depth_ == 3) {  // a vertex's attrs; a repeated key keeps the last value, as the DOM does
      v_.attrs[attr_key_] = s;
      return true;
    }
    if (depth_ != 2) return false;
    if (section_ == Section::Vertices) {
      switch (field_) {
        case kId: v_.id = s; return !s.empty();
        case kKind: {
          auto k = parse_vertex_kind(s);
          if (!k) return false;
          v_.kind = *k;
          return true;
        }
        case kHost: v_.host = s; return true;
        case kLabel: v_.label = s; return true;
        case kBusid: v_.busid = s; return true;
        default: return false;
      }
    }
    switch (field_) {
      case kA: l_.a = s; return true;
      case kB: l_.b = s; return true;
      case kType: {
        auto lt = parse_link_type(s);
        if (!lt) return false;
        l_.link.type = *lt;
        return true;
      }
      default: return false;
    }
  }

  bool start_object(std::size_t) {
    if (section_ == Section::None) return put(json::object(), true);
    if (depth_ == 1) {
      depth_ = 2;
      seen_ = 0;
      if (section_ == Section::Vertices) v_ = Vertex();
      else l_ = RawLink();
      return true;
    }
    if (depth_ == 2 && section_ == Section::Vertices && field_ == kAttrs) {
      depth_ = 3;
      return true;
    }
    return false;
  }

  bool key(string_t& k) {
    if (section_ == Section::None) {
      if (stack_.size() == 1 && (k == "vertices" || k == "links")) {
        bool& seen = k == "vertices" ? seen_vertices : seen_links;
        if (seen) return false;
        seen = true;
        section_ = k == "vertices" ? Section::Vertices : Section::Links;
        depth_ = 0;
        return true;
      }
      key_ = k;
      return true;
    }
    if (depth_ == 3) {
      attr_key_ = k;
      return true;
    }
    if (depth_ != 2) return false;
    field_ = field_of(k);
    if (field_ < 0 || (seen_ & (1u << field_))) return false;
    seen_ |= 1u << field_;
    return true;
  }

  bool end_object() {
    if (section_ == Section::None) {
      stack_.pop_back();
      return true;
    }
    if (depth_ == 3) {
      depth_ = 2;
      return true;
    }
    if (depth_ != 2) return false;
    depth_ = 1;
    if (section_ == Section::Vertices) {
      if (!(seen_ & (1u << kId)) || !(seen_ & (1u << kKind))) return false;
      vertices.push_back(std::move(v_));
      return true;
    }
    const unsigned required = (1u << kA) | (1u << kB) | (1u << kType) | (1u << kBw) | (1u << kLatency);
    if ((seen_ & required) != required) return false;
    links.push_back(std::move(l_));
    return true;
  }

  bool start_array(std::size_t) {
    if (section_ == Section::None) return put(json::array(), true);
    if (depth_ != 0) return false;
    depth_ = 1;
    return true;
  }

  bool end_array() {
    if (section_ == Section::None) {
      stack_.pop_back();
      return true;
    }
    if (depth_ != 1) return false;
    section_ = Section::None;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  enum class Section { None, Vertices, Links };
  // Vertex fields, then link fields (bit positions in seen_).
  enum Field { kId, kKind, kHost, kLabel, kBusid, kNuma, kIndex, kLocalBw, kPortBw, kAttrs, kA, kB, kType, kBw, kLatency, kLanes };

  int field_of(const string_t& k) const {
    static const std::pair<const char*, Field> vertex_fields[] = {{"id", kId},
                                                                  {"kind", kKind},
                                                                  {"host", kHost},
                                                                  {"label", kLabel},
                                                                  {"busid", kBusid},
                                                                  {"numa", kNuma},
                                                                  {"index", kIndex},
                                                                  {"local_bw_gbps", kLocalBw},
                                                                  {"port_gbps", kPortBw},
                                                                  {"attrs", kAttrs}};
    static const std::pair<const char*, Field> link_fields[] = {
        {"a", kA}, {"b", kB}, {"type", kType}, {"bw_gbps", kBw}, {"latency_us", kLatency}, {"lanes", kLanes}};
    if (section_ == Section::Vertices) {
      for (auto& [name, f] : vertex_fields)
        if (k == name) return f;
    } else {
      for (auto& [name, f] : link_fields)
        if (k == name) return f;
    }
    return -1;
  }

  bool integer_field() const { return field_ == kNuma || field_ == kIndex || field_ == kLanes; }

  bool set_integer(std::int64_t n) {
    switch (field_) {
      case kNuma: v_.numa = static_cast<int>(n); return true;
      case kIndex: v_.index = static_cast<int>(n); return true;
      case kLanes:
        if (n < 1) return false;
        l_.link.lanes = static_cast<int>(n);
        return true;
      default: return false;
    }
  }

  bool set_number(double d) {
    switch (field_) {
      case kLocalBw: v_.local_bw_gbps = d; return d >= 0;
      case kPortBw: v_.port_gbps = d; return d >= 0;
      case kBw: l_.link.bw_gbps = d; return d > 0;
      case kLatency: l_.link.latency_us = d; return d >= 0;
      default: return false;
    }
  }

  // Adds a value to `rest` where the DOM parser would put it (a repeated key keeps the last value).
  bool put(json&& v, bool container) {
    json* slot;
    if (stack_.empty()) {
      rest = std::move(v);
      slot = &rest;
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
      slot = &stack_.back()->back();
    } else {
      slot = &(*stack_.back())[key_];
      *slot = std::move(v);
    }
    if (container) stack_.push_back(slot);
    return true;
  }

  std::vector<json*> stack_;
  std::string key_, attr_key_;
  Section section_ = Section::None;
  int depth_ = 0;  // in a section: 0 before its array, 1 in it, 2 in an element, 3 in a vertex's attrs
  int field_ = -1;
  unsigned seen_ = 0;
  Vertex v_;
  RawLink l_;
};

}  // namespace

std::optional<Topology> from_json_fast(const std::string& text, const std::string& file) {
  if (text.find('\0') != std::string::npos) return std::nullopt;
  FastHandler h;
  if (!json::sax_parse(text, &h) || !h.seen_vertices || !h.seen_links) return std::nullopt;
  try {
    collkit::json::Cursor root(file, h.rest);
    Topology t;
    read_head(root, t);
    for (Vertex& v : h.vertices) {
      if (t.find(v.id)) return std::nullopt;
      t.add_vertex(std::move(v));
    }
    for (RawLink& r : h.links) {
      auto a = t.find(r.a), b = t.find(r.b);
      if (!a || !b || *a == *b) return std::nullopt;
      r.link.a = *a;
      r.link.b = *b;
      t.add_link(r.link);
    }
    read_tail(root, t);
    return t;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

Topology from_json_dom(const std::string& text, const std::string& file) {
  json doc = collkit::json::parse(file, text);
  collkit::json::Cursor root(file, doc);
  Topology t;
  read_head(root, t);

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

  read_tail(root, t);
  return t;
}

Topology from_json(const std::string& text, const std::string& file) {
  if (auto t = from_json_fast(text, file)) return std::move(*t);
  return from_json_dom(text, file);
}

Topology load(const std::string& path) { return from_json(read_file(path), path); }

void save(const Topology& t, const std::string& path) { write_file_atomic(path, to_json(t)); }

}  // namespace collkit::topo
