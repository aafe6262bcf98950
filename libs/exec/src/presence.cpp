#include "presence.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <utility>

namespace collkit::exec {

namespace {

// A ping and its answer: magic, the rank asked for, that rank's nonce (a stranger's datagram, or
// one from another job that reused the port, is not answered or counted).
constexpr char kPing[4] = {'c', 'k', 'P', '1'}, kAnswer[4] = {'c', 'k', 'A', '1'};
constexpr std::size_t kMessage = 16;

void pack(char* out, const char (&magic)[4], int rank, std::uint64_t nonce) {
  std::memcpy(out, magic, 4);
  std::uint32_t r = htonl(static_cast<std::uint32_t>(rank));
  std::memcpy(out + 4, &r, 4);
  std::memcpy(out + 8, &nonce, 8);
}

bool unpack(const char* in, std::size_t n, const char (&magic)[4], int* rank, std::uint64_t* nonce) {
  if (n != kMessage || std::memcmp(in, magic, 4) != 0) return false;
  std::uint32_t r = 0;
  std::memcpy(&r, in + 4, 4);
  *rank = static_cast<int>(ntohl(r));
  std::memcpy(nonce, in + 8, 8);
  return true;
}

double seconds_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

std::unique_ptr<Presence> Presence::open(int rank) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  // The answering thread wakes this often to see whether it is to stop.
  timeval tick{0, 100000};
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick) != 0) {
    ::close(fd);
    return nullptr;
  }
  std::random_device rd;
  std::uint64_t nonce = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return std::unique_ptr<Presence>(new Presence(fd, rank, ntohs(a.sin_port), nonce));
}

Presence::Presence(int fd, int rank, std::uint16_t port, std::uint64_t nonce)
    : fd_(fd), rank_(rank), port_(port), nonce_(nonce), thread_([this] { answer(); }) {}

Presence::~Presence() {
  stop_ = true;
  ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

void Presence::answer() {
  char buf[64];
  while (!stop_.load(std::memory_order_relaxed)) {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ssize_t n = ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    int rank = -1;
    std::uint64_t nonce = 0;
    if (n < 0 || !unpack(buf, static_cast<std::size_t>(n), kPing, &rank, &nonce) || rank != rank_ || nonce != nonce_) continue;
    char out[kMessage];
    pack(out, kAnswer, rank_, nonce_);
    ::sendto(fd_, out, sizeof out, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), len);
  }
}

std::string Presence::endpoint() const {
  std::ostringstream out;
  out << nonce_ << ' ' << port_ << ' ';
  std::vector<std::string> addrs;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
      char text[INET_ADDRSTRLEN] = {};
      if (::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text)) addrs.emplace_back(text);
    }
    ::freeifaddrs(list);
  }
  if (addrs.empty()) out << '-';
  for (std::size_t i = 0; i < addrs.size(); ++i) out << (i ? "," : "") << addrs[i];
  return out.str();
}

void Presence::set_peers(const std::vector<std::string>& endpoints, const std::vector<std::string>& hosts, const std::string& my_host) {
  peers_.assign(endpoints.size(), Peer{});
  for (std::size_t r = 0; r < endpoints.size(); ++r) {
    std::istringstream in(endpoints[r]);
    Peer p;
    unsigned port = 0;
    std::string addrs;
    if (!(in >> p.nonce >> port >> addrs) || port == 0 || port > 65535) continue;
    p.port = static_cast<std::uint16_t>(port);
    if (r < hosts.size() && hosts[r] == my_host) {
      p.addrs.push_back(htonl(INADDR_LOOPBACK));
    } else {
      std::istringstream list(addrs);
      for (std::string a; std::getline(list, a, ',');) {
        in_addr ip{};
        if (::inet_pton(AF_INET, a.c_str(), &ip) == 1) p.addrs.push_back(ip.s_addr);
      }
    }
    peers_[r] = std::move(p);
  }
}

