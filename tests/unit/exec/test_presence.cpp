// The liveness side channel (presence.h): real UDP sockets on loopback, several "ranks" in one
// process. A peer that answers is alive, one whose socket is closed is gone (ICMP port unreachable),
// one whose port is held but never answers is silent, one with no address is unknown.

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "presence.h"

using namespace collkit::exec;

namespace {

// A UDP port bound on loopback that nobody reads: pings to it go unanswered, and are not refused.
struct Mute {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  int port = 0;
  Mute() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
  ~Mute() { ::close(fd); }
};

}  // namespace

TEST_CASE("presence: alive, gone when the socket closes, silent when nobody answers, unknown without an address") {
  auto a = Presence::open(0), b = Presence::open(1);
  REQUIRE(a);
  REQUIRE(b);
  Mute mute;
  REQUIRE(mute.port > 0);
  // The endpoint's form: "nonce port addresses".
  std::istringstream parts(b->endpoint());
  unsigned long long nonce = 0;
  unsigned port = 0;
  std::string addrs;
  CHECK(static_cast<bool>(parts >> nonce >> port >> addrs));
  CHECK(port > 0);
  // Rank 2: a held port; rank 3: no endpoint at all; all four ranks on one host (pinged on loopback).
  std::vector<std::string> endpoints = {a->endpoint(), b->endpoint(), "7 " + std::to_string(mute.port) + " -", "-"};
  std::vector<std::string> hosts(4, "h");
  a->set_peers(endpoints, hosts, "h");

  std::vector<Liveness> seen = a->probe({0, 1, 2, 3}, 0.3);
  CHECK(seen == std::vector<Liveness>{Liveness::Alive, Liveness::Alive, Liveness::Silent, Liveness::Unknown});

  b.reset();  // rank 1's process "exits": its port refuses
  seen = a->probe({1}, 1.0);
  CHECK(seen == std::vector<Liveness>{Liveness::Gone});
}

TEST_CASE("presence: an answer with another nonce does not count, and a peer on another host is pinged at its addresses") {
  auto a = Presence::open(0), b = Presence::open(1);
  REQUIRE(a);
  REQUIRE(b);
  std::istringstream parts(b->endpoint());
  unsigned long long nonce = 0;
  unsigned port = 0;
  CHECK(static_cast<bool>(parts >> nonce >> port));
  // Rank 1 on another host, at 127.0.0.1 (its address list, not the same-host rule); rank 2 is
  // rank 1's port with a wrong nonce: rank 1 does not answer it.
  std::vector<std::string> endpoints = {a->endpoint(), std::to_string(nonce) + " " + std::to_string(port) + " 127.0.0.1",
                                        std::to_string(nonce + 1) + " " + std::to_string(port) + " 127.0.0.1"};
  a->set_peers(endpoints, {"h1", "h2", "h2"}, "h1");
  std::vector<Liveness> seen = a->probe({1, 2}, 0.3);
  CHECK(seen == std::vector<Liveness>{Liveness::Alive, Liveness::Silent});
  // An endpoint that does not parse leaves the rank unknown.
  a->set_peers({a->endpoint(), "not an endpoint"}, {"h1", "h2"}, "h1");
  CHECK(a->probe({1}, 0.1) == std::vector<Liveness>{Liveness::Unknown});
}
