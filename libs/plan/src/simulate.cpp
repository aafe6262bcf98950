// Event-driven simulation of a plan on a topology (docs/plan.md, "Simulation and bounds").
//
// Execution follows plan.h: ops of one (rank, channel) run one after another, an op also waits
// for its deps; the k-th send a->b on channel c meets the k-th receive on b from a on c. A send
// completes, for its rank's program, once its last byte has left; its data arrives a route
// latency later, and a receive completes when its data has arrived and it has been reached, plus
// the reduction for recv_reduce. At most SimOptions::max_in_flight sends of a (rank, channel)
// are on their way (NCCL's 8 slots per channel); one more waits for the oldest to arrive.
//
// Costs:
//  - a transfer from rank a to rank b follows the topology's route between their endpoint
//    vertices (plan rank i = topology rank i). It starts per_message_us after the send is posted.
//    Two ranks on one vertex copy at the vertex's local_bw_gbps (one shared resource per vertex,
//    no latency); when that is unknown (0) such a transfer is free: it arrives after
//    per_message_us alone.
//  - copy, reduce and recv_reduce's reduction take bytes / reduce_gbps (free when 0). On a
//    calibrated topology a reduction is work of the rank's vertex instead, on the one resource
//    that vertex's shared-memory transfers use (local_work(); docs/adapt.md): there a transfer is
//    a copy made by a core, and the same cores reduce (with more ranks than cores, they take
//    turns). It holds the resource for bytes / (k x reduce_gbps), k the plan's ranks on the
//    vertex (reduce_gbps is what each rank reduces with all of them reducing at once), k at most
//    the calibration's cores when it states them: more ranks than cores take turns, and then one
//    reduction runs on one core, never faster than bytes / reduce_gbps (Queue model). A reduction
//    whose two inputs and output fit in a core's own cache (core_cache_bytes) runs at
//    core_cache_factor x the rate. A rank's
//    own copies stay at bytes / reduce_gbps beside it: charged on the vertex too they predicted
//    bruck's large rotations up to 2x too slow (the runtime streams them past the cache).
//
// Link models:
//  - Queue (first come, first served, fluid). Each resource keeps a profile of the rate the
//    transfers admitted so far take from it (sim::Profile). Transfers are admitted in the order
//    their sends are posted; one posted at s on hops h = 1..H (latency L_h, bandwidth b_h)
//    takes, at every moment t >= s, the least over its hops of what hop h has left at
//    t + lambda_h, lambda_h = L_1 + ... + L_{h-1} (b_h less the earlier transfers' rates), until
//    its bytes have left; it arrives sum_h L_h after its last byte passed the last hop. A lone
//    transfer runs at min_h b_h; a link that earlier transfers use only in part (held to a slower
//    hop elsewhere) serves the next with what is left, as a switch port does; one whose hops are
//    all busy waits (backfilling: it takes any room left ahead of later reservations). A message
//    of at most SimOptions::queue_store_bytes may wait whole in front of a hop that starts at a
//    network switch (the switch stores it) while the hops before it go on: its first hops need
//    not wait for room on the later ones at the same moment (sim::Admission).
//  - MaxMin. Each transfer is a flow holding every resource of its route at once; rates are the
//    max-min fair allocation (progressive filling, simulate_maxmin.cpp), recomputed whenever a flow
//    arrives or leaves. A flow's data is delivered its route's latency after its last byte left.
// Both models give a lone transfer the same time: per_message + sum of latencies + bytes / bottleneck.

#include "collkit/plan/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

#include "collkit/core/error.h"
#include "collkit/core/flat_index.h"
#include "collkit/plan/matched.h"
#include "collkit/topo/routing.h"
#include "nic_route.h"
#include "simulate_internal.h"
#include "simulate_memo.h"
#include "simulate_symmetry.h"