std::vector<Liveness> Presence::probe(const std::vector<int>& ranks, double grace_s) const {
  std::vector<Liveness> out(ranks.size(), Liveness::Unknown);
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return out;
  // ICMP errors (port unreachable: nobody listens there any more) come back on the error queue,
  // with the address the datagram was sent to.
  int on = 1;
  ::setsockopt(s, SOL_IP, IP_RECVERR, &on, sizeof on);
  struct Target {
    std::size_t index;  ///< into ranks
    std::size_t addr;   ///< into the peer's addresses
  };
  std::map<std::pair<std::uint32_t, std::uint16_t>, std::vector<Target>> by_address;
  std::vector<std::vector<bool>> refused(ranks.size());
  std::size_t open = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    int r = ranks[i];
    if (r == rank_) {
      out[i] = Liveness::Alive;
      continue;
    }
    if (r < 0 || static_cast<std::size_t>(r) >= peers_.size() || peers_[static_cast<std::size_t>(r)].addrs.empty()) continue;
    const Peer& p = peers_[static_cast<std::size_t>(r)];
    refused[i].assign(p.addrs.size(), false);
    for (std::size_t a = 0; a < p.addrs.size(); ++a) by_address[{p.addrs[a], p.port}].push_back({i, a});
    out[i] = Liveness::Silent;
    ++open;
  }
  auto settle = [&](std::size_t i, Liveness v) {
    if (out[i] != Liveness::Silent) return;
    out[i] = v;
    --open;
  };
  double until = seconds_now() + grace_s, next_ping = 0;
  char buf[64];
  while (open > 0) {
    double now = seconds_now();
    if (now >= until) break;
    if (now >= next_ping) {
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (out[i] != Liveness::Silent) continue;
        const Peer& p = peers_[static_cast<std::size_t>(ranks[i])];
        char msg[kMessage];
        pack(msg, kPing, ranks[i], p.nonce);
        for (std::size_t a = 0; a < p.addrs.size(); ++a) {
          if (refused[i][a]) continue;
          sockaddr_in to{};
          to.sin_family = AF_INET;
          to.sin_port = htons(p.port);
          to.sin_addr.s_addr = p.addrs[a];
          ::sendto(s, msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
        }
      }
      next_ping = now + 0.05;
    }
    pollfd pfd{s, POLLIN, 0};
    int wait_ms = static_cast<int>(std::max(1.0, 1000 * (std::min(until, next_ping) - now)));
    if (::poll(&pfd, 1, wait_ms) <= 0) continue;
    // Refusals first: each names the address it was sent to.
    for (;;) {
      sockaddr_in to{};
      char control[512];
      iovec iov{buf, sizeof buf};
      msghdr m{};
      m.msg_name = &to;
      m.msg_namelen = sizeof to;
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      if (::recvmsg(s, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_IP || c->cmsg_type != IP_RECVERR) continue;
        sock_extended_err e{};
        std::memcpy(&e, CMSG_DATA(c), sizeof e);
        if (e.ee_origin != SO_EE_ORIGIN_ICMP || e.ee_errno != ECONNREFUSED) continue;
        auto it = by_address.find({to.sin_addr.s_addr, ntohs(to.sin_port)});
        if (it == by_address.end()) continue;
        for (const Target& t : it->second) {
          refused[t.index][t.addr] = true;
          if (std::all_of(refused[t.index].begin(), refused[t.index].end(), [](bool b) { return b; })) settle(t.index, Liveness::Gone);
        }
      }
    }
    // Then answers (a pending error makes one call fail: the loop goes on to the next datagram).
    for (int spins = 0; spins < 1024; ++spins) {
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n = ::recvfrom(s, buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        continue;
      }
      int rank = -1;
      std::uint64_t nonce = 0;
      if (!unpack(buf, static_cast<std::size_t>(n), kAnswer, &rank, &nonce)) continue;
      for (std::size_t i = 0; i < ranks.size(); ++i)
        if (ranks[i] == rank && static_cast<std::size_t>(rank) < peers_.size() && peers_[static_cast<std::size_t>(rank)].nonce == nonce)
          settle(i, Liveness::Alive);
    }
  }
  ::close(s);
  return out;
}

}  // namespace collkit::exec
