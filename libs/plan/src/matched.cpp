// The shared pass over a whole plan: read, check, pair (matched.h).

#include "collkit/plan/matched.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace collkit::plan {

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;

std::string plural(std::uint64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// An op of one link waiting for its partner, with what the size check needs; a node of its
// link's FIFO, threaded through one pool for all links.
struct Waiting {
  std::uint32_t id = 0;
  std::uint32_t count = 0;
  ChunkRef ref;  // a send's source, a receive's destination
  OpType type = OpType::Send;
  std::uint32_t next = kNone;
};

// The sends or receives of one (sender, receiver, channel) link not paired yet, oldest first
// (never both: a send and a receive waiting on one link pair up at once), and how many of each
// the link has seen.
struct Link {
  std::int32_t from = 0, to = 0;
  std::uint16_t channel = 0;
  bool sends = false;
  std::uint32_t sent = 0, received = 0;
  std::uint32_t head = kNone, tail = kNone;  // into Matcher::pool_
};

class Matcher {
 public:
  Matcher(const Plan& plan, const MatchVisitor& visit)
      : plan_(plan), info_(plan.info()), visit_(visit), p_(plan.nranks()), channels_(info_.channels), sizes_(info_) {
    cache_.fill({~std::uint64_t{0}, nullptr});
  }

  OpIds run() {
    if (p_ < 1) throw PlanFault("plan: " + std::to_string(p_) + " ranks");
    if (channels_ < 1) throw PlanFault("plan: 0 channels");
    std::uint32_t elem = info_.req.elem_bytes;
    for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch})
      if (elem == 0 || sizes_.buffer_bytes(b) % elem != 0)
        throw PlanFault("plan: the " + std::string(to_string(b)) + " buffer's " + plural(sizes_.buffer_bytes(b), "byte") +
                        " are not a whole number of " + std::to_string(elem) + "-byte elements");
    ids_.begin.reserve(static_cast<std::size_t>(p_) + 1);
    std::uint64_t next = 0;
    for (int r = 0; r < p_; ++r) {
      std::vector<Op> prog;
      try {
        prog = plan_.program(r);
      } catch (const Error& e) {
        throw PlanFault("rank " + std::to_string(r) + ": cannot expand its program: " + e.what());
      }
      if (next + prog.size() >= kNone) throw PlanFault("plan: more than " + std::to_string(kNone - 1) + " ops");
      auto first = static_cast<std::uint32_t>(next);
      ids_.begin.push_back(first);
      for (std::size_t i = 0; i < prog.size(); ++i) check(r, prog[i], static_cast<std::uint32_t>(i));
      if (visit_.program) visit_.program(r, first, prog);
      for (std::size_t i = 0; i < prog.size(); ++i) pair(r, prog[i], first + static_cast<std::uint32_t>(i));
      next += prog.size();
    }
    ids_.begin.push_back(static_cast<std::uint32_t>(next));
    report_unpaired();
    return std::move(ids_);
  }

 private:
  std::uint64_t bytes(Buf b, std::uint32_t chunk, std::uint32_t count) const { return sizes_.bytes(b, chunk, count); }

  static bool transfer(OpType t) { return t == OpType::Send || t == OpType::Recv || t == OpType::RecvReduce; }

  // Op x of rank r on its own.
  void check(int r, const Op& o, std::uint32_t x) const {
    auto bad = [&](const std::string& what) {
      throw PlanFault("rank " + std::to_string(r) + " " + describe_op(o.type, o.peer, o.channel, x) + ": " + what);
    };
    if (o.type > OpType::Reduce) bad("unknown op type " + std::to_string(static_cast<int>(o.type)));
    if (o.channel >= channels_)
      bad("channel " + std::to_string(o.channel) + " is out of range (the plan has " + plural(channels_, "channel") + ")");
    if (o.count == 0) bad("count is 0");
    if (o.type != OpType::Recv) check_range(o.src, o.count, bad);
    if (o.type != OpType::Send) check_range(o.dst, o.count, bad);
    if (transfer(o.type)) {
      if (o.peer < 0 || o.peer >= p_) bad("peer " + std::to_string(o.peer) + " is not a rank of " + std::to_string(p_));
      if (o.peer == r) bad("its peer is its own rank");
    } else {
      std::uint64_t sb = bytes(o.src.buf, o.src.chunk, o.count), db = bytes(o.dst.buf, o.dst.chunk, o.count);
      if (sb != db)
        bad(chunks_name(o.src.buf, o.src.chunk, o.count) + " (" + plural(sb, "byte") + ") and " +
            chunks_name(o.dst.buf, o.dst.chunk, o.count) + " (" + plural(db, "byte") + ") differ in size");
    }
    std::size_t n = o.num_deps();
    for (std::size_t k = n; k < kMaxDeps; ++k)
      if (o.deps[k] != kNoDep) bad("deps must be packed at the front of the list");
    for (std::size_t k = 0; k < n; ++k)
      if (o.deps[k] >= x) bad("dep on op " + std::to_string(o.deps[k]) + " is not an earlier op");
  }

  template <class Bad>
  void check_range(ChunkRef ref, std::uint32_t count, Bad bad) const {
    if (ref.buf > Buf::Scratch) bad("unknown buffer " + std::to_string(static_cast<int>(ref.buf)));
    std::uint32_t n = sizes_.chunks(ref.buf);
    if (std::uint64_t{ref.chunk} + count > n)
      bad(chunks_name(ref.buf, ref.chunk, count) + (count == 1 ? " is" : " are") + " out of range (" + std::string(to_string(ref.buf)) +
          " has " + plural(n, "chunk") + ")");
  }

  // The link (from, to, c). A rank's program talks to a few peers, so a small cache in front of
  // the hash map serves nearly every lookup (the map's nodes never move).
  Link& link(int from, int to, std::uint16_t c) {
    std::uint64_t key =
        (static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(p_) + static_cast<std::uint64_t>(to)) * channels_ + c;
    auto& cached = cache_[(key * 0x9e3779b97f4a7c15ull) >> 58];
    if (cached.first != key) {
      auto [it, fresh] = links_.try_emplace(key);
      if (fresh) {
        it->second.from = from;
        it->second.to = to;
        it->second.channel = c;
      }
      cached = {key, &it->second};
    }
    return *cached.second;
  }

  std::string describe_id(const Waiting& w, const Link& l) const {
    bool send = w.type == OpType::Send;
    return "rank " + std::to_string(ids_.rank_of(w.id)) + " " + describe_op(w.type, send ? l.to : l.from, l.channel, ids_.index_of(w.id));
  }

  void pair(int r, const Op& o, std::uint32_t id) {
    if (!transfer(o.type)) return;
    bool send = o.type == OpType::Send;
    Link& l = send ? link(r, o.peer, o.channel) : link(o.peer, r, o.channel);
    ++(send ? l.sent : l.received);
    Waiting me{id, o.count, send ? o.src : o.dst, o.type};
    if (l.head == kNone || l.sends == send) {
      // Waits at the link's tail; the pool's free nodes are reused first, so it stays as large
      // as the most ops ever waiting at once (a ring: about two ranks' sends), not all ops.
      std::uint32_t m = free_;
      if (m == kNone) {
        m = static_cast<std::uint32_t>(pool_.size());
        pool_.emplace_back();
      } else {
        free_ = pool_[m].next;
      }
      pool_[m] = me;
      if (l.head == kNone) {
        l.head = m;
        l.sends = send;
      } else {
        pool_[l.tail].next = m;
      }
      l.tail = m;
      return;
    }
    std::uint32_t m = l.head;
    const Waiting other = pool_[m];
    l.head = other.next;
    if (l.head == kNone) l.tail = kNone;
    pool_[m].next = free_;
    free_ = m;
    const Waiting& s = send ? me : other;
    const Waiting& v = send ? other : me;  // the receive
    auto fail = [&](const std::string& what) { throw PlanFault(describe_id(v, l) + ": " + what); };
    auto sender = [&] { return "its matching send, " + describe_id(s, l) + ","; };
    if (s.count != v.count) fail("receives " + plural(v.count, "chunk") + " but " + sender() + " sends " + std::to_string(s.count));
    std::uint64_t sb = bytes(s.ref.buf, s.ref.chunk, s.count), rb = bytes(v.ref.buf, v.ref.chunk, v.count);
    if (sb != rb)
      fail("receives " + plural(rb, "byte") + " into " + chunks_name(v.ref.buf, v.ref.chunk, v.count) + " but " + sender() + " sends " +
           plural(sb, "byte") + " from " + chunks_name(s.ref.buf, s.ref.chunk, s.count));
    if (visit_.pair) visit_.pair(s.id, v.id);
  }

  // Whatever still waits never found its partner: names the earliest such op.
  void report_unpaired() const {
    const Link* worst = nullptr;
    for (const auto& [key, l] : links_)
      if (l.head != kNone && (!worst || pool_[l.head].id < pool_[worst->head].id)) worst = &l;
    if (!worst) return;
    const Link& l = *worst;
    throw PlanFault(describe_id(pool_[l.head], l) + ": " + (l.sends ? "never received" : "never matched") + ": rank " +
                    std::to_string(l.from) + " sends " + plural(l.sent, "message") + " to rank " + std::to_string(l.to) + " on ch " +
                    std::to_string(l.channel) + " and rank " + std::to_string(l.to) + " receives " + std::to_string(l.received));
  }

  const Plan& plan_;
  const PlanInfo& info_;
  const MatchVisitor& visit_;
  int p_;
  std::uint16_t channels_;
  ChunkSizes sizes_;
  std::unordered_map<std::uint64_t, Link> links_;
  std::array<std::pair<std::uint64_t, Link*>, 64> cache_;
  std::vector<Waiting> pool_;
  std::uint32_t free_ = kNone;  // the first free node of pool_, threaded through next
  OpIds ids_;
};

}  // namespace