namespace collkit::plan {

namespace {

using sim::Network;
using sim::Route;

constexpr std::uint32_t kNone = 0xffffffffu;
constexpr double kBytesPerUsPerGbps = 1e3;  // 1 GB/s = 10^3 bytes per microsecond
constexpr std::uint8_t kDone = 1;
constexpr std::uint8_t kReached = 2;
constexpr std::uint8_t kWaitedOn = 4;  // some op lists it in its deps
constexpr std::uint8_t kArrived = 8;   // a send's data is at its receiver
constexpr std::size_t kCriticalPathLines = 100;

/// A time in microseconds, at most three decimals, no trailing zeros: "12.5".
std::string us(double t) {
  std::string s = fmt::format("{:.3f}", t);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

bool is_recv(OpType t) { return t == OpType::Recv || t == OpType::RecvReduce; }

// Pending receives or sends of one (from, to, channel) link of the plan, waiting for partners.
struct MatchQueue {
  std::vector<std::uint32_t> ops;
  std::size_t head = 0;
  bool sends = false;
  // Op g (a send when `sending`) arrives on the link: the partner that was waiting for it, the
  // oldest first, or kNone when it waits in turn.
  std::uint32_t enqueue(std::uint32_t g, bool sending) {
    if (head < ops.size() && sends != sending) return ops[head++];
    if (head == ops.size()) {
      ops.clear();
      head = 0;
      sends = sending;
    }
    ops.push_back(g);
    return kNone;
  }
};

enum class Kind : std::uint8_t {
  Done,       // the op completes (a send: its last byte has left)
  Arrive,     // a send's data reaches its receiver
  FlowStart,  // MaxMin: the send's flow enters the network (after per_message_us)
  Post,       // Queue: the send enters the network (after per_message_us)
};

// seq: the order events were pushed in (unique), times 4, plus the kind: ordered as the count
// alone. `next`: a Post's route in the Queue model's routes (queue_routes_), kNone otherwise.
struct Event {
  double t;
  std::uint64_t seq;
  std::uint32_t op;
  std::uint32_t next;
  Kind kind() const { return static_cast<Kind>(seq & 3); }
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  bool operator<(const Event& o) const { return o > *this; }
};
static_assert(sizeof(Event) == 24);

// What the event loop reads and writes of an op, together: at 16k ranks the ops do not fit in
// any cache, and one record per op (32 bytes, aligned: never across two lines) costs one miss
// where ten arrays cost ten.
struct alignas(32) OpRec {
  std::uint64_t bytes = 0;
  std::uint32_t match = kNone;  // send <-> its receive
  std::uint32_t route = kNone;  // sends: index into net_.routes
  std::uint32_t next = kNone;   // next op of the same (rank, channel)
  std::uint32_t crit = kNone;   // the predecessor (or matched send) that completed last
  std::uint32_t slot = 0;       // (loaded rank, channel): loaded index * nch_ + channel, for the window of sends
  OpType type = OpType::Send;
  std::uint8_t pending = 0;  // predecessors not yet complete
  std::uint8_t flags = 0;
};
static_assert(sizeof(OpRec) == 32);

struct QueueHop {
  std::uint32_t res;
  double latency_us;
  double rate;  // bytes per microsecond: bw_gbps[res] * kBytesPerUsPerGbps
};

// The Queue model's routes as a send reads them, each in one stretch of slots: a head (hop
// count, latency) and then its hops as sim::Admission takes them (profile, latency before the
// hop, rate), worked out once per simulation. A send reads one stretch of two or three cache
// lines, asked for a few events ahead (prefetch_ahead()), where it read its route, then the
// route's hops, then their profiles' addresses, each only once the one before had come in.
union QueueSlot {
  struct {
    std::uint32_t count;
    std::uint32_t stores;  // bit h: hop h starts at a network switch, which may store a message
    double latency_us;
  } head;
  sim::Admission::Hop hop;
};
static_assert(sizeof(QueueSlot) == 24);

// A simulation's large arrays, kept from one simulation to the next on a thread (a compare or
// an auto search runs a dozen, the shell many more): emptied, not freed. Fresh arrays of
// hundreds of MiB cost page faults and the kernel's zeroing of every page (an eighth of a
// 16384-rank compare), and each resource's profile its own allocations, every run again.
// Nothing is read before it is written anew: clear() / assign() as a fresh array would be.
struct Scratch {
  sim::BigVector<OpRec> ops;
  sim::BigVector<std::uint16_t> channel;
  sim::BigVector<std::uint32_t> dep_first;
  sim::BigVector<double> end;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dependents;
  std::vector<std::uint32_t> rank_begin;
  std::vector<QueueHop> queue_hops;
  sim::BigVector<QueueSlot> queue_routes;
  std::vector<std::uint32_t> queue_route_at;
  std::vector<std::uint16_t> in_flight;
  std::vector<std::uint32_t> blocked;
  sim::BigVector<sim::Profile> profile;
  std::vector<std::pair<std::uint32_t, Kind>> immediate;
  std::vector<Event> due;
  sim::EventQueue<Event> heap;
  void clear() {
    ops.clear();
    channel.clear();
    dep_first.clear();
    end.clear();
    dependents.clear();
    rank_begin.clear();
    queue_hops.clear();
    queue_routes.clear();
    queue_route_at.clear();
    in_flight.clear();
    blocked.clear();
    immediate.clear();
    due.clear();
    heap.clear();
    // Profiles are emptied when a simulation sizes them (execute()).
  }
};

// This thread's spare Scratch (none while a simulation holds it: a second one at once, were
// there ever one, would get its own).
thread_local std::unique_ptr<Scratch> t_spare;

std::unique_ptr<Scratch> take_scratch() {
  if (t_spare) return std::move(t_spare);
  return std::make_unique<Scratch>();
}

class Simulator {
 public:
  Simulator(const Plan& plan, const topo::Topology& topo, const SimOptions& opt, const sim::Fold* fold, topo::RouteCache& routes)
      : plan_(plan), topo_(topo), opt_(opt), fold_(fold), routes_(routes) {}
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;
  ~Simulator() {
    scratch_->clear();
    if (!t_spare) t_spare = std::move(scratch_);
  }

  SimResult run() {
    if (fold_) load_folded();
    else load();
    resolve_routes();
    execute();
    return report();
  }

 private:
  // ---- loading: every program into flat arrays; op ids are rank_begin_[r] + index ----------
  void load() {
    int n = plan_.nranks();
    if (n < 1) throw InputError("simulate: the plan has no ranks");
    if (static_cast<std::size_t>(n) > topo_.num_ranks())
      throw InputError("simulate: the plan has " + std::to_string(n) + " ranks but topology \"" + topo_.name + "\" maps " +
                       std::to_string(topo_.num_ranks()));
    std::vector<std::uint32_t> last_on_channel(std::size_t{1} << 16, kNone);
    std::vector<std::uint16_t> channels_used;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dep_pairs;  // (waited on, waiting)
    dep_pairs.swap(dependents_);                                     // the last simulation's memory (empty)
    rank_begin_.reserve(static_cast<std::size_t>(n) + 1);
    // match_plan() checks each op and pairs sends with receives; this keeps what the timing needs.
    ChunkSizes sizes(plan_.info());
    MatchVisitor visit;
    visit.program = [&](int r, std::uint32_t base, const std::vector<Op>& ops) {
      rank_begin_.push_back(base);
      if (std::size_t end = base + ops.size(); ops_.capacity() < end) {
        // The per-op arrays are large: sized about once rather than grown (copies, page faults).
        // A sixteenth beyond the prediction: a tree's last ranks run a few more ops than the
        // average so far, and outgrowing a prediction that was nearly exact near the end copied
        // every op into arrays half as large again (fresh pages, each zeroed by the kernel: a
        // tenth of a 16384-rank compare at 1 MiB).
        std::size_t room = ops_ahead(end, r, n, ops_.capacity());
        room += room / 16;
        ops_.reserve(room);
        channel_.reserve(room);
      }
      topo::VertexId route_dst = 0;
      int route_nic = -1;
      std::uint32_t route_cached = kNone;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        auto g = static_cast<std::uint32_t>(base + i);
        ChunkRef ref = is_recv(op.type) ? op.dst : op.src;
        ops_.push_back({});
        ops_.back().type = op.type;
        ops_.back().bytes = sizes.bytes(ref.buf, ref.chunk, op.count);
        channel_.push_back(op.channel);
        std::uint8_t pend = 0;
        std::uint32_t& last = last_on_channel[op.channel];
        nch_ = std::max<std::uint32_t>(nch_, op.channel + 1u);
        if (last == kNone) channels_used.push_back(op.channel);
        else {
          ops_[last].next = g;
          ++pend;
        }
        last = g;
        for (std::size_t k = 0; k < op.num_deps(); ++k) {
          dep_pairs.emplace_back(static_cast<std::uint32_t>(base + op.deps[k]), g);
          ++pend;
        }
        ops_[g].pending = pend;
        if ((op.type == OpType::Reduce || op.type == OpType::RecvReduce) && local_work_on_vertex()) {
          topo::VertexId v = topo_.rank_vertex(static_cast<topo::Rank>(r));
          ops_[g].route = route_id(v, v, r, r);
        }
        if (op.type != OpType::Send) continue;
        topo::VertexId dst = topo_.rank_vertex(static_cast<topo::Rank>(op.peer));
        int nic = route_code(plan_.info(), op.channel);
        if (route_cached == kNone || dst != route_dst || nic != route_nic) {
          route_cached = route_id(topo_.rank_vertex(static_cast<topo::Rank>(r)), dst, r, op.peer, nic);
          route_dst = dst;
          route_nic = nic;
        }
        ops_[g].route = route_cached;
      }
      for (std::uint16_t c : channels_used) last_on_channel[c] = kNone;
      channels_used.clear();
    };
    visit.pair = [&](std::uint32_t send, std::uint32_t recv) {
      ops_[send].match = recv;
      ops_[recv].match = send;
    };
    try {
      match_plan(plan_, visit);
    } catch (const PlanFault& e) {
      throw InputError(std::string("simulate: ") + e.what());
    }
    rank_begin_.push_back(static_cast<std::uint32_t>(ops_.size()));
    finish_load(std::move(dep_pairs));
  }

  void finish_load(std::vector<std::pair<std::uint32_t, std::uint32_t>> dep_pairs) {
    if (opt_.critical_path) end_.assign(ops_.size(), 0.0);
    // Ops waiting on an op through deps: few, so a sorted list and a flag on the op waited on
    // rather than a per-op index.
    std::stable_sort(dep_pairs.begin(), dep_pairs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [a, b] : dep_pairs) ops_[a].flags |= kWaitedOn;
    dependents_ = std::move(dep_pairs);
    if (dependents_.size() >= kNone) throw InputError("simulate: too many deps (" + std::to_string(dependents_.size()) + ")");
    // Where each op's waiting ops start in dependents_ (an index, not a binary search per op done).
    // (None without deps: no op is then flagged kWaitedOn, and on_done() never looks.)
    if (!dependents_.empty()) {
      dep_first_.assign(ops_.size() + 1, 0);
      for (const auto& d : dependents_) ++dep_first_[d.first + 1];
      for (std::size_t g = 0; g < ops_.size(); ++g) dep_first_[g + 1] += dep_first_[g];
    }
    // Each op's (loaded rank, channel) slot, for its window of sends in flight.
    if (static_cast<double>(rank_begin_.size() - 1) * nch_ >= static_cast<double>(kNone))
      throw InputError("simulate: too many (rank, channel) pairs (" + std::to_string(rank_begin_.size() - 1) + " ranks x " +
                       std::to_string(nch_) + " channels)");
    for (std::size_t i = 0; i + 1 < rank_begin_.size(); ++i)
      for (std::uint32_t g = rank_begin_[i]; g < rank_begin_[i + 1]; ++g) ops_[g].slot = static_cast<std::uint32_t>(i) * nch_ + channel_[g];
  }

  // The representative threads only (simulate_symmetry.h): each stands for its orbit. A send of
  // representative (r, c) to b meets the receive of whichever representative holds the image of
  // thread (b, c) under the element that maps ... the pair onto one with a representative
  // sender: both ends name the link by that pair, (sender representative, image of the
  // receiver). A dep on a thread that is not a representative waits for the op at the same
  // place of that thread's representative, which runs as it does. Errors here are not worded
  // for users: simulate() reruns an unfoldable plan unfolded, which names the op.
  void load_folded() {
    const sim::Fold& f = *fold_;
    int n = plan_.nranks();
    if (static_cast<std::size_t>(n) > topo_.num_ranks()) throw InputError("simulate: more ranks than the topology");
    auto nch = static_cast<std::uint32_t>(f.nch);
    nch_ = nch;
    struct LaterDep {
      std::uint32_t waiting, thread, pos;
    };
    std::vector<LaterDep> later;
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> thread_ops;  // representative -> its ops, in order
    std::unordered_map<std::uint64_t, MatchQueue> queues;
    auto fail = [] { throw InputError("simulate: the plan does not fold"); };
    for (int r : f.ranks) {
      std::vector<Op> ops = plan_.program(r);
      rank_begin_.push_back(static_cast<std::uint32_t>(ops_.size()));
      std::vector<std::uint32_t> pos(ops.size()), seen(nch, 0);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].channel >= nch) fail();
        pos[i] = seen[ops[i].channel]++;
      }
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        auto tid = static_cast<std::uint32_t>(r) * nch + op.channel;
        if (!f.is_rep(tid)) continue;
        auto g = static_cast<std::uint32_t>(ops_.size());
        ops_.push_back({});
        ops_.back().type = op.type;
        ops_.back().bytes = op_bytes(op, r, i);
        channel_.push_back(op.channel);
        index_.push_back(static_cast<std::uint32_t>(i));
        peer_.push_back(op.peer);
        std::uint8_t pend = 0;
        std::vector<std::uint32_t>& mine = thread_ops[tid];
        if (!mine.empty()) {
          ops_[mine.back()].next = g;
          ++pend;
        }
        mine.push_back(g);
        for (std::size_t k = 0; k < op.num_deps(); ++k) {
          std::uint32_t d = op.deps[k];
          if (d >= i) fail();
          later.push_back({g, f.rep[static_cast<std::uint32_t>(r) * nch + ops[d].channel], pos[d]});
          ++pend;
        }
        ops_[g].pending = pend;
        if ((op.type == OpType::Reduce || op.type == OpType::RecvReduce) && local_work_on_vertex()) {
          topo::VertexId v = topo_.rank_vertex(static_cast<topo::Rank>(r));
          ops_[g].route = route_id(v, v, r, r);
        }
        if (op.type != OpType::Send && !is_recv(op.type)) continue;
        if (op.peer < 0 || op.peer >= n || op.peer == r) fail();
        bool sending = op.type == OpType::Send;
        std::uint64_t from = static_cast<std::uint64_t>(r), to = static_cast<std::uint64_t>(op.peer), ch = op.channel;
        if (!sending) {
          auto st = static_cast<std::uint32_t>(op.peer) * nch + op.channel;
          std::uint32_t e = f.elem[st], rt = f.rep[st];
          from = rt / nch;
          ch = rt % nch;
          to = static_cast<std::uint64_t>(f.rank[e][static_cast<std::size_t>(r)]);
        }
        if (std::uint32_t other = queues[(from << 40) | (to << 16) | ch].enqueue(g, sending); other != kNone) {
          if (ops_[g].bytes != ops_[other].bytes) {
            // A size that does not divide: the sides are images of each other's threads and move
            // within one element a chunk of 1000 or more (symmetric_chunks()); the send counts.
            std::uint64_t hi = std::max(ops_[g].bytes, ops_[other].bytes), lo = std::min(ops_[g].bytes, ops_[other].bytes);
            if (hi - lo > hi / 1000) fail();
            ops_[sending ? other : g].bytes = ops_[sending ? g : other].bytes;
          }
          ops_[g].match = other;
          ops_[other].match = g;
        }
        if (sending)
          ops_[g].route = route_id(topo_.rank_vertex(static_cast<topo::Rank>(r)), topo_.rank_vertex(static_cast<topo::Rank>(op.peer)), r,
                                   op.peer, route_code(plan_.info(), op.channel));
      }
    }
    rank_begin_.push_back(static_cast<std::uint32_t>(ops_.size()));
    for (const auto& [key, q] : queues)
      if (q.head < q.ops.size()) fail();
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dep_pairs;
    for (const LaterDep& d : later) {
      auto it = thread_ops.find(d.thread);
      if (it == thread_ops.end() || d.pos >= it->second.size()) fail();
      dep_pairs.emplace_back(it->second[d.pos], d.waiting);
    }
    finish_load(std::move(dep_pairs));
  }

  std::uint64_t op_bytes(const Op& op, int r, std::size_t i) const {
    ChunkRef ref = (op.type == OpType::Recv || op.type == OpType::RecvReduce) ? op.dst : op.src;
    std::uint32_t chunks = buffer_chunks(plan_.info(), ref.buf);
    if (std::uint64_t{ref.chunk} + op.count > chunks)
      throw InputError(where(r, i) + ": chunks [" + std::to_string(ref.chunk) + ", " +
                       std::to_string(std::uint64_t{ref.chunk} + op.count) + ") of the " + std::string(to_string(ref.buf)) +
                       " buffer are out of range (" + std::to_string(chunks) + " chunks)");
    return chunk_bytes(plan_.info(), ref.buf, ref.chunk, op.count);
  }

  static std::string where(int r, std::size_t i) { return "rank " + std::to_string(r) + " op " + std::to_string(i); }

  // Which loaded rank holds op g (all ranks are loaded unless threads are folded).
  std::size_t loaded_of(std::uint32_t g) const {
    auto it = std::upper_bound(rank_begin_.begin(), rank_begin_.end(), g);
    return static_cast<std::size_t>(it - rank_begin_.begin()) - 1;
  }
  int rank_of(std::uint32_t g) const { return fold_ ? fold_->ranks[loaded_of(g)] : static_cast<int>(loaded_of(g)); }
  std::uint32_t index_of(std::uint32_t g) const { return fold_ ? index_[g] : g - rank_begin_[loaded_of(g)]; }
  int peer_of(std::uint32_t g) const { return fold_ ? peer_[g] : rank_of(ops_[g].match); }

  // ---- routes: one routes_from() per distinct source vertex, only for pairs that talk --------
  // A send on a channel that names a NIC (PlanInfo::channel_nics) takes the route through it;
  // one on a channel staged through host memory (PlanInfo::channel_paths) the PCIe path.
  static int route_code(const PlanInfo& info, int channel) {
    return channel_path(info, channel) == ChannelPath::Host ? sim::kHostPath : channel_nic(info, channel);
  }

  struct RouteNeed {
    topo::VertexId src, dst;
    int rank_a, rank_b;
    int nic = -1;
  };

  std::uint32_t route_id(topo::VertexId src, topo::VertexId dst, int ra, int rb, int nic = -1) {
    std::uint64_t key = FlatIndex::pair(src, dst);
    FlatIndex& index = nic == -1 ? route_index_ : nic_route_index_[nic];
    std::uint32_t id = index.find(key);
    if (id != FlatIndex::kNone) return id;
    id = static_cast<std::uint32_t>(needs_.size());
    index.emplace(key, id);
    needs_.push_back({src, dst, ra, rb, nic});
    return id;
  }

  // A resource as the folded simulation knows it: its orbit's representative.
  std::uint32_t folded(std::uint32_t res) const {
    if (!fold_) return res;
    std::uint32_t rep = fold_->representative(res);
    if (rep == sim::Fold::kNoResource) throw InputError("simulate: a route the symmetry check did not see");  // rerun unfolded
    return rep;
  }

  void resolve_routes() {
    std::size_t links = topo_.num_links();
    net_.bw_gbps.assign(2 * links + topo_.num_vertices(), 0.0);
    for (std::size_t l = 0; l < links; ++l) net_.bw_gbps[2 * l] = net_.bw_gbps[2 * l + 1] = topo_.link(static_cast<topo::LinkId>(l)).bw_gbps;
    for (std::size_t v = 0; v < topo_.num_vertices(); ++v)
      net_.bw_gbps[2 * links + v] = topo_.vertex(static_cast<topo::VertexId>(v)).local_bw_gbps;
    net_.bytes.assign(net_.bw_gbps.size(), 0);
    net_.busy_us.assign(net_.bw_gbps.size(), 0.0);
    net_.routes.resize(needs_.size());
    std::vector<std::uint32_t> order(needs_.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return needs_[a].src < needs_[b].src; });
    // Per source vertex, the routes to exactly the vertices it talks to (early-stopping searches).
    std::vector<const topo::Path*> paths(needs_.size());
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      std::vector<topo::VertexId> dsts;
      while (j < order.size() && needs_[order[j]].src == needs_[order[i]].src) dsts.push_back(needs_[order[j++]].dst);
      auto found = routes_.routes_to(needs_[order[i]].src, dsts);
      for (std::size_t k = i; k < j; ++k) paths[order[k]] = found[k - i];
      i = j;
    }
    // Routes through a named NIC (few: one a rank pair and NIC), joined from the cached legs.
    std::deque<topo::Path> through;
    if (!nic_route_index_.empty()) {
      sim::NicRoutes nr(topo_, routes_);
      sim::HostRoutes hr(topo_);
      for (std::uint32_t k = 0; k < needs_.size(); ++k) {
        const RouteNeed& need = needs_[k];
        if (need.nic == -1 || need.src == need.dst) continue;
        std::string why;
        bool host = need.nic == sim::kHostPath;
        through.push_back(host ? hr.route(need.src, need.dst, &why) : nr.route(need.src, need.dst, need.nic, &why));
        if (!through.back().found)
          throw InputError("simulate: no route from rank " + std::to_string(need.rank_a) + " to rank " + std::to_string(need.rank_b) +
                           (host ? std::string(" staged through host memory (channel_paths): ")
                                 : " through NIC " + std::to_string(need.nic) + " (channel_nics): ") +
                           why);
        paths[k] = &through.back();
      }
    }
    for (std::uint32_t k : order) {
      const RouteNeed& need = needs_[k];
      Route& route = net_.routes[k];
      route.first = static_cast<std::uint32_t>(net_.hop_res.size());
      if (need.src == need.dst) {
        double bw = topo_.vertex(need.src).local_bw_gbps;
        if (bw > 0) {
          net_.hop_res.push_back(folded(static_cast<std::uint32_t>(2 * links + need.src)));
          net_.hop_lat_us.push_back(0.0);
          route.count = 1;
          route.bottleneck_gbps = bw;
        }
        continue;
      }
      const topo::Path& p = *paths[k];
      if (!p.found)
        throw InputError("simulate: no route from rank " + std::to_string(need.rank_a) + " (vertex \"" + topo_.vertex(need.src).id +
                         "\") to rank " + std::to_string(need.rank_b) + " (vertex \"" + topo_.vertex(need.dst).id + "\")");
      for (const topo::Hop& h : p.hops) {
        net_.hop_res.push_back(folded(static_cast<std::uint32_t>(h.channel())));
        net_.hop_lat_us.push_back(topo_.link(h.link).latency_us);
      }
      route.count = static_cast<std::uint32_t>(p.hops.size());
      route.latency_us = p.latency_us;
      route.bottleneck_gbps = p.bottleneck_gbps;
    }
    // The Queue model's view of the hops: resource, latency and rate side by side (the same
    // product the rate always was, so every division gives what it gave).
    queue_hops_.resize(net_.hop_res.size());
    for (std::size_t h = 0; h < queue_hops_.size(); ++h)
      queue_hops_[h] = {net_.hop_res[h], net_.hop_lat_us[h], net_.bw_gbps[net_.hop_res[h]] * kBytesPerUsPerGbps};
  }

  // ---- the event loop ---------------------------------------------------------------------
  double local_cost(std::uint64_t bytes) const {
    return opt_.reduce_gbps > 0 ? static_cast<double>(bytes) / (opt_.reduce_gbps * kBytesPerUsPerGbps) : 0.0;
  }
  double recv_cost(std::uint32_t g) const { return ops_[g].type == OpType::RecvReduce ? local_cost(ops_[g].bytes) : 0.0; }

  void push(double t, std::uint32_t op, Kind kind) {
    const OpRec& o = ops_[op];
    std::uint32_t next = kind == Kind::Post ? queue_route_at_[o.route] : kNone;
    heap_.push({t, (seq_++ << 2) | static_cast<std::uint64_t>(kind), op, next});
  }

  // Hints (nothing here changes state) for the ops that the entries after entry k of a list of
  // (op, kind) (due_ or immediate_: at(i) gives entry i, n of them) will read, in stages that
  // follow the chain of reads, each stage nearer its entry than the stage whose data it reads:
  // the op (10 entries ahead); the op it leads to (8: a Done's next op of its (rank, channel),
  // an Arrive's receive) and that receive's next op or the send waiting for room (6); where the
  // op started next is a send the Queue model admits, its route (4), the route's profiles (2)
  // and their segments (1). A send's walk from op to segments missed the caches at each step,
  // one miss after another; this way the misses of several entries overlap. The events of one
  // instant are tens on a large tree, and so are the ops completing at once.
  template <class At>
  void prefetch_ahead(At at, std::size_t n, std::size_t k) const {
    if (k + 10 < n) __builtin_prefetch(&ops_[at(k + 10).first]);
    if (k + 8 < n) {
      auto [op, kind] = at(k + 8);
      if (kind == Kind::Done && opt_.critical_path) __builtin_prefetch(&end_[op]);
      std::uint32_t p = kind == Kind::Done ? ops_[op].next : kind == Kind::Arrive ? ops_[op].match : kNone;
      if (p != kNone) __builtin_prefetch(&ops_[p]);
    }
    if (k + 6 < n) {
      auto [op, kind] = at(k + 6);
      if (kind == Kind::Arrive) {
        if (std::uint32_t f = ops_[ops_[op].match].next; f != kNone) __builtin_prefetch(&ops_[f]);
        if (std::uint32_t b = blocked_[ops_[op].slot]; b != kNone) __builtin_prefetch(&ops_[b]);
      }
    }
    if (opt_.model != LinkModel::Queue) return;
    if (k + 4 < n) {
      if (const QueueSlot* r = route_ahead(at(k + 4))) {
        const char* line = reinterpret_cast<const char*>(r);
        __builtin_prefetch(line);
        __builtin_prefetch(line + 64);
        __builtin_prefetch(line + 128);
      }
    }
    if (k + 2 < n) {
      if (const QueueSlot* r = route_ahead(at(k + 2)))
        for (std::uint32_t h = 0; h < r->head.count; ++h) __builtin_prefetch(r[1 + h].hop.profile);
    }
    if (k + 1 < n) {
      if (const QueueSlot* r = route_ahead(at(k + 1)))
        for (std::uint32_t h = 0; h < r->head.count; ++h) r[1 + h].hop.profile->prefetch();
    }
  }

  // The Queue route of the send that (op, kind) admits or may start at once: a Post's own, a
  // Done's next op's of its (rank, channel), an Arrive's send waiting for room in the window or
  // else the receive's next op's. Null where that is no send.
  const QueueSlot* route_ahead(std::pair<std::uint32_t, Kind> entry) const {
    auto [op, kind] = entry;
    if (kind == Kind::Arrive) {
      // The send waiting for room in op's window, posted on its arrival.
      std::uint32_t k = ops_[op].slot;
      if (in_flight_[k] >= static_cast<std::uint16_t>(window_) && blocked_[k] != kNone) return route_of(blocked_[k]);
    }
    std::uint32_t f = kind == Kind::Done     ? ops_[op].next
                      : kind == Kind::Arrive ? ops_[ops_[op].match].next
                      : kind == Kind::Post   ? op
                                             : kNone;
    return f == kNone ? nullptr : route_of(f);
  }
  const QueueSlot* route_of(std::uint32_t send) const {
    const OpRec& o = ops_[send];
    if (o.type != OpType::Send || o.route == kNone) return nullptr;
    return &queue_routes_[queue_route_at_[o.route]];
  }

  void finish_at(std::uint32_t g, double t) {
    if (t <= now_) immediate_.push_back({g, Kind::Done});
    else push(t, g, Kind::Done);
  }

  void arrive_at(std::uint32_t g, double t) {
    if (t <= now_) immediate_.push_back({g, Kind::Arrive});
    else push(t, g, Kind::Arrive);
  }

  // The (rank, channel) a send belongs to, for its window of messages in flight.
  std::uint32_t slot(std::uint32_t g) const { return ops_[g].slot; }

  void start(std::uint32_t g) {
    switch (ops_[g].type) {
      case OpType::Copy: finish_at(g, now_ + local_cost(ops_[g].bytes)); break;
      case OpType::Reduce:
        if (on_vertex(g)) local_work(g);
        else finish_at(g, now_ + local_cost(ops_[g].bytes));
        break;
      case OpType::Recv:
      case OpType::RecvReduce:
        ops_[g].flags |= kReached;
        if (ops_[ops_[g].match].flags & kArrived) finish_recv(g);
        break;
      case OpType::Send: {
        // At most max_in_flight sends of a (rank, channel) on their way; one more waits for the
        // oldest to arrive (arrival never waits on the receiver, so the window cannot deadlock).
        std::uint16_t& n = in_flight_[slot(g)];
        if (n >= static_cast<std::uint16_t>(window_)) {
          // The ops after g on its (rank, channel) wait for g: no other send of it waits.
          if (blocked_[slot(g)] != kNone) throw std::logic_error("simulate: two sends of one (rank, channel) wait for room");
          blocked_[slot(g)] = g;
          break;
        }
        ++n;
        post(g);
        break;
      }
    }
  }

  void book(std::uint32_t res, std::uint64_t bytes, double occupied_us) {
    if (opt_.top_links == 0) return;  // nothing reads them
    net_.bytes[res] += bytes;
    net_.busy_us[res] += occupied_us;
  }

  // A send enters the network per_message_us after it is posted.
  void post(std::uint32_t g) {
    if (opt_.per_message_us > 0) push(now_ + opt_.per_message_us, g, opt_.model == LinkModel::Queue ? Kind::Post : Kind::FlowStart);
    else if (opt_.model == LinkModel::Queue) queue_send(g, queue_route_at_[ops_[g].route]);
    else flow_start(g);
  }

  // Queue: from its post on, the transfer takes at every moment what all of its hops have left
  // (sim::Admission, the file's header). The send completes when its last byte has left and its
  // data arrives a route latency later.
  // `at`: the send's route in queue_routes_.
  void queue_send(std::uint32_t g, std::uint32_t at) {
    const QueueSlot* route = &queue_routes_[at];
    std::uint32_t count = route->head.count;
    if (count == 0) {
      finish_at(g, now_);
      arrive_at(g, now_);
      return;
    }
    const sim::Admission::Hop* hops = &route[1].hop;
    // The hops' profiles, then their segments, fetched together rather than one miss after
    // another (hints only: nothing below changes).
    for (std::uint32_t h = 0; h < count; ++h) __builtin_prefetch(hops[h].profile);
    for (std::uint32_t h = 0; h < count; ++h) hops[h].profile->prefetch();
    std::uint64_t bytes = ops_[g].bytes;
    if (opt_.top_links > 0)
      for (std::uint32_t h = 0; h < count; ++h)
        book(static_cast<std::uint32_t>(hops[h].profile - profile_.data()), bytes, static_cast<double>(bytes) / hops[h].rate);
    // A message a switch can store whole waits in front of a busy hop behind it while the hops
    // before go on; a larger one moves on all of its hops at once (SimOptions::queue_store_bytes).
    auto size = static_cast<double>(bytes);
    sim::Admission::Admitted done =
        admission_.admit(hops, count, now_, size, now_, size <= opt_.queue_store_bytes ? route->head.stores : 0u);
    finish_at(g, done.left);
    arrive_at(g, done.last + route->head.latency_us);
  }

  // The hops of route r (up to 32) that start at a network switch (a leaf, spine or torus
  // router): a message may wait whole in front of such a hop (SimOptions::queue_store_bytes).
  // Inside a host, PCIe, NVLink and xGMI hold a sender back hop by hop.
  std::uint32_t stores(const Route& r) const {
    std::uint32_t mask = 0;
    for (std::uint32_t h = 1; h < std::min<std::uint32_t>(r.count, 32); ++h) {
      std::uint32_t res = queue_hops_[r.first + h].res;
      if (res >= 2 * topo_.num_links()) continue;  // a vertex's own copy engine
      const topo::Link& link = topo_.link(res / 2);
      if (topo_.vertex(res % 2 == 0 ? link.a : link.b).kind == topo::VertexKind::NetSwitch) mask |= 1u << h;
    }
    return mask;
  }

  // queue_routes_ for this simulation's profiles (the lambdas summed as queue_send() summed them).
  void lay_out_queue_routes() {
    queue_route_at_.resize(net_.routes.size());
    queue_routes_.clear();
    // Its size exactly, once: growing by doubling copied it (a million routes: 15% of a pairwise
    // AllGather's simulation on 1024 ranks) and touched each new block's pages afresh.
    std::size_t slots = net_.routes.size();
    for (const Route& r : net_.routes) slots += r.count;
    queue_routes_.reserve(slots);
    for (std::size_t k = 0; k < net_.routes.size(); ++k) {
      const Route& r = net_.routes[k];
      queue_route_at_[k] = static_cast<std::uint32_t>(queue_routes_.size());
      QueueSlot head{};
      head.head = {r.count, stores(r), r.latency_us};
      queue_routes_.push_back(head);
      double lambda = 0;
      for (std::uint32_t h = r.first; h < r.first + r.count; ++h) {
        QueueSlot hop{};
        hop.hop = {&profile_[queue_hops_[h].res], lambda, queue_hops_[h].rate};
        queue_routes_.push_back(hop);
        lambda += queue_hops_[h].latency_us;
      }
    }
    if (queue_routes_.size() >= kNone) throw InputError("simulate: too many route hops (" + std::to_string(queue_routes_.size()) + ")");
  }

  // ---- a calibrated topology's local work (the file's header) -------------------------------
  // Reductions are work of the rank's vertex when the topology carries a calibration;
  // uncalibrated they cost what they always did. The route of such an op (load()) is its vertex's
  // local resource: one hop, no latency; none (count 0) when the vertex's rate is not known.
  bool local_work_on_vertex() const { return topo_.calibration.has_value(); }
  bool on_vertex(std::uint32_t g) const { return ops_[g].route != kNone && net_.routes[ops_[g].route].count > 0; }

  // How long reduction g holds its vertex's resource alone: the rate the vertex's ranks reduce
  // at together. With the calibration's core count known, no more of them reduce at once than
  // there are cores (more ranks than cores take turns on them).
  double local_work_us(std::uint32_t g) {
    auto bytes = static_cast<double>(ops_[g].bytes);
    if (opt_.reduce_gbps <= 0) return 0;
    if (ranks_on_.empty())
      for (int r = 0; r < plan_.nranks(); ++r) ++ranks_on_[topo_.rank_vertex(static_cast<topo::Rank>(r))];
    double k = ranks_on_[topo_.rank_vertex(static_cast<topo::Rank>(rank_of(g)))];
    if (int cores = topo_.calibration->cores; cores > 0) k = std::min(k, static_cast<double>(cores));
    return bytes / (k * reduce_rate(g) * kBytesPerUsPerGbps);
  }

  // One rank's reduction rate for op g: reduce_gbps, times core_cache_factor when its three
  // operands (two inputs and the output, bytes each) fit in a core's own cache.
  double reduce_rate(std::uint32_t g) const {
    const topo::Calibration& cal = *topo_.calibration;
    bool in_core = cal.core_cache_bytes > 0 && 3 * static_cast<double>(ops_[g].bytes) <= static_cast<double>(cal.core_cache_bytes);
    return in_core ? opt_.reduce_gbps * cal.core_cache_factor : opt_.reduce_gbps;
  }

  // With the core count known, one reduction runs on one core: never faster than bytes / its
  // rate, even alone on its vertex (0: no such floor, as calibrations without it had).
  double one_core_us(std::uint32_t g) const {
    if (topo_.calibration->cores <= 0 || opt_.reduce_gbps <= 0) return 0;
    return static_cast<double>(ops_[g].bytes) / (reduce_rate(g) * kBytesPerUsPerGbps);
  }

  // Op g's work on its vertex: it completes when the resource has given it local_work_us().
  // MaxMin: a flow of the bytes a transfer would move in that time, so that it shares the
  // resource with the transfers as they share it among themselves (one_core_us()'s floor is the
  // Queue model's only: a MaxMin flow has no rate limit of its own).
  void local_work(std::uint32_t g) {
    const Route& r = net_.routes[ops_[g].route];
    double occupied = local_work_us(g);
    if (occupied <= 0) return finish_at(g, now_);
    std::uint32_t res = net_.hop_res[r.first];
    book(res, ops_[g].bytes, occupied);
    if (opt_.model == LinkModel::MaxMin) return maxmin_->add(g, ops_[g].route, occupied * net_.bw_gbps[res] * kBytesPerUsPerGbps);
    // The vertex's rate for that long, taken as a transfer takes a link (sim::Admission), and no
    // sooner than one core does it alone.
    const QueueHop& hop = queue_hops_[r.first];
    sim::Admission::Hop on{&profile_[hop.res], 0, hop.rate};
    double done = admission_.admit(&on, 1, now_, occupied * hop.rate, now_).left;
    finish_at(g, std::max(done, now_ + one_core_us(g)));
  }

  // A receive whose data is there and that was reached: done, after its reduction if it has one.
  void finish_recv(std::uint32_t g) {
    if (ops_[g].type == OpType::RecvReduce && on_vertex(g)) local_work(g);
    else finish_at(g, now_ + recv_cost(g));
  }

  void flow_start(std::uint32_t g) {
    const Route& r = net_.routes[ops_[g].route];
    if (r.count == 0 || ops_[g].bytes == 0) {
      finish_at(g, now_);
      arrive_at(g, now_ + r.latency_us);
      return;
    }
    for (std::uint32_t h = r.first; h < r.first + r.count; ++h) {
      std::uint32_t res = net_.hop_res[h];
      book(res, ops_[g].bytes, static_cast<double>(ops_[g].bytes) / (net_.bw_gbps[res] * kBytesPerUsPerGbps));
    }
    maxmin_->add(g, ops_[g].route, static_cast<double>(ops_[g].bytes));
  }

  // A send's data is at its receiver: the receive may complete, and the send's window has room.
  void on_arrive(std::uint32_t g) {
    ops_[g].flags |= kArrived;
    std::uint32_t r = ops_[g].match;
    if (ops_[r].flags & kReached) {
      ops_[r].crit = g;  // the data came last
      finish_recv(r);
    }
    std::uint32_t k = slot(g);
    // Sends wait only behind a full window: below it none is blocked, and no lookup is needed.
    if (in_flight_[k] < static_cast<std::uint16_t>(window_)) {
      --in_flight_[k];
      return;
    }
    std::uint32_t next = blocked_[k];
    if (next == kNone) {
      --in_flight_[k];
      return;
    }
    blocked_[k] = kNone;
    post(next);
  }

  void on_done(std::uint32_t g) {
    ops_[g].flags |= kDone;
    if (opt_.critical_path) end_[g] = now_;
    last_done_ = g;  // time never goes back: the last op done is one of those ending last
    now_at_last_done_ = now_;
    ++completed_;
    auto wake = [&](std::uint32_t s) {
      if (--ops_[s].pending == 0) {
        ops_[s].crit = g;
        start(s);
      }
    };
    if (ops_[g].next != kNone) wake(ops_[g].next);
    if (ops_[g].flags & kWaitedOn) {
      for (std::uint32_t k = dep_first_[g]; k < dep_first_[g + 1]; ++k) wake(dependents_[k].second);
    }
  }

  void execute() {
    window_ = std::max(1, opt_.max_in_flight);
    in_flight_.assign((rank_begin_.size() - 1) * nch_, 0);
    blocked_.assign(in_flight_.size(), kNone);
    if (opt_.model == LinkModel::Queue) {
      // Empty profiles, as fresh ones would be, each keeping the memory of the run before.
      profile_.resize(net_.bw_gbps.size());
      for (sim::Profile& p : profile_) p.clear();
      lay_out_queue_routes();
    } else maxmin_ = std::make_unique<sim::MaxMinSharing>(net_);
    for (std::uint32_t g = 0; g < ops_.size(); ++g)
      if (ops_[g].pending == 0) start(g);
    std::vector<std::uint32_t> tags, routes;
    constexpr double inf = std::numeric_limits<double>::infinity();
    constexpr std::size_t kReportEvery = std::size_t{1} << 16;
    std::size_t next_report = kReportEvery;
    for (;;) {
      if (opt_.progress && completed_ >= next_report) {
        opt_.progress(completed_, ops_.size());
        next_report = completed_ + kReportEvery;
      }
      for (std::size_t k = 0; k < immediate_.size(); ++k) {
        prefetch_ahead([this](std::size_t i) { return immediate_[i]; }, immediate_.size(), k);
        auto [op, kind] = immediate_[k];
        if (kind == Kind::Arrive) on_arrive(op);
        else on_done(op);
      }
      immediate_.clear();
      double next = heap_.empty() ? inf : heap_.top().t;
      if (maxmin_ && !maxmin_->empty()) {
        double t = maxmin_->next_completion();
        if (t <= next) {
          maxmin_->advance(t);
          now_ = std::max(now_, t);
          tags.clear();
          routes.clear();
          maxmin_->take_finished(tags, routes);
          for (std::size_t k = 0; k < tags.size(); ++k) {
            finish_at(tags[k], now_);
            if (ops_[tags[k]].type != OpType::Send) continue;  // local_work(): it arrives nowhere
            arrive_at(tags[k], now_ + net_.routes[routes[k]].latency_us);
          }
          continue;
        }
      }
      if (heap_.empty()) break;
      now_ = next;
      if (maxmin_) maxmin_->advance(now_);
      // Everything due at this instant, before rates are recomputed once for all of it: taken
      // from the queue together (tens of events an instant on a large tree), so that what each
      // will read is asked for several events ahead (prefetch_ahead()). The order is the
      // queue's: an event pushed meanwhile is later than all of them (a time >= now_ and a
      // larger seq), and is taken with the next lot.
      while (!heap_.empty() && heap_.top().t == next) {
        due_.clear();
        while (!heap_.empty() && heap_.top().t == next) due_.push_back(heap_.pop());
        for (std::size_t k = 0; k < due_.size(); ++k) {
          prefetch_ahead([this](std::size_t i) { return std::pair{due_[i].op, due_[i].kind()}; }, due_.size(), k);
          const Event& e = due_[k];
          switch (e.kind()) {
            case Kind::Done: on_done(e.op); break;
            case Kind::Arrive: on_arrive(e.op); break;
            case Kind::FlowStart: flow_start(e.op); break;
            case Kind::Post: queue_send(e.op, e.next); break;
          }
        }
      }
    }
    if (completed_ < ops_.size()) deadlock();
  }

  std::string describe(std::uint32_t g) const {
    std::string s = where(rank_of(g), index_of(g)) + " " + std::string(to_string(ops_[g].type));
    if (ops_[g].type == OpType::Send) s += " to " + std::to_string(peer_of(g));
    if (is_recv(ops_[g].type)) s += " from " + std::to_string(peer_of(g));
    return s + " ch " + std::to_string(channel_[g]);
  }

  [[noreturn]] void deadlock() const {
    // The receives that were reached but whose send never ran hold everything up; when there
    // are none, the ops wait on each other through deps.
    std::vector<std::string> stuck;
    std::size_t left = ops_.size() - completed_;
    for (std::uint32_t g = 0; g < ops_.size() && stuck.size() < 4; ++g)
      if (!(ops_[g].flags & kDone) && (ops_[g].flags & kReached)) stuck.push_back(describe(g) + " waits for " + describe(ops_[g].match));
    for (std::uint32_t g = 0; g < ops_.size() && stuck.empty(); ++g)
      if (!(ops_[g].flags & kDone)) stuck.push_back(describe(g) + " waits on a cycle of deps");
    std::string msg =
        "simulate: the plan deadlocks: " + std::to_string(left) + " of " + std::to_string(ops_.size()) + " ops never complete; stuck: ";
    for (std::size_t k = 0; k < stuck.size(); ++k) msg += (k ? "; " : "") + stuck[k];
    throw InputError(msg);
  }

  // ---- the result -------------------------------------------------------------------------
  SimResult report() const {
    SimResult res;
    std::uint32_t last = last_done_;
    for (std::uint32_t g = 0; g < ops_.size(); ++g)
      if (!is_recv(ops_[g].type)) ++res.events;
    if (fold_) {
      res.events *= fold_->size();  // each thread stands for its orbit
      res.folded = fold_->size();
    }
    res.time_us = last == kNone ? 0.0 : now_at_last_done_;
    const Request& req = plan_.info().req;
    res.algbw_gbps = algbw_gbps(req.bytes, res.time_us);
    res.busbw_gbps = res.algbw_gbps * busbw_factor(req.coll, req.nranks);

    std::vector<std::uint32_t> used;
    for (std::uint32_t k = 0; k < 2 * topo_.num_links(); ++k)
      if (net_.bytes[k] > 0) used.push_back(k);
    std::size_t top = std::min(opt_.top_links, used.size());
    std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top), used.end(), [&](std::uint32_t a, std::uint32_t b) {
      return net_.busy_us[a] != net_.busy_us[b] ? net_.busy_us[a] > net_.busy_us[b] : a < b;
    });
    for (std::size_t k = 0; k < top; ++k)
      res.busiest.push_back({static_cast<topo::LinkId>(used[k] / 2), used[k] % 2 == 0, net_.bytes[used[k]], net_.busy_us[used[k]]});

    if (!opt_.critical_path) return res;
    std::vector<std::uint32_t> chain;
    for (std::uint32_t g = last; g != kNone; g = ops_[g].crit) chain.push_back(g);
    std::reverse(chain.begin(), chain.end());
    std::size_t skip = chain.size() > kCriticalPathLines ? chain.size() - (kCriticalPathLines - 1) : 0;
    if (skip > 0) res.critical_path.push_back("(" + std::to_string(skip) + " earlier ops)");
    for (std::size_t k = skip; k < chain.size(); ++k) res.critical_path.push_back(describe(chain[k]) + " ends " + us(end_[chain[k]]) + " us");
    return res;
  }

  const Plan& plan_;
  const topo::Topology& topo_;
  const SimOptions& opt_;
  const sim::Fold* fold_;
  std::vector<std::uint32_t> index_;  // folded: each op's index in its rank's program
  std::vector<std::int32_t> peer_;    // folded: each send's or receive's peer in the plan

  std::unique_ptr<Scratch> scratch_ = take_scratch();  // the arrays below
  std::vector<std::uint32_t>& rank_begin_ = scratch_->rank_begin;
  sim::BigVector<OpRec>& ops_ = scratch_->ops;
  sim::BigVector<std::uint16_t>& channel_ = scratch_->channel;
  std::vector<std::pair<std::uint32_t, std::uint32_t>>& dependents_ = scratch_->dependents;  // (op, op waiting on it), sorted
  sim::BigVector<std::uint32_t>& dep_first_ = scratch_->dep_first;  // op g's waiting ops: dependents_[dep_first_[g], dep_first_[g + 1])
  sim::BigVector<double>& end_ = scratch_->end;

  FlatIndex route_index_;                     // (source, destination vertex) -> into needs_
  std::map<int, FlatIndex> nic_route_index_;  // per NIC named
  std::vector<RouteNeed> needs_;
  Network net_;
  std::vector<QueueHop>& queue_hops_ = scratch_->queue_hops;  // per hop of net_.routes, as net_.hop_res
  sim::BigVector<QueueSlot>& queue_routes_ = scratch_->queue_routes;       // Queue: the routes as sends read them
  std::vector<std::uint32_t>& queue_route_at_ = scratch_->queue_route_at;  // Queue: each route's head in queue_routes_

  sim::EventQueue<Event>& heap_ = scratch_->heap;
  std::vector<std::pair<std::uint32_t, Kind>>& immediate_ = scratch_->immediate;  // ops completing (or arriving) now
  std::vector<Event>& due_ = scratch_->due;                                       // the heap's events due now, in order
  std::uint64_t seq_ = 0;
  double now_ = 0;
  std::size_t completed_ = 0;
  std::uint32_t last_done_ = kNone;
  double now_at_last_done_ = 0;                             // its end
  sim::BigVector<sim::Profile>& profile_ = scratch_->profile;  // Queue: per resource
  sim::Admission admission_;
  int window_ = 8;
  std::uint32_t nch_ = 1;                                                 // channels the programs use (highest + 1)
  std::vector<std::uint16_t>& in_flight_ = scratch_->in_flight;           // per (rank, channel): sends not arrived
  std::vector<std::uint32_t>& blocked_ = scratch_->blocked;               // per (rank, channel): the send waiting for room, or kNone
  std::unique_ptr<sim::MaxMinSharing> maxmin_;
  std::unordered_map<topo::VertexId, int> ranks_on_;  // local_work_us(): the plan's ranks per vertex
  topo::RouteCache& routes_;
};

}  // namespace

