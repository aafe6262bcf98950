// Import of NCCL's topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), docs/import-nccl-xml.md.
//
// Two passes: read() walks the XML once in document order, checks every attribute it uses and
// collects plain records (errors then name the first offending element, top to bottom); build()
// turns the records into vertices, links and ranks. Two passes because GPUs and NICs that the
// file carries as bare <pci> elements get the device indices the explicit ones left free, which
// are known only once the whole file has been read.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <pugixml.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/limits.h"
#include "collkit/topo/import.h"
#include "hw_rates.h"

namespace collkit::topo {

namespace {

// One NCCL XML file describes one host (REFERENCE.md §3: NCCL_TOPO_FILE "should describe only
// one node"); hosts are renamed when topologies are merged.
constexpr std::string_view kHost = "node0";

// PCIe link assumed where neither an element nor any element above it states one: Gen3 x16, the
// figure NCCL itself falls back to for an unknown link speed.
constexpr double kDefaultPcieGts = 8.0;
constexpr int kDefaultPcieWidth = 16;

// --- text helpers -------------------------------------------------------------------------------

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && lower(s.substr(0, prefix.size())) == lower(prefix);
}

// Decimal, or hexadecimal after "0x" (NCCL writes gdr, dev, sm in decimal, classes in hex).
std::optional<long long> parse_int(std::string_view s) {
  bool negative = false;
  if (!s.empty() && s.front() == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return negative ? -v : v;
}

std::optional<double> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "0000:1A:00.0" and NVML's "00000000:1a:00.0" name the same device as NCCL's "0000:1a:00.0".
std::string normalize_busid(std::string_view s) {
  std::string b = lower(trim(s));
  auto colon = b.find(':');
  if (colon != std::string::npos && colon > 4 && b.find_first_not_of('0') >= colon - 4) b.erase(0, colon - 4);
  return b;
}

std::string gbps_text(double v) { return fmt::format("{:g}", v); }

// --- records of the first pass ------------------------------------------------------------------

struct CpuRec {
  int numa = -1;
  std::string label;
  std::map<std::string, std::string> attrs;
  std::string vendor;
};

/// An NVLink as one GPU lists it.
enum class NvTarget { Gpu, NvSwitch, Cpu, Unstated };
struct NvlRec {
  std::size_t item;  ///< the listing GPU
  std::string target;
  NvTarget kind;
  int count;
  int line;
};

struct C2cRec {
  std::size_t item;
  double gbps;  ///< bw (MB/s per link) x count / 1000
  int count;
};

struct NetRec {
  std::string name;
  int dev;
  std::optional<long long> speed_mbps;
  std::map<std::string, std::string> attrs;
  int line;
};

enum class Role { Switch, Gpu, Nic };

/// One modelled PCI element (or a <nic> straight under a <cpu>), in document order.
struct Item {
  Role role = Role::Switch;
  std::string busid;      ///< empty for a <nic> without a <pci> around it
  std::string what;       ///< how notes name it: the busid, or "<nic> at line N"
  std::string parent;     ///< vertex id of the cpu or switch above
  std::size_t cpu = 0;    ///< index of the cpu above
  double gts = 0;         ///< PCIe link to the parent
  int width = 0;
  std::string pci_class;  ///< 6 hex digits, empty when the file gives none
  bool bare = false;      ///< a GPU or NIC known only by its PCI class
  // Gpu
  std::optional<int> dev, sm, rank, gdr;
  int line = 0;
  // Nic
  std::vector<NetRec> nets;
};

// --- the reader ---------------------------------------------------------------------------------

class Reader {
 public:
  Reader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  Topology run() {
    read();
    return build();
  }

 private:
  // --- errors and attributes

  int line_at(std::ptrdiff_t offset) const {
    offset = std::clamp<std::ptrdiff_t>(offset, 0, static_cast<std::ptrdiff_t>(text_.size()));
    return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + offset, '\n'));
  }
  int line_of(pugi::xml_node n) const { return line_at(n.offset_debug()); }

  [[noreturn]] void fail_at(int line, const std::string& what) const {
    throw InputError(file_ + ": line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(pugi::xml_node n, const std::string& what) const { fail_at(line_of(n), what); }

  static std::string tag(pugi::xml_node n) { return "<" + std::string(n.name()) + ">"; }

  static std::optional<std::string> text_attr(pugi::xml_node n, const char* name) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) return std::nullopt;
    return std::string(trim(a.value()));
  }

  std::string need_text(pugi::xml_node n, const char* name) const {
    auto v = text_attr(n, name);
    if (!v || v->empty()) fail(n, tag(n) + " has no \"" + name + "\" attribute");
    return *v;
  }

