#pragma once
// A liveness side channel that needs no MPI. Each rank answers UDP pings on a port of its own, from
// a thread of its own; a rank whose MPI calls no longer return (Open MPI's TCP transport can hold a
// call to a dead peer for good) can still ask who is there, and the answer tells three cases apart
// that an MPI roll call cannot: a peer that answers (alive), a peer whose port refuses (the host
// answered with ICMP port unreachable: the process has exited), and a peer that says nothing
// (stopped, hung in the kernel, or out of reach). IPv4 only; a host without a usable address, or
// a socket that cannot be made, leaves the channel off and every peer "unknown".

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collkit/exec/world.h"

namespace collkit::exec {

class Presence {
 public:
  /// Binds a UDP port (any address, a port the kernel picks) and starts the thread that answers
  /// pings carrying this rank's number and nonce. Null where no socket can be made.
  static std::unique_ptr<Presence> open(int rank);
  ~Presence();
  Presence(const Presence&) = delete;
  Presence& operator=(const Presence&) = delete;

  /// "nonce port addr,addr,...": what the other ranks need to ping this one (this host's IPv4
  /// addresses, loopback left out: a peer on this host is pinged on 127.0.0.1).
  std::string endpoint() const;
  /// Every rank's endpoint() and host name, in rank order (an endpoint that does not parse leaves
  /// that rank unknown).
  void set_peers(const std::vector<std::string>& endpoints, const std::vector<std::string>& hosts, const std::string& my_host);

  /// Pings `ranks` (every address of each, again every 50 ms) until each has answered or refused on
  /// every address, or `grace_s` has passed. Alive: an answer came; Gone: every address refused;
  /// Silent: neither within `grace_s`; Unknown: no address to ping. Thread-safe (a socket per call).
  std::vector<Liveness> probe(const std::vector<int>& ranks, double grace_s) const;

 private:
  Presence(int fd, int rank, std::uint16_t port, std::uint64_t nonce);
  void answer();

  struct Peer {
    std::uint64_t nonce = 0;
    std::uint16_t port = 0;
    std::vector<std::uint32_t> addrs;  ///< IPv4, network byte order
  };
  int fd_;
  int rank_;
  std::uint16_t port_;
  std::uint64_t nonce_;
  std::vector<Peer> peers_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace collkit::exec