void check_options(const SimOptions& opt) {
  // A NaN overhead once made every event time NaN, and the event loop never ended.
  auto check = [](double v, const char* what, const char* unit) {
    if (!std::isfinite(v) || v < 0)
      throw InputError(std::string("simulate: the ") + what + " must be a finite number >= 0 (" + unit + "), got " + fmt::format("{}", v));
  };
  check(opt.per_message_us, "per-message overhead", "us");
  check(opt.reduce_gbps, "reduction rate", "GB/s");
  check(opt.queue_store_bytes, "largest message a hop stores", "bytes");
}

namespace sim {

namespace {

// Each rank vertex's working set under `plan`: its ranks' input, output and scratch, in bytes.
std::unordered_map<topo::VertexId, double> working_sets(const Plan& plan, const topo::Topology& topo) {
  const PlanInfo& info = plan.info();
  const double per_rank = static_cast<double>(buffer_bytes(info, Buf::Input)) + static_cast<double>(buffer_bytes(info, Buf::Output)) +
                          static_cast<double>(buffer_bytes(info, Buf::Scratch));
  std::unordered_map<topo::VertexId, double> ws;
  for (int r = 0; r < plan.nranks() && static_cast<std::size_t>(r) < topo.num_ranks(); ++r)
    ws[topo.rank_vertex(static_cast<topo::Rank>(r))] += per_rank;
  return ws;
}

}  // namespace

std::optional<topo::Topology> beyond_cache(const Plan& plan, const topo::Topology& topo, double& reduce_scale) {
  reduce_scale = 1;
  const topo::Calibration* cal = topo.calibration ? &*topo.calibration : nullptr;
  if (!cal || cal->cache_bytes == 0 || cal->beyond_cache_factor == 1) return std::nullopt;
  std::optional<topo::Topology> out;
  for (const auto& [v, ws] : working_sets(plan, topo)) {
    if (ws <= static_cast<double>(cal->cache_bytes)) continue;
    // A byte is in the cache with probability cache / ws: the time per byte blends the two rates.
    const double in_cache = static_cast<double>(cal->cache_bytes) / ws;
    const double scale = 1 / (in_cache + (1 - in_cache) / cal->beyond_cache_factor);
    if (!out) out = topo;
    out->mutable_vertex(v).local_bw_gbps *= scale;
    reduce_scale = std::min(reduce_scale, scale);
  }
  return out;
}

SimResult simulate_folded(const Plan& plan, const topo::Topology& given_topo, const SimOptions& given, const std::optional<Fold>& fold) {
  check_options(given);
  // A calibrated topology states the software overhead and the reduction rate it measured; the
  // options' own figures, when set, win.
  SimOptions opt = given;
  if (given_topo.calibration) {
    if (opt.per_message_us <= 0) opt.per_message_us = given_topo.calibration->per_message_us;
    if (opt.reduce_gbps <= 0) opt.reduce_gbps = given_topo.calibration->reduce_gbps;
  }
  std::shared_ptr<topo::RouteCache> routes = route_cache(given_topo, opt);
  // Its memory: the ranks' buffers past a vertex's last-level cache copy and reduce at the rate
  // calibrate fitted beyond it (the routes, links and symmetry stay the given topology's).
  double reduce_scale = 1;
  std::optional<topo::Topology> slower = beyond_cache(plan, given_topo, reduce_scale);
  const topo::Topology& topo = slower ? *slower : given_topo;
  if (slower && given.reduce_gbps <= 0) opt.reduce_gbps *= reduce_scale;
  if (fold) {
    try {
      return Simulator(plan, topo, opt, &*fold, *routes).run();
    } catch (const InputError&) {
      // A plan that is wrong folded is wrong unfolded too: the unfolded run names the op.
    }
  }
  return Simulator(plan, topo, opt, nullptr, *routes).run();
}

}  // namespace sim

