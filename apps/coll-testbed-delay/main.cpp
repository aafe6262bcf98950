// coll-testbed-delay: a delay line for the testbed's links (scripts/testbed.sh up --link RATE,DELAY)
// on kernels without netem. Runs inside a host's network namespace, where an iptables rule sends
// every IPv4 packet leaving eth0 to netfilter queue --queue; each packet is held and let go (the
// kernel's NF_ACCEPT verdict) DELAY after it reached this process, in arrival order, so the link
// keeps its order and gains a one-way latency of at least DELAY. Packets are not copied to user
// space (metadata only) and arrive unsegmented (GSO), so the line costs one verdict per packet.
// A delay is a floor, not an exact figure: a loaded host adds scheduling latency on top.
//
//   coll-testbed-delay --queue N --delay 50us [--ready FILE]
//
// Exits 0 on SIGTERM/SIGINT, after letting every held packet go; 2 on bad input; 1 when the queue
// cannot be bound (not root, no nfnetlink_queue, or another process holds the queue).

#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <string>
#include <string_view>

namespace {

volatile sig_atomic_t g_stop = 0;
extern "C" void on_stop(int) { g_stop = 1; }

[[noreturn]] void fail(int code, const std::string& what) {
  std::fprintf(stderr, "coll-testbed-delay: error: %s\n", what.c_str());
  std::exit(code);
}

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// "50us", "1.5ms", "0.002s" into nanoseconds; -1 if it does not parse.
std::int64_t parse_delay(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || !(v >= 0)) return -1;
  std::string_view unit(end, static_cast<std::size_t>(s.data() + s.size() - end));
  double scale = unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : -1;
  if (scale < 0 || v * scale > 10e9) return -1;  // at most 10 s
  return static_cast<std::int64_t>(v * scale);
}

struct Held {
  std::uint32_t id;
  std::int64_t due_ns;
};

struct Line {
  std::int64_t delay_ns = 0;
  std::deque<Held> held;
};

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  auto* line = static_cast<Line*>(data);
  nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph) line->held.push_back({ntohl(ph->packet_id), now_ns() + line->delay_ns});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int queue = -1;
  std::int64_t delay_ns = -1;
  std::string ready;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "--queue" || a == "--delay" || a == "--ready") && i + 1 >= argc) fail(2, std::string(a) + " needs a value");
    if (a == "--queue") {
      std::string_view v = argv[++i];
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), queue);
      if (ec != std::errc() || end != v.data() + v.size() || queue < 0 || queue > 65535)
        fail(2, "--queue: expected a queue number from 0 to 65535, got '" + std::string(v) + "'");
    } else if (a == "--delay") {
      delay_ns = parse_delay(argv[++i]);
      if (delay_ns < 0) fail(2, std::string("--delay: expected e.g. 50us, 1ms, 0.5s (at most 10 s), got '") + argv[i] + "'");
    } else if (a == "--ready") {
      ready = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: coll-testbed-delay --queue N --delay DELAY [--ready FILE]\n");
      return 0;
    } else {
      fail(2, "unknown argument '" + std::string(a) + "' (usage: coll-testbed-delay --queue N --delay DELAY [--ready FILE])");
    }
  }
  if (queue < 0 || delay_ns < 0) fail(2, "--queue and --delay are required");

  Line line;
  line.delay_ns = delay_ns;
  nfq_handle* h = nfq_open();
  if (!h) fail(1, "nfq_open failed: " + std::string(std::strerror(errno)) + " (needs root and the kernel's nfnetlink_queue)");
  nfq_q_handle* qh = nfq_create_queue(h, static_cast<std::uint16_t>(queue), &on_packet, &line);
  if (!qh) fail(1, "cannot bind netfilter queue " + std::to_string(queue) + " (taken by another process, or no permission)");
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) fail(1, "nfq_set_mode failed");
  nfq_set_queue_maxlen(qh, 100000);
  // GSO packets whole (one verdict per 64 KiB, not per MTU). A kernel queue past its length drops,
  // as a full link buffer would (TCP backs off); 100000 packets is far more than a delay holds.
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  int fd = nfq_fd(h);
  int buf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);

  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  if (!ready.empty()) std::ofstream(ready) << "ready\n";

  alignas(8) static char pkt[1 << 17];
  while (!g_stop) {
    std::int64_t t = now_ns();
    while (!line.held.empty() && line.held.front().due_ns <= t) {
      nfq_set_verdict(qh, line.held.front().id, NF_ACCEPT, 0, nullptr);
      line.held.pop_front();
    }
    timespec wait{0, 100000000};  // at most 0.1 s, to see SIGTERM
    if (!line.held.empty()) {
      std::int64_t left = line.held.front().due_ns - t;
      wait = {static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
    }
    pollfd p{fd, POLLIN, 0};
    if (ppoll(&p, 1, &wait, nullptr) <= 0) continue;
    for (;;) {
      ssize_t n = recv(fd, pkt, sizeof pkt, MSG_DONTWAIT);
      if (n < 0) break;  // EAGAIN, or ENOBUFS (the socket overran: those packets stay queued in the kernel)
      nfq_handle_packet(h, pkt, static_cast<int>(n));
    }
  }
  for (const Held& p : line.held) nfq_set_verdict(qh, p.id, NF_ACCEPT, 0, nullptr);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
