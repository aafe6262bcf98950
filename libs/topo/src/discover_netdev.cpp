// Network interfaces from /sys/class/net and tc: NICs that hwloc does not show (veth, bonds,
// VLANs, IPoIB, containers' interfaces) and the rate of those that carry no RDMA port.

#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "discover_internal.h"

namespace collkit::topo::detail {

namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

long read_long(const fs::path& p, long fallback) {
  std::string s = read_line(p);
  try {
    std::size_t used = 0;
    long v = std::stol(s, &used);
    return used == s.size() ? v : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

constexpr long kArphrdInfiniband = 32;
constexpr long kArphrdLoopback = 772;

std::string kind_of(const fs::path& dir, long type) {
  if (type == kArphrdInfiniband) return "ipoib";
  if (fs::exists(dir / "bridge")) return "bridge";
  if (fs::exists(dir / "bonding")) return "bond";
  std::ifstream uevent(dir / "uevent");
  for (std::string line; std::getline(uevent, line);)
    if (line.rfind("DEVTYPE=", 0) == 0) return line.substr(8) == "vlan" ? "vlan" : "virtual";
  if (fs::exists(dir / "device")) return "physical";
  // A veth names its peer in iflink; a plain virtual device names itself.
  long iflink = read_long(dir / "iflink", -1), ifindex = read_long(dir / "ifindex", -1);
  return iflink >= 0 && iflink != ifindex ? "veth" : "virtual";
}

std::string busid_of(const fs::path& dir) {
  std::error_code ec;
  fs::path dev = fs::canonical(dir / "device", ec);
  if (ec) return "";
  for (; !dev.empty() && dev != dev.root_path(); dev = dev.parent_path())
    if (auto b = normalize_busid(dev.filename().string())) return *b;
  return "";
}

}  // namespace

double tc_tbf_rate_bytes(std::string_view tc_json) {
  if (tc_json.find_first_not_of(" \t\r\n") == std::string_view::npos) return 0;
  auto j = nlohmann::json::parse(tc_json, nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw InputError("tc qdisc output is not a JSON array");
  double best = 0;
  for (const auto& q : j) {
    if (!q.is_object() || q.value("kind", "") != "tbf") continue;
    auto o = q.find("options");
    if (o == q.end() || !o->is_object()) continue;
    auto r = o->find("rate");
    if (r == o->end() || !r->is_number() || !(r->get<double>() > 0)) continue;
    double rate = r->get<double>();
    best = best > 0 ? std::min(best, rate) : rate;
  }
  return best;
}

NetdevScan read_netdevs(const std::string& sys_class_net, const std::vector<std::string>& with_ipv4,
                        const std::function<std::string(const std::string&)>& tc_json) {
  NetdevScan out;
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(sys_class_net, ec)) dirs.push_back(e.path());
  if (ec) {
    out.notes.push_back("network interfaces: cannot read " + sys_class_net + ": " + ec.message());
    return out;
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    const long type = read_long(dir / "type", -1);
    if (type == kArphrdLoopback || name == "lo") continue;
    if (read_line(dir / "operstate") != "up") continue;
    if (std::find(with_ipv4.begin(), with_ipv4.end(), name) == with_ipv4.end()) continue;
    FoundNetdev n;
    n.name = name;
    n.kind = kind_of(dir, type);
    n.busid = busid_of(dir);
    double shaped = 0;
    try {
      shaped = tc_tbf_rate_bytes(tc_json(name));
    } catch (const InputError& e) {
      out.notes.push_back(name + ": " + e.what() + ": tc shaping ignored");
    }
    const long speed_mbit = read_long(dir / "speed", -1);
    if (shaped > 0) {
      n.gbps = shaped / 1e9;
      n.rate_source = "tc tbf";
    } else if (speed_mbit > 0) {
      n.gbps = static_cast<double>(speed_mbit) * 1e6 / 8 / 1e9;
      n.rate_source = "sysfs speed";
    }
    out.netdevs.push_back(std::move(n));
  }
  return out;
}

NetdevScan scan_netdevs() {
  std::vector<std::string> with_ipv4;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && a->ifa_name) with_ipv4.emplace_back(a->ifa_name);
    freeifaddrs(list);
  }
  const bool have_tc = fs::exists("/usr/sbin/tc") || fs::exists("/sbin/tc");
  auto tc_json = [&](const std::string& name) -> std::string {
    if (!have_tc) return "";
    // The name comes from /sys/class/net: kernel interface names hold no shell metacharacters
    // but may hold other bytes; quote it.
    std::string quoted = "'";
    for (char c : name) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(("tc -j qdisc show dev " + quoted + " 2>/dev/null").c_str(), "r"), pclose);
    if (!p) return "";
    std::string text;
    char buf[4096];
    for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, p.get())) > 0;) text.append(buf, got);
    return text;
  };
  NetdevScan s = read_netdevs("/sys/class/net", with_ipv4, tc_json);
  if (!have_tc) s.notes.push_back("tc not installed: link shaping, if any, not read");
  return s;
}

}  // namespace collkit::topo::detail