bool past_cache(const Plan& plan, const topo::Topology& topo) {
  if (!topo.calibration || topo.calibration->cache_bytes == 0) return false;
  for (const auto& [v, ws] : sim::working_sets(plan, topo))
    if (ws > static_cast<double>(topo.calibration->cache_bytes)) return true;
  return false;
}

SimResult simulate(const Plan& plan, const topo::Topology& topo, const SimOptions& opt) {
  bool fits = plan.nranks() >= 1 && static_cast<std::size_t>(plan.nranks()) <= topo.num_ranks();
  SimOptions o = opt;
  o.routes = sim::route_cache(topo, opt);
  std::optional<sim::Fold> f;
  if (o.fold_symmetry && fits) f = sim::fold(plan, topo, *o.routes, o.folds && o.folds->serves(*o.routes) ? o.folds.get() : nullptr);
  return sim::simulate_folded(plan, topo, o, f);
}

SimOptions time_only(SimOptions opt) {
  opt.top_links = 0;
  opt.critical_path = false;
  return opt;
}

double simulated_us(const Plan& plan, const topo::Topology& topo) { return simulated_us(plan, topo, sim::search_options(topo)); }

double simulated_us(const Plan& plan, const topo::Topology& topo, const SimOptions& opt) {
  sim::TimeMemo* memo = sim::TimeMemo::in_force(topo);
  std::string key = memo ? sim::TimeMemo::key(plan, opt) : std::string();
  if (memo)
    if (std::optional<double> us = memo->find(key)) return *us;
  double us = simulate(plan, topo, time_only(opt)).time_us;
  if (memo) memo->keep(std::move(key), us);
  return us;
}

}  // namespace collkit::plan
