// Node presets: configs/nodes/<name>.json in the templated format of docs/presets.md.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "collkit/config.h"
#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/json_cursor.h"
#include "collkit/topo/synth.h"
#include "template.h"

namespace collkit::topo {

namespace fs = std::filesystem;
using collkit::json::Cursor;

std::string config_dir() {
  if (const char* env = std::getenv("COLLKIT_CONFIGS"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // build/bin/coll-topo -> <source>/configs when run from a build tree beside the sources;
    // <prefix>/bin/coll-topo -> <prefix>/share/collkit/configs when installed.
    for (fs::path candidate : {exe.parent_path() / "../share/collkit/configs", exe.parent_path() / "../../configs"})
      if (fs::is_directory(candidate / "nodes", ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return COLLKIT_SOURCE_DIR "/configs";
}

Spec parse_spec(std::string_view text) {
  Spec s;
  auto colon = text.find(':');
  s.name = std::string(text.substr(0, colon));
  if (s.name.empty()) throw InputError("invalid spec \"" + std::string(text) + "\": empty name");
  if (colon == std::string_view::npos) return s;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view kv = rest.substr(0, comma);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == kv.size())
      throw InputError("invalid spec \"" + std::string(text) + "\": expected key=value, got \"" + std::string(kv) + "\"");
    auto [it, fresh] = s.params.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    if (!fresh) throw InputError("invalid spec \"" + std::string(text) + "\": \"" + it->first + "\" given twice");
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return s;
}

std::vector<std::string> list_node_presets() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(fs::path(config_dir()) / "nodes", ec))
    if (entry.path().extension() == ".json") out.push_back(entry.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Applies templates to one entry of "vertices" or "links": its loops, its condition, and the
// expansion of its strings.
class Entry {
 public:
  Entry(const Cursor& c, const tmpl::Env& env) : c_(c) {
    c_.expect_object();
    std::vector<tmpl::Loop> loops;
    if (auto f = c_.find("for")) {
      try {
        loops = tmpl::parse_loops(f->string());
      } catch (const std::invalid_argument& e) {
        f->fail(e.what());
      }
    }
    try {
      envs_ = tmpl::bindings(loops, env);
    } catch (const std::invalid_argument& e) {
      c_.at("for").fail(e.what());
    }
    if (auto cond = c_.find("if")) {
      std::vector<tmpl::Env> kept;
      for (auto& e : envs_) {
        try {
          if (tmpl::eval(cond->string(), e) != 0) kept.push_back(e);
        } catch (const std::invalid_argument& ex) {
          cond->fail(ex.what());
        }
      }
      envs_ = std::move(kept);
    }
  }

  const std::vector<tmpl::Env>& envs() const { return envs_; }

  std::string str(const Cursor& f, const tmpl::Env& env) const {
    try {
      return tmpl::expand(f.string(), env);
    } catch (const std::invalid_argument& e) {
      f.fail(e.what());
    }
  }
  std::string str(std::string_view key, const tmpl::Env& env) const { return str(c_.at(key), env); }

  // An integer field: a JSON integer or a string holding a template.
  std::int64_t integer(const Cursor& f, const tmpl::Env& env) const {
    if (f.value().is_string()) {
      std::string s = str(f, env);
      try {
        std::size_t used = 0;
        long long v = std::stoll(s, &used);
        if (used == s.size()) return v;
      } catch (const std::exception&) {
      }
      f.fail("expected an integer, got \"" + s + "\"");
    }
    return f.integer();
  }

  const Cursor& cursor() const { return c_; }

 private:
  Cursor c_;
  std::vector<tmpl::Env> envs_;
};

}  // namespace

NodePreset parse_node_preset(const std::string& text, const std::string& file,
                             const std::map<std::string, std::string>& params) {
  nlohmann::json doc = collkit::json::parse(file, text);
  Cursor root(file, doc);
  root.expect_schema("node", 1);
  root.expect_keys({"schema", "name", "description", "sources", "params", "vertices", "links", "ranks"});
  NodePreset p;
  p.name = root.at("name").string();
  if (auto d = root.find("description")) p.description = d->string();
  if (auto s = root.find("sources"))
    for (std::size_t i = 0; i < s->size(); ++i) p.sources.push_back((*s)[i].string());

  tmpl::Env env;
  if (auto ps = root.find("params")) {
    ps->expect_object();
    for (auto& [key, val] : ps->value().items()) env[key] = ps->at(key).integer();
  }
  for (auto& [key, val] : params) {
    if (!env.count(key)) {
      std::string known;
      for (auto& [k, v] : env) known += (known.empty() ? "" : ", ") + k;
      throw InputError(file + ": preset " + p.name + " has no parameter \"" + key + "\"" +
                       (known.empty() ? " (it takes none)" : " (it takes: " + known + ")"));
    }
    try {
      std::size_t used = 0;
      env[key] = std::stoll(val, &used);
      if (used != val.size()) throw std::invalid_argument(val);
    } catch (const std::exception&) {
      throw InputError(file + ": parameter " + key + "=" + val + ": expected an integer");
    }
  }

  Topology& t = p.node;
  t.name = p.name;
  auto vertices = root.at("vertices");
  for (std::size_t i = 0; i < vertices.size(); ++i) {
    vertices[i].expect_keys({"id", "for", "if", "kind", "label", "busid", "numa", "index", "local_bw_gbps", "port_gbps", "attrs"});
    Entry e(vertices[i], env);
    const Cursor& c = e.cursor();
    for (const auto& b : e.envs()) {
      Vertex v;
      v.id = e.str("id", b);
      auto kc = c.at("kind");
      auto kind = parse_vertex_kind(kc.string());
      if (!kind) kc.fail("unknown vertex kind \"" + kc.string() + "\"");
      v.kind = *kind;
      if (auto f = c.find("label")) v.label = e.str(*f, b);
      if (auto f = c.find("busid")) v.busid = e.str(*f, b);
      if (auto f = c.find("numa")) v.numa = static_cast<int>(e.integer(*f, b));
      if (auto f = c.find("index")) v.index = static_cast<int>(e.integer(*f, b));
      if (auto f = c.find("local_bw_gbps")) v.local_bw_gbps = f->non_negative_number();
      if (auto f = c.find("port_gbps")) v.port_gbps = f->non_negative_number();
      if (auto f = c.find("attrs")) {
        f->expect_object();
        for (auto& [key, val] : f->value().items()) v.attrs[key] = e.str(f->at(key), b);
      }
      if (t.find(v.id)) c.at("id").fail("duplicate id \"" + v.id + "\"");
      t.add_vertex(std::move(v));
    }
  }

  auto links = root.at("links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    links[i].expect_keys({"a", "b", "for", "if", "type", "bw_gbps", "latency_us", "lanes", "source"});
    Entry e(links[i], env);
    const Cursor& c = e.cursor();
    for (const auto& b : e.envs()) {
      Link l;
      auto endpoint = [&](const char* key) {
        std::string id = e.str(key, b);
        auto v = t.find(id);
        if (!v) c.at(key).fail("unknown vertex \"" + id + "\"");
        return *v;
      };
      l.a = endpoint("a");
      l.b = endpoint("b");
      if (l.a == l.b) c.at("b").fail("a link must join two different vertices, both ends are \"" + t.vertex(l.a).id + "\"");
      auto tc = c.at("type");
      auto type = parse_link_type(tc.string());
      if (!type) tc.fail("unknown link type \"" + tc.string() + "\"");
      l.type = *type;
      l.bw_gbps = c.at("bw_gbps").positive_number();
      l.latency_us = c.at("latency_us").non_negative_number();
      if (auto f = c.find("lanes")) {
        auto n = e.integer(*f, b);
        if (n < 1) f->fail("must be >= 1, got " + std::to_string(n));
        l.lanes = static_cast<int>(n);
      }
      if (auto f = c.find("source")) (void)f->string();
      t.add_link(l);
    }
  }

  auto ranks = root.at("ranks");
  auto add_rank = [&](const Cursor& f, const std::string& id) {
    auto v = t.find(id);
    if (!v) f.fail("unknown vertex \"" + id + "\"");
    t.add_rank(*v);
  };
  if (ranks.value().is_array()) {
    for (std::size_t i = 0; i < ranks.size(); ++i) add_rank(ranks[i], ranks[i].string());
  } else {
    ranks.expect_keys({"id", "for", "if"});
    Entry e(ranks, env);
    for (const auto& b : e.envs()) add_rank(ranks.at("id"), e.str("id", b));
  }
  if (t.num_ranks() == 0) ranks.fail("the preset has no ranks");
  try {
    t.check_connected();
  } catch (const InputError& ex) {
    ranks.fail(std::string("rank set is not connected: ") + ex.what());
  }
  return p;
}

NodePreset load_node_preset(std::string_view spec_text) {
  Spec spec = parse_spec(spec_text);
  // A preset file of one's own, as --model takes one: a path (with a '/') or a NAME.json.
  bool is_path = spec.name.find('/') != std::string::npos || (spec.name.size() > 5 && spec.name.ends_with(".json"));
  if (is_path) return parse_node_preset(read_file(spec.name), spec.name, spec.params);
  fs::path path = fs::path(config_dir()) / "nodes" / (spec.name + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    std::string known;
    for (auto& n : list_node_presets()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown node preset \"" + spec.name + "\" (known: " + (known.empty() ? "none found in " + config_dir() + "/nodes" : known) + ")");
  }
  NodePreset p = parse_node_preset(read_file(path.string()), path.filename().string(), spec.params);
  if (p.name != spec.name)
    throw InputError(path.filename().string() + ": /name: \"" + p.name + "\" differs from the file name \"" + spec.name + "\"");
  return p;
}

}  // namespace collkit::topo