  /// An integer attribute at least `min`; nullopt when absent.
  std::optional<int> int_attr(pugi::xml_node n, const char* name, long long min) const {
    auto s = text_attr(n, name);
    if (!s) return std::nullopt;
    auto v = parse_int(*s);
    if (!v || *v > std::numeric_limits<int>::max() || *v < std::numeric_limits<int>::min())
      fail(n, tag(n) + " attribute \"" + name + "\" is not an integer: \"" + *s + "\"");
    if (*v < min)
      fail(n, tag(n) + " attribute \"" + name + "\" must be >= " + std::to_string(min) + ", got " + std::to_string(*v));
    return static_cast<int>(*v);
  }

  int need_int(pugi::xml_node n, const char* name, long long min) const {
    auto v = int_attr(n, name, min);
    if (!v) fail(n, tag(n) + " has no \"" + name + "\" attribute");
    return *v;
  }

  std::optional<long long> long_attr(pugi::xml_node n, const char* name) const {
    auto s = text_attr(n, name);
    if (!s) return std::nullopt;
    auto v = parse_int(*s);
    if (!v) fail(n, tag(n) + " attribute \"" + name + "\" is not an integer: \"" + *s + "\"");
    return v;
  }

  /// A PCI class code as 6 hex digits: "0x030200" and "0x0302" both give "030200".
  std::optional<std::string> class_attr(pugi::xml_node n, const char* name) const {
    auto s = text_attr(n, name);
    if (!s) return std::nullopt;
    std::string_view v = *s;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) v.remove_prefix(2);
    bool hex = !v.empty() && v.size() <= 6 &&
               std::all_of(v.begin(), v.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
    if (!hex) fail(n, tag(n) + " " + name + " \"" + *s + "\" is not a PCI class code");
    std::string out = lower(v);
    out.resize(6, '0');
    return out;
  }

  /// link_speed "16.0 GT/s PCIe" in GT/s per lane; nullopt when absent, empty or "Unknown".
  std::optional<double> link_speed(pugi::xml_node n) const {
    auto s = text_attr(n, "link_speed");
    if (!s || s->empty() || starts_with_nocase(*s, "unknown")) return std::nullopt;
    std::string_view v = *s;
    auto gt = v.find("GT/s");
    std::optional<double> gts;
    if (gt != std::string_view::npos) {
      std::string_view rest = trim(v.substr(gt + 4));
      if (rest.empty() || rest == "PCIe") gts = parse_number(trim(v.substr(0, gt)));
    }
    if (!gts || *gts <= 0) fail(n, tag(n) + " link_speed \"" + *s + "\" is not of the form \"16.0 GT/s PCIe\"");
    return gts;
  }

  /// link_width in lanes; nullopt when absent or 0 (sysfs says 0 when it does not know).
  std::optional<int> link_width(pugi::xml_node n) const {
    auto w = int_attr(n, "link_width", 0);
    if (w && *w == 0) return std::nullopt;
    return w;
  }

  // --- first pass

  // What XML forbids and pugixml lets through: control bytes other than tab, newline and carriage
  // return, and bytes that are not UTF-8 (overlong forms, surrogates and code points past
  // U+10FFFF included).
  void check_bytes() const {
    const auto* p = reinterpret_cast<const unsigned char*>(text_.data());
    const std::size_t n = text_.size();
    for (std::size_t i = 0; i < n;) {
      const unsigned char c = p[i];
      if (c < 0x80) {
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
          fail_at(line_at(static_cast<std::ptrdiff_t>(i)),
                  fmt::format("control byte 0x{:02x} (XML allows only tab, newline and carriage return)", c));
        ++i;
        continue;
      }
      // The second byte's range rules out overlong forms, surrogates and code points past U+10FFFF.
      std::size_t len = 0;
      unsigned char lo = 0x80, hi = 0xbf;
      if (c >= 0xc2 && c <= 0xdf) len = 2;
      else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
      else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
      bool ok = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
      for (std::size_t k = 2; ok && k < len; ++k) ok = p[i + k] >= 0x80 && p[i + k] <= 0xbf;
      if (!ok) fail_at(line_at(static_cast<std::ptrdiff_t>(i)), fmt::format("invalid UTF-8 (byte 0x{:02x})", c));
      i += len;
    }
  }