ChunkSizes::ChunkSizes(const PlanInfo& info) {
  for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
    Shape& sh = shapes_[static_cast<std::size_t>(b)];
    sh.bytes = plan::buffer_bytes(info, b);
    sh.chunks = buffer_chunks(info, b);
    sh.elem = info.req.elem_bytes;
    std::uint64_t elems = sh.elem ? sh.bytes / sh.elem : 0;
    sh.even = sh.chunks && elems % sh.chunks == 0 ? elems / sh.chunks * sh.elem : 0;
  }
}

int OpIds::rank_of(std::uint32_t id) const {
  auto it = std::upper_bound(begin.begin(), begin.end(), id);
  return static_cast<int>(it - begin.begin()) - 1;
}

OpIds match_plan(const Plan& plan, const MatchVisitor& visit) { return Matcher(plan, visit).run(); }

std::string describe_op(OpType type, int peer, std::uint16_t channel, std::uint32_t index) {
  std::string text = "op " + std::to_string(index) + " (" + std::string(to_string(type));
  if (type == OpType::Send) text += " to " + std::to_string(peer);
  if (type == OpType::Recv || type == OpType::RecvReduce) text += " from " + std::to_string(peer);
  return text + " ch " + std::to_string(channel) + ")";
}

std::string chunks_name(Buf b, std::uint32_t chunk, std::uint32_t count) {
  std::string text = std::string(to_string(b)) + (count == 1 ? " chunk " : " chunks ") + std::to_string(chunk);
  if (count != 1) text += "-" + std::to_string(std::uint64_t{chunk} + count - 1);
  return text;
}

}  // namespace collkit::plan