  // What pugixml accepts and NCCL's format does not: more than one root element, an attribute
  // given twice in one element, elements nested past limits::kXmlDepth (read_children recurses).
  // Walked without recursion, so a deep file cannot exhaust the stack here either.
  void check_tree() const {
    int depth = 0;
    int roots = 0;
    pugi::xml_node n = doc_.first_child();
    while (n) {
      if (n.type() == pugi::node_element) {
        if (depth == 0 && ++roots == 2) fail(n, "a second root element " + tag(n) + ": the file holds one <system>");
        if (depth >= limits::kXmlDepth)
          fail(n, "elements nested deeper than " + std::to_string(limits::kXmlDepth) + " levels (the limit on XML depth)");
        std::set<std::string_view> names;
        for (pugi::xml_attribute a : n.attributes())
          if (!names.insert(a.name()).second) fail(n, tag(n) + " has the attribute \"" + a.name() + "\" twice");
      }
      if (n.first_child()) {
        n = n.first_child();
        ++depth;
        continue;
      }
      while (n && !n.next_sibling()) {
        n = n.parent();
        --depth;
      }
      if (n) n = n.next_sibling();
    }
  }

  struct Ctx {
    std::string parent;
    std::size_t cpu;
    std::optional<double> gts;  ///< known from this element or one above
    std::optional<int> width;
  };

  void read() {
    check_bytes();
    pugi::xml_parse_result r = doc_.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!r) fail_at(line_at(r.offset), std::string("malformed XML: ") + r.description());
    check_tree();
    pugi::xml_node sys = doc_.document_element();
    if (std::string_view(sys.name()) != "system")
      fail(sys, "the root element is " + tag(sys) + ", expected <system>");
    if (auto version = text_attr(sys, "version"); version && *version != "1")
      fail(sys, "<system> version \"" + *version + "\" is not supported (expected 1)");
    for (pugi::xml_node child : sys.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) == "cpu") read_cpu(child);
      else ignored_elements_.insert(tag(child));
    }
    if (cpus_.empty()) fail(sys, "<system> has no <cpu> element");
  }

  void read_cpu(pugi::xml_node cpu) {
    CpuRec c;
    c.numa = int_attr(cpu, "numaid", -1).value_or(-1);
    for (const char* key : {"arch", "vendor"})
      if (auto v = text_attr(cpu, key); v && !v->empty()) c.attrs[key] = *v;
    for (const char* key : {"familyid", "modelid"})
      if (auto v = int_attr(cpu, key, 0)) c.attrs[key] = std::to_string(*v);
    if (auto v = text_attr(cpu, "host_hash"); v && !v->empty()) host_hashes_.insert(*v);
    c.vendor = c.attrs.count("vendor") ? c.attrs["vendor"] : "";
    for (const char* key : {"arch", "vendor"}) {
      if (!c.attrs.count(key)) continue;
      if (!c.label.empty()) c.label += ' ';
      c.label += c.attrs[key];
    }
    const std::size_t index = cpus_.size();
    cpus_.push_back(std::move(c));
    Ctx ctx{cpu_id(index), index, std::nullopt, std::nullopt};
    read_children(cpu, ctx);
  }

  // Children of a <cpu> or of a PCI switch.
  void read_children(pugi::xml_node parent, const Ctx& ctx) {
    for (pugi::xml_node child : parent.children()) {
      if (child.type() != pugi::node_element) continue;
      std::string_view name = child.name();
      if (name == "pci") {
        read_pci(child, ctx);
      } else if (name == "nic") {
        // A <nic> with no <pci> around it: NCCL's virtual NICs. Its link is the parent's.
        Item item;
        item.role = Role::Nic;
        item.what = "<nic> at line " + std::to_string(line_of(child));
        read_nic(child, item);
        if (item.nets.empty()) continue;
        place(item, ctx, ctx.gts, ctx.width);
        items_.push_back(std::move(item));
      } else {
        ignored_elements_.insert(tag(child));
      }
    }
  }

  // The PCIe link of an item to its parent, inherited from above when the element states none.
  void place(Item& item, const Ctx& ctx, std::optional<double> gts, std::optional<int> width) {
    item.parent = ctx.parent;
    item.cpu = ctx.cpu;
    if (!gts) speed_assumed_.push_back(item.what);
    if (!width) width_assumed_.push_back(item.what);
    item.gts = gts.value_or(kDefaultPcieGts);
    item.width = width.value_or(kDefaultPcieWidth);
  }

  void read_pci(pugi::xml_node pci, const Ctx& ctx) {
    const int line = line_of(pci);
    const std::string busid = normalize_busid(need_text(pci, "busid"));
    if (auto [it, fresh] = busid_lines_.emplace(busid, line); !fresh)
      fail(pci, "<pci> busid \"" + busid + "\" appears twice (first at line " + std::to_string(it->second) + ")");
    const std::string cls = class_attr(pci, "class").value_or("");
    std::optional<double> gts = link_speed(pci);
    std::optional<int> width = link_width(pci);
    if (!gts) gts = ctx.gts;
    if (!width) width = ctx.width;

    pugi::xml_node gpu = pci.child("gpu");
    pugi::xml_node nic = pci.child("nic");
    auto starts = [&](std::string_view prefix) { return cls.compare(0, prefix.size(), prefix) == 0; };
    Item item;
    item.busid = busid;
    item.what = busid;
    item.pci_class = cls;
    item.line = line;
    if (gpu || (!nic && !cls.empty() && starts("03"))) {
      item.role = Role::Gpu;
    } else if (nic || (!cls.empty() && starts("02"))) {
      item.role = Role::Nic;
    } else if (cls.empty() ? static_cast<bool>(pci.child("pci")) : (starts("0604") || (cls != "068000" && pci.child("pci")))) {
      item.role = Role::Switch;
    } else {
      if (cls == "068000") nvswitch_busids_.insert(busid);
      ignored_devices_.push_back(busid + (cls.empty() ? " (no class)" : " (class 0x" + cls + ")"));
      return;
    }
    if (item.role == Role::Switch) {
      place(item, ctx, gts, width);
      items_.push_back(std::move(item));
      read_children(pci, Ctx{switch_id(busid), ctx.cpu, gts, width});
      return;
    }
    for (pugi::xml_node child : pci.children()) {
      if (child.type() != pugi::node_element) continue;
      std::string_view name = child.name();
      if ((item.role == Role::Gpu && name == "gpu" && child == gpu) || (item.role == Role::Nic && name == "nic" && child == nic)) continue;
      ignored_elements_.insert(tag(child));
    }
    if (item.role == Role::Gpu) {
      item.bare = !gpu;
      if (gpu) read_gpu(gpu, item);
      place(item, ctx, gts, width);
      items_.push_back(std::move(item));
      return;
    }
    item.bare = !nic;
    if (nic) {
      read_nic(nic, item);
      if (item.nets.empty()) {
        ignored_devices_.push_back(busid + " (a <nic> with no usable <net>)");
        return;
      }
    }
    place(item, ctx, gts, width);
    items_.push_back(std::move(item));
  }

  void read_gpu(pugi::xml_node gpu, Item& item) {
    item.line = line_of(gpu);
    const int dev = need_int(gpu, "dev", 0);
    if (auto [it, fresh] = gpu_devs_.emplace(dev, item.line); !fresh)
      fail(gpu, "<gpu> dev " + std::to_string(dev) + " appears twice (first at line " + std::to_string(it->second) + ")");
    item.dev = dev;
    item.sm = int_attr(gpu, "sm", 0);
    item.rank = int_attr(gpu, "rank", 0);
    item.gdr = int_attr(gpu, "gdr", 0);
    if (item.rank) {
      if (auto [it, fresh] = gpu_ranks_.emplace(*item.rank, item.line); !fresh)
        fail(gpu, "<gpu> rank " + std::to_string(*item.rank) + " appears twice (first at line " + std::to_string(it->second) + ")");
    }
    const std::size_t index = items_.size();  // the index the item will get
    bool has_nvlink = false;
    for (pugi::xml_node child : gpu.children()) {
      if (child.type() != pugi::node_element) continue;
      std::string_view name = child.name();
      if (name == "nvlink") {
        NvlRec n;
        n.item = index;
        n.line = line_of(child);
        n.target = normalize_busid(need_text(child, "target"));
        n.count = need_int(child, "count", 1);
        n.kind = NvTarget::Unstated;
        if (auto tclass = class_attr(child, "tclass")) {
          if (tclass->compare(0, 2, "03") == 0) n.kind = NvTarget::Gpu;
          else if (*tclass == "068000") n.kind = NvTarget::NvSwitch;
          else if (*tclass == "068001") n.kind = NvTarget::Cpu;
          else
            fail(child, "<nvlink> tclass \"" + *text_attr(child, "tclass") +
                            "\" is not a GPU (0x03...), an NVSwitch (0x068000) or a CPU (0x068001)");
        }
        nvlinks_.push_back(std::move(n));
        has_nvlink = true;
      } else if (name == "c2c") {
        const int bw = need_int(child, "bw", 1);
        const int count = need_int(child, "count", 1);
        c2cs_.push_back(C2cRec{index, static_cast<double>(bw) * count / 1000.0, count});
      } else {
        ignored_elements_.insert(tag(child));
      }
    }
    // NVLink bandwidth is count x the per-link rate of the GPU generation; without the
    // generation any figure would be made up, so refuse rather than guess.
    if (has_nvlink) {
      if (!item.sm)
        fail(gpu, "<gpu> dev " + std::to_string(dev) + " has <nvlink> elements but no \"sm\" attribute: the NVLink bandwidth cannot be derived");
      if (!hw::nvlink_gbps_per_link(*item.sm))
        fail(gpu, "<gpu> dev " + std::to_string(dev) + ": no NVLink rate is known for sm " + std::to_string(*item.sm));
    }
  }

  void read_nic(pugi::xml_node nic, Item& item) {
    for (pugi::xml_node child : nic.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) != "net") {
        ignored_elements_.insert(tag(child));
        continue;
      }
      NetRec net;
      net.line = line_of(child);
      net.name = text_attr(child, "name").value_or("");
      auto dev = int_attr(child, "dev", 0);
      if (!dev) {  // NCCL skips a net without dev too
        nets_without_dev_.push_back((net.name.empty() ? std::string("<net>") : net.name) + " (line " + std::to_string(net.line) + ")");
        continue;
      }
      if (auto [it, fresh] = net_devs_.emplace(*dev, net.line); !fresh)
        fail(child, "<net> dev " + std::to_string(*dev) + " appears twice (first at line " + std::to_string(it->second) + ")");
      net.dev = *dev;
      net.speed_mbps = long_attr(child, "speed");
      if (auto port = int_attr(child, "port", 0)) net.attrs["port"] = std::to_string(*port);
      if (auto guid = text_attr(child, "guid"); guid && !guid->empty()) net.attrs["guid"] = lower(*guid);
      if (auto gdr = int_attr(child, "gdr", 0)) net.attrs["gdr"] = std::to_string(*gdr);
      if (auto lat = text_attr(child, "latency")) {
        auto v = parse_number(*lat);
        if (!v || *v < 0) fail(child, "<net> attribute \"latency\" is not a number >= 0: \"" + *lat + "\"");
        net.attrs["latency_us"] = gbps_text(*v);
      }
      item.nets.push_back(std::move(net));
    }
  }

  // --- second pass

  static std::string cpu_id(std::size_t i) { return fmt::format("{}/cpu{}", kHost, i); }
  static std::string switch_id(const std::string& busid) { return fmt::format("{}/pci-{}", kHost, busid); }

  static std::string link_layer(const std::string& cls) {
    if (cls.compare(0, 4, "0207") == 0) return "infiniband";
    if (cls.compare(0, 4, "0200") == 0) return "ethernet";
    return "";
  }

  static int next_free(const std::map<int, int>& explicit_devs, std::set<int>& taken, int& cursor) {
    while (explicit_devs.count(cursor) || taken.count(cursor)) ++cursor;
    taken.insert(cursor);
    return cursor;
  }

  static Link pcie(VertexId a, VertexId b, double gts, int width) {
    return Link{a, b, LinkType::Pcie, hw::pcie_gbps(gts, width), hw::kPcieLatencyUs, width};
  }

  struct GpuInfo {
    VertexId v;
    std::size_t item;
  };

  Topology build() {
    Topology t;
    t.name = std::filesystem::path(file_).stem().string();
    if (t.name.empty()) t.name = "nccl-xml";
    t.source = "import:nccl-xml";
    const std::string host(kHost);
    std::vector<std::string> notes;

    std::vector<VertexId> cpu_v;
    for (std::size_t i = 0; i < cpus_.size(); ++i) {
      Vertex v;
      v.id = cpu_id(i);
      v.kind = VertexKind::Cpu;
      v.host = host;
      v.label = cpus_[i].label;
      v.numa = cpus_[i].numa;
      v.attrs = cpus_[i].attrs;
      cpu_v.push_back(t.add_vertex(std::move(v)));
    }

    std::vector<GpuInfo> gpus;
    std::map<std::string, VertexId> gpu_by_busid;
    std::map<std::size_t, VertexId> gpu_of_item;
    std::set<int> gpu_taken, nic_taken;
    int gpu_cursor = 0, nic_cursor = 0;
    std::vector<std::string> bare_gpus, bare_nics, multi_port, no_speed;

    auto add_net = [&](const Item& item, const NetRec* net, VertexId parent, const Link& link_template) {
      Vertex v;
      v.kind = VertexKind::Nic;
      v.host = host;
      v.numa = cpus_[item.cpu].numa;
      v.index = net ? net->dev : next_free(net_devs_, nic_taken, nic_cursor);
      v.id = fmt::format("{}/nic{}", kHost, v.index);
      if (net) {
        v.label = net->name;
        v.attrs = net->attrs;
        if (net->speed_mbps && *net->speed_mbps > 0) v.port_gbps = static_cast<double>(*net->speed_mbps) / 8000.0;
        else no_speed.push_back(v.id + (v.label.empty() ? "" : " (" + v.label + ")"));
      }
      if (item.nets.size() <= 1) v.busid = item.busid;
      if (auto layer = link_layer(item.pci_class); !layer.empty()) v.attrs["link_layer"] = layer;
      Link l = link_template;
      l.a = parent;
      l.b = t.add_vertex(std::move(v));
      t.add_link(l);
      return l.b;
    };

    for (std::size_t i = 0; i < items_.size(); ++i) {
      const Item& item = items_[i];
      const VertexId parent = t.at(item.parent);
      const Link up = pcie(parent, parent, item.gts, item.width);
      if (item.role == Role::Switch) {
        Vertex v;
        v.id = switch_id(item.busid);
        v.kind = VertexKind::PciSwitch;
        v.host = host;
        v.busid = item.busid;
        v.numa = cpus_[item.cpu].numa;
        Link l = up;
        l.b = t.add_vertex(std::move(v));
        t.add_link(l);
      } else if (item.role == Role::Gpu) {
        Vertex v;
        v.kind = VertexKind::Gpu;
        v.host = host;
        v.busid = item.busid;
        v.numa = cpus_[item.cpu].numa;
        v.index = item.dev ? *item.dev : next_free(gpu_devs_, gpu_taken, gpu_cursor);
        v.id = fmt::format("{}/gpu{}", kHost, v.index);
        if (item.sm) v.attrs["sm"] = std::to_string(*item.sm);
        if (item.gdr) v.attrs["gdr"] = std::to_string(*item.gdr);
        if (item.bare) bare_gpus.push_back(item.busid);
        Link l = up;
        l.b = t.add_vertex(std::move(v));
        t.add_link(l);
        gpus.push_back(GpuInfo{l.b, i});
        gpu_by_busid[item.busid] = l.b;
        gpu_of_item[i] = l.b;
      } else if (item.bare) {
        bare_nics.push_back(item.busid);
        add_net(item, nullptr, parent, up);
      } else if (item.nets.size() == 1) {
        add_net(item, &item.nets[0], parent, up);
      } else {
        // Ports of one adapter share its PCIe link: a PCI vertex for the adapter, the ports behind it.
        Vertex v;
        v.id = item.busid.empty() ? fmt::format("{}/nic-line{}", kHost, item.nets[0].line) : switch_id(item.busid);
        v.kind = VertexKind::PciSwitch;
        v.host = host;
        v.busid = item.busid;
        v.numa = cpus_[item.cpu].numa;
        v.label = fmt::format("NIC with {} ports", item.nets.size());
        Link l = up;
        l.b = t.add_vertex(std::move(v));
        t.add_link(l);
        Link inner = pcie(l.b, l.b, item.gts, item.width);
        inner.latency_us = 0;  // on the adapter itself
        for (const NetRec& net : item.nets) add_net(item, &net, l.b, inner);
        multi_port.push_back(fmt::format("{} ({} ports)", item.what, item.nets.size()));
      }
    }

    // NVLinks. Per-link rate from the GPU generation (hw_rates.h), counts summed per peer.
    auto rate = [&](std::size_t item) { return hw::nvlink_gbps_per_link(items_[item].sm.value_or(0)); };
    std::map<VertexId, std::pair<int, double>> to_nvswitch;  // gpu -> (count, rate)
    std::map<std::size_t, std::pair<int, double>> to_cpu;    // gpu item -> (count, rate)
    struct PairCounts {
      int lower = 0, upper = 0;  // as listed by the GPU with the lower / upper vertex id
      double gbps = std::numeric_limits<double>::infinity();
    };
    std::map<std::pair<VertexId, VertexId>, PairCounts> pairs;
    bool unstated_as_nvswitch = false;
    for (const NvlRec& n : nvlinks_) {
      const VertexId src = gpu_of_item.at(n.item);
      const double per_link = *rate(n.item);
      auto peer = gpu_by_busid.find(n.target);
      NvTarget kind = n.kind;
      if (kind == NvTarget::Unstated) {
        // As NCCL does: a target that is no GPU of the file is taken as an NVSwitch.
        kind = peer != gpu_by_busid.end() ? NvTarget::Gpu : NvTarget::NvSwitch;
        if (kind == NvTarget::NvSwitch && !nvswitch_busids_.count(n.target)) unstated_as_nvswitch = true;
      }
      if (kind == NvTarget::Gpu) {
        if (peer == gpu_by_busid.end()) fail_at(n.line, "<nvlink> target \"" + n.target + "\" is not a GPU in the file");
        if (peer->second == src) fail_at(n.line, "<nvlink> target \"" + n.target + "\" is the GPU itself");
        const VertexId dst = peer->second;
        PairCounts& p = pairs[{std::min(src, dst), std::max(src, dst)}];
        (src < dst ? p.lower : p.upper) += n.count;
        p.gbps = std::min(p.gbps, per_link);
      } else {
        auto& entry = kind == NvTarget::NvSwitch ? to_nvswitch[src] : to_cpu[n.item];
        entry.first += n.count;
        entry.second = per_link;
      }
    }
    if (!to_nvswitch.empty()) {
      Vertex v;
      v.id = fmt::format("{}/nvswitch", kHost);
      v.kind = VertexKind::NvSwitch;
      v.host = host;
      v.label = "NVSwitch";
      const VertexId nvs = t.add_vertex(std::move(v));
      for (auto& [gpu, cr] : to_nvswitch)
        t.add_link(Link{gpu, nvs, LinkType::NvLink, cr.first * cr.second, hw::kNvlinkLatencyUs, cr.first});
      notes.push_back("the NVSwitches are one vertex, " + t.vertex(nvs).id +
                      ": the file gives each GPU's NVLinks to the switch plane, not the switch chips");
      if (unstated_as_nvswitch)
        notes.push_back("<nvlink> targets without tclass that are no GPU of the file are taken as NVSwitches, as NCCL does");
    }
    std::vector<std::string> disagreements;
    for (auto& [ends, p] : pairs) {
      const int count = std::max(p.lower, p.upper);
      if (p.lower != p.upper)
        disagreements.push_back(fmt::format("NVLink counts between {} and {} disagree ({} listed on {}, {} on {}): took {}",
                                            t.vertex(ends.first).id, t.vertex(ends.second).id, p.lower,
                                            t.vertex(ends.first).id, p.upper, t.vertex(ends.second).id, count));
      t.add_link(Link{ends.first, ends.second, LinkType::NvLink, count * p.gbps, hw::kNvlinkLatencyUs, count});
    }
    for (auto& [item, cr] : to_cpu)  // POWER9-style NVLink to the CPU above the GPU
      t.add_link(Link{gpu_of_item.at(item), cpu_v[items_[item].cpu], LinkType::NvLink, cr.first * cr.second,
                      hw::kNvlinkLatencyUs, cr.first});
    if (gpus.size() >= 2 && t.count(LinkType::NvLink) == 0) notes.push_back("no NVLink in the file: GPUs talk over PCIe");
    for (std::string& d : disagreements) notes.push_back(std::move(d));

    // NVLink-C2C, between a GPU and the CPU above it.
    std::map<std::size_t, std::pair<int, double>> c2c;  // item -> (count, GB/s)
    for (const C2cRec& c : c2cs_) {
      c2c[c.item].first += c.count;
      c2c[c.item].second += c.gbps;
    }
    for (auto& [item, cg] : c2c)
      t.add_link(Link{gpu_of_item.at(item), cpu_v[items_[item].cpu], LinkType::C2c, cg.second, hw::kC2cLatencyUs, cg.first});

    // SMP links, every pair of CPUs (as NCCL connects them).
    std::set<std::string> smp_why;
    for (std::size_t i = 0; i < cpus_.size(); ++i)
      for (std::size_t j = i + 1; j < cpus_.size(); ++j) {
        // The file states no socket bandwidth (NCCL infers it from the CPU model): a per-vendor
        // figure (hw_rates.h), the slower side's when vendors differ, and a note says so.
        const hw::SmpRate& a = hw::smp_rate(cpus_[i].vendor);
        const hw::SmpRate& b = hw::smp_rate(cpus_[j].vendor);
        const hw::SmpRate& r = a.gbps <= b.gbps ? a : b;
        t.add_link(Link{cpu_v[i], cpu_v[j], LinkType::Smp, r.gbps, hw::kSmpLatencyUs, r.links});
        smp_why.insert(fmt::format("{} GB/s ({})", gbps_text(r.gbps), r.why));
      }
    if (!smp_why.empty()) {
      std::string list;
      for (const std::string& w : smp_why) list += (list.empty() ? "" : ", ") + w;
      notes.push_back("the file gives no bandwidth between CPUs: the SMP links assume " + list + " per direction");
    }

    // Ranks: by the rank attribute, then by dev (bare GPUs were numbered in document order).
    std::sort(gpus.begin(), gpus.end(), [&](const GpuInfo& x, const GpuInfo& y) {
      const Item& a = items_[x.item];
      const Item& b = items_[y.item];
      if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
      if (a.rank && *a.rank != *b.rank) return *a.rank < *b.rank;
      return t.vertex(x.v).index < t.vertex(y.v).index;
    });
    std::size_t ranked = 0;
    bool dense = true;
    for (std::size_t r = 0; r < gpus.size(); ++r) {
      t.add_rank(gpus[r].v);
      if (const auto& rank = items_[gpus[r].item].rank) {
        ++ranked;
        dense = dense && *rank == static_cast<int>(r);
      }
    }
    if (gpus.empty()) {
      for (VertexId c : cpu_v) t.add_rank(c);
      notes.push_back("no GPU in the file: one rank per <cpu>");
    }

    // What the file leaves out or what was assumed, stated for the user.
    notes.insert(notes.begin(), "the file describes one host: no inter-host fabric (use --fabric when merging)");
    if (host_hashes_.size() > 1)
      notes.insert(notes.begin() + 1, fmt::format("the <cpu> elements carry {} different host_hash values: read as one host, {}",
                                                  host_hashes_.size(), kHost));
    auto join = [](const std::vector<std::string>& xs) {
      std::string s;
      for (const std::string& x : xs) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    if (!speed_assumed_.empty())
      notes.push_back(fmt::format("no PCIe link_speed in the file for {} (nor above): assumed {:g} GT/s (Gen3)", join(speed_assumed_),
                                  kDefaultPcieGts));
    if (!width_assumed_.empty())
      notes.push_back(fmt::format("no PCIe link_width in the file for {} (nor above): assumed x{}", join(width_assumed_), kDefaultPcieWidth));
    if (!bare_gpus.empty())
      notes.push_back("GPUs known only by their PCI class, numbered in document order after the <gpu dev> ones; sm, rank and NVLinks unknown: " +
                      join(bare_gpus));
    if (!bare_nics.empty())
      notes.push_back("NICs known only by their PCI class, numbered in document order after the <net dev> ones; port speed unknown: " +
                      join(bare_nics));
    if (!multi_port.empty()) notes.push_back("NIC ports that share one PCIe link: " + join(multi_port));
    if (!no_speed.empty()) notes.push_back("no net speed in the file: port bandwidth unknown for " + join(no_speed));
    if (!nets_without_dev_.empty()) notes.push_back("<net> without dev skipped, as NCCL does: " + join(nets_without_dev_));
    if (t.count(VertexKind::Nic) == 0) notes.push_back("no NIC in the file");
    if (!gpus.empty() && ranked == 0) {
      notes.push_back("no <gpu rank> attributes: ranks follow the GPU dev index");
    } else if (ranked < gpus.size()) {
      notes.push_back(fmt::format("{} of {} GPUs have no rank attribute: ranked after the others, by dev", gpus.size() - ranked, gpus.size()));
    } else if (!dense) {
      notes.push_back("the <gpu rank> attributes are not 0..N-1: ranks renumbered from 0 in their order");
    }
    if (!ignored_devices_.empty()) notes.push_back("PCI devices not modelled: " + join(ignored_devices_));
    if (!ignored_elements_.empty())
      notes.push_back("elements not modelled: " + join(std::vector<std::string>(ignored_elements_.begin(), ignored_elements_.end())));
    t.notes = std::move(notes);

    try {
      t.check_connected();
    } catch (const InputError& e) {
      throw InputError(file_ + ": " + e.what());
    }
    return t;
  }

  const std::string& text_;
  const std::string& file_;
  pugi::xml_document doc_;

  std::vector<CpuRec> cpus_;
  std::vector<Item> items_;
  std::vector<NvlRec> nvlinks_;
  std::vector<C2cRec> c2cs_;
  std::map<std::string, int> busid_lines_;   // busid -> line
  std::map<int, int> gpu_devs_, gpu_ranks_, net_devs_;  // explicit value -> line
  std::set<std::string> nvswitch_busids_;
  std::set<std::string> host_hashes_;
  std::set<std::string> ignored_elements_;
  std::vector<std::string> ignored_devices_;
  std::vector<std::string> speed_assumed_, width_assumed_;
  std::vector<std::string> nets_without_dev_;
};

}  // namespace

Topology import_nccl_xml(const std::string& text, const std::string& file) { return Reader(text, file).run(); }

Topology import_nccl_xml_file(const std::string& path) { return import_nccl_xml(read_file(path), path); }

}  // namespace collkit::topo
