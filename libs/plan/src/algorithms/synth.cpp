// Synthesised AllGather (docs/synth.md, ForestColl arXiv 2402.06787): k spanning out-trees per
// rank, packed into the links sends are routed over at the best rate k trees allow
// (synth/routed.h, rate.h, split.h, trees.h). Each rank's input is split into k pieces, one per
// tree it roots, each piece into `pipeline` chunks; along a tree every rank receives a chunk from
// its parent and forwards it to its children, so chunk i+1 comes down while chunk i goes on, each
// tree arc on a channel of its own. Param "channels" is k (the --channels flag: trees per rank,
// not the plan's channel count, which is p k times the largest fan-out). The trees are stored in
// the plan (param "trees": per tree, every rank's parent, -1 at the root; trees by root rank, k
// each) so that a rank's program needs no topology.
//                                 T ~ (depth + m - 1) (n / (p k m)) / u, u = one tree's rate
// Broadcast and Reduce: k out-trees from the one root, packed the same way at the root's best
// rate (the least max flow from it to a rank: Edmonds), Reduce on them reversed. AllReduce is
// either ReduceScatter + AllGather on every rank's trees or Reduce + Broadcast on one root's
// (param "allreduce": rs-ag or reduce-bcast, param "root"), whichever simulates faster.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "bounds_internal.h"
#include "collkit/core/error.h"
#include "collkit/core/memo.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/simulate.h"
#include "common.h"
#include "nic_route.h"
#include "ring_order.h"
#include "ring_weights.h"
#include "synth/rate.h"
#include "synth/relay.h"
#include "synth/routed.h"
#include "synth/split.h"
#include "synth/symmetric.h"
#include "synth/torus.h"
#include "synth/trees.h"
#include "synth_read.h"

namespace collkit::plan {

namespace {

using namespace algo;

/// Ranks beyond this: not offered (splitting and packing grow as p^3 max flows or more: 32
/// dgx-a100 ranks take 2 s, 64 take 35 s; docs/synth.md); beyond kMaxAutoRanks `auto` leaves synth out, since it
/// lays a candidate out once per knob value and must stay fast.
constexpr int kMaxRanks = 32;
constexpr int kMaxAutoRanks = 16;
/// Beyond kMaxAutoRanks `auto` weighs synth where host 0's pattern or the trees by rails apply,
/// up to this many ranks (docs/synth.md, "auto").
constexpr int kMaxAutoSymRanks = 256;
/// The same for Broadcast and Reduce (one root's trees by rails), up to this many ranks: laid out
/// once beyond kSymSearchRanks, they take 1-3 s at 1024 ranks beside the 3 s of their bound, and
/// the ring chain they replace ran 2.2-5.3 x the bound there (dgx-h100 x128: 1.24 x at 1 GiB,
/// 1.54 x at 64 MiB; docs/synth.md, "auto").
constexpr int kMaxAutoRootedRanks = 1024;
constexpr int kDefaultPipeline = 16;
/// The fewest chunks a tree laid out when --pipeline is not given: small messages want few, large
/// ones many (the depth costs (d + m - 1) / m). `auto` once tried this and kDeepPipeline on top of
/// synth's own search; at 64 KiB 4 chunks beat 16 by 12-79% (one and two hosts of the presets).
constexpr int kShallowPipeline = 4;
/// The other pipeline every rank's trees are laid out with when --pipeline is not given.
constexpr int kDeepPipeline = 64;
/// Chains round Hamiltonian cycles (relay.h) are tried with this many chunks too.
constexpr int kRingPipeline = 256;
/// Rings laid out as chains (Arcs::Orders) at most, where not --channels.
constexpr int kMaxOrderRings = 8;
/// Chunks a tree also laid out, in chunks of at least kMinDeeperChunk bytes: every rank's routed
/// trees always (fastest_pipeline), host 0's pattern where kDeepPipeline's beat kDefaultPipeline's
/// by more than kDeeperGain (the trees' depth still shows; fastest_symmetric).
constexpr int kDeeperPipeline = 256;
constexpr double kDeeperGain = 0.02;
constexpr std::uint64_t kMinDeeperChunk = 16384;
/// Nor more than kShallowPipeline chunks a tree (every rank's trees) where a chunk would hold
/// fewer bytes than this: no deeper pipeline pays for messages of a few elements, and those plans
/// do not fold (uneven chunks; docs/plan.md "Symmetry"): a 1 KiB AllReduce on a GB200 NVL72 rack
/// simulated 650 thousand transfers at 64 chunks a tree, 0.8 s.
constexpr std::uint64_t kMinPipelinedChunk = 256;
/// Chunks a tree one root's trees are also laid out with up to kMaxRanks (fastest_rooted), where a
/// chunk holds at least kMinDeepRootedChunk bytes and the plan at most kRootedOps sends and
/// receives: a chain or the trees round each host are p - 1 and H + 2 g deep, which 128 chunks pay
/// as 4.7% on one pcie-8gpu host (1.006 x the bound at 1024) and 11% on two (1.06-1.07).
constexpr int kDeepRootedPipelines[] = {512, 1024};
constexpr std::uint64_t kMinDeepRootedChunk = std::uint64_t{128} << 10;

/// Trees per rank when the user does not say: the fewest of kTreeCounts within 5% of the best
/// rate of them (rate_for_trees; the exact k is often in the hundreds). More trees reach closer
/// to the optimum but cost channels and smaller messages: on the presets 8 simulated slower than
/// 1, 2 or 4 wherever they tie on rate, and a rate up to 4% higher with more trees did not pay
/// (dgx-a100 x2: k = 4 for 1.8% more rate took 1.13 x the bound, k = 1 1.06; docs/synth.md).
/// 3 and 6 are there for links of unlike bandwidths: DGX-1's six NVLinks a GPU (150 GB/s in, 7
/// roots) hold 3 trees a root exactly, 21.43 GB/s, where 1, 2 and 4 reach 16.7, 20.0 and 20.0.
constexpr std::int64_t kTreeCounts[] = {1, 2, 3, 4, 6, 8};
/// Trees a root every rank's trees are also laid out with up to kMaxAutoRanks (trees_to_try).
constexpr std::int64_t kKnobTrees[] = {1, 2, 4};
/// Trees a root packed over routes and host paths together (Arcs::Host), where that packing is
/// more than kHostArcGain above the routed trees' rate. Fewer pack too coarsely to use the PCIe
/// links beside NVLink (dgx-h100 x1: 69.2 GB/s at k = 2, 72.0 at 4 and 8, of the bound's 73.3;
/// k = 2 simulated 6-12% over the bound, 4 and 8 3.0-5.6%).
constexpr std::int64_t kHostArcTrees[] = {4, 8};
/// The same beyond kMaxAutoRanks (stars relayed through host memory, laid out by rule at once),
/// where they fit a plan's channels (offer_host_arcs).
constexpr std::int64_t kWideHostArcTrees[] = {2, 3, 4, 6, 8};
constexpr double kHostArcGain = 0.005;
/// Host arcs only where each root's slice is this large: below it the trees' depth, not the PCIe
/// links beside NVLink, sets the time (dgx-h100 x1 AllGather: they win from 16 MiB, 2 MiB a
/// root; 2 x dgx-h100 only at 1 GiB), and their packing costs up to a second on two hosts.
constexpr std::uint64_t kHostArcMinSlice = 2u << 20;
/// The counts laid out and simulated (fastest_pipeline): that default, and a second with more
/// rate where there is one (below; the rate's gain against the smaller messages, decided by
/// simulation: 2 x dgx-h100 AllGather, k = 1 at 32.1 GB/s a root 1.086 x the bound, k = 2 at
/// 33.3 GB/s 1.059). With root >= 0, k trees from that root alone (Broadcast, Reduce). Memoised
/// per topology, p and root.
const std::vector<std::int64_t>& tree_counts(const topo::Topology& t, int p, int root = -1) {
  static Memo<std::tuple<std::uint64_t, int, int>, std::vector<std::int64_t>> memo;
  return memo.get({t.fingerprint(), p, root}, [&] {
    std::vector<double> rate;
    // On a star every count reaches the star's rate (synth::star_rate), k = 1 the first of them:
    // no max flows (72 GPUs of a GB200 NVL72 rack).
    bool star = root < 0 && synth::star_rate(t, p).has_value();
    for (std::int64_t k : kTreeCounts) rate.push_back(star ? 1.0 : synth::rate_for_trees(t, p, k, root));
    double best = *std::max_element(rate.begin(), rate.end());
    std::vector<std::int64_t> out;
    std::size_t first = 0;
    while (rate[first] < best * 0.95) ++first;
    out.push_back(kTreeCounts[first]);
    // The second: of the counts up to 4, the fewest within 0.5% of their best, where its rate is
    // more than 3% above the first's. Less does not pay for the smaller messages and the packing
    // (dgx-a100 x2: k = 3 with 2.4% more rate than k = 1 simulated 1.051 x the bound to 1.054, in
    // 0.8 CPU s to 0.2; k = 4, 1.7% more, 1.13).
    double small_best = 0;
    for (std::size_t i = 0; i < rate.size() && kTreeCounts[i] <= 4; ++i) small_best = std::max(small_best, rate[i]);
    for (std::size_t i = 0; i < rate.size() && kTreeCounts[i] <= 4; ++i)
      if (rate[i] >= small_best * 0.995) {
        if (i != first && rate[i] > rate[first] * 1.03) out.push_back(kTreeCounts[i]);
        break;
      }
    return out;
  });
}
std::int64_t default_trees(const topo::Topology& t, int p) { return tree_counts(t, p).front(); }

/// What a tree arc stands for: a route between two ranks, split from the routed links so that it
/// is one (split_routed); any walk of the routed links (split_switches); or a route with the
/// fewest links, data for farther ranks relayed through the ranks between (synth/relay.h), in
/// shortest-path trees or in chains round Hamiltonian cycles (k / 2 cycles, both ways).
/// Or (Direct) a link joining two ranks alone, over no switch, PCIe or NIC (direct_links). Or
/// (Host) a route or, between two ranks on one host, the path staged through host memory
/// (routed_host_links): the trees pack NVLink, the NICs and PCIe at once. (HostFan) As Host, on
/// stars whose ranks pair up through host memory with the star inside a host in two levels
/// (synth::star_relay_trees' fan, kStarFanout): fewer channels a tree. Or (Orders) a route
/// between neighbours on one of k rings that the ring algorithm lays out (ring_order.h): chains
/// along them, one a ring per root (ring_chains).
enum class Arcs { Routed, Walks, Relay, Rings, Direct, Host, HostFan, Orders };
/// The entry's children over a host's star in trees of Arcs::HostFan: a GB200 NVL72 rack's 71
/// become 8 and 7 or 8 under each, 10 or 11 channels a tree where the stars took 72-87.
constexpr int kStarFanout = 8;
/// Up to this many trees a root, stars relayed through host memory also relay some groups in each
/// tree by turns (synth::star_relay_trees' relay_of), of 5, 7 and 8 in turn.
constexpr std::int64_t kRelayTurnsTrees = 2;
constexpr int kRelayTurns[] = {5, 7, 8};

/// Every rank's trees as chains along the k rings of ring_orders (the ring algorithm's orders:
/// one NIC crossing a host, rails aligned, the channels spread over the host's links): tree
/// r k + j goes from rank r round ring j in its direction, p - 1 deep. Where the rings load every
/// rank's links evenly (PCIe hosts: each GPU's one link, into and out of it, carries k chains'
/// streams of every root) they reach the optimal rate that packed trees approach with depth and
/// fan-out the Queue link model charges for (2 x pcie-8gpu AllGather: 1.050 x the bound packed).
/// Empty below 3 ranks.
std::vector<std::vector<int>> ring_chains(const topo::Topology& t, int p, int k) {
  std::vector<std::vector<int>> trees;
  if (p < 3 || k < 1) return trees;
  Request req;
  req.coll = Collective::AllGather;
  req.nranks = p;
  std::vector<std::vector<int>> orders = ring_orders(req, &t, k);
  std::vector<std::vector<std::size_t>> at(orders.size(), std::vector<std::size_t>(static_cast<std::size_t>(p)));
  for (std::size_t j = 0; j < orders.size(); ++j)
    for (std::size_t i = 0; i < orders[j].size(); ++i) at[j][static_cast<std::size_t>(orders[j][i])] = i;
  auto n = static_cast<std::size_t>(p);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < orders.size(); ++j) {
      std::vector<int> parent(n, -1);
      for (std::size_t s = 1; s < n; ++s)
        parent[static_cast<std::size_t>(orders[j][(at[j][r] + s) % n])] = orders[j][(at[j][r] + s - 1) % n];
      trees.push_back(std::move(parent));
    }
  return trees;
}

/// Trees and the rate per root they were packed at (k units); with Arcs::Host, per tree and rank,
/// whether the arc from its parent is staged through host memory (else empty).
struct Synthesised {
  std::vector<std::vector<int>> trees;
  double packed_gbps = 0;
  std::vector<std::vector<char>> host;
  int shift = 0, block = 0;  ///< trees laid out by rule: the shifts mapping them onto themselves (SynthTrees)
};

/// Per tree (by root rank, k each), every rank's parent rank, -1 at the root; with root >= 0,
/// k trees of that root alone. Memoised per (topology, p, k, root, walks): `auto` lays a plan out
/// once per knob value. With Arcs::Walks, split over any walks of the routed links (split_switches),
/// whose arcs need not be the routes the sends take: one root's trees try it too (fastest_rooted).
/// With Arcs::Relay or Rings (every rank's trees only), relay trees, none where synth/relay.h makes none.
Synthesised make_trees(const topo::Topology& t, int p, std::int64_t k, int root, Arcs arcs);
const Synthesised& synthesise(const topo::Topology& t, int p, std::int64_t k, int root, Arcs arcs) {
  static Memo<std::tuple<std::uint64_t, int, std::int64_t, int, Arcs>, Synthesised> memo;
  return memo.get({t.fingerprint(), p, k, root, arcs}, [&] { return make_trees(t, p, k, root, arcs); });
}
Synthesised make_trees(const topo::Topology& t, int p, std::int64_t k, int root, Arcs arcs) {
  // Packed over the links the sends' routes take (routed.h), not every link the rate could use.
  if (arcs == Arcs::Relay || arcs == Arcs::Rings) {
    synth::RelayTrees relay;
    if (root < 0 && arcs == Arcs::Relay) relay = synth::relay_trees(t, p, static_cast<int>(k));
    if (root < 0 && arcs == Arcs::Rings && k % 2 == 0) relay = synth::ring_trees(t, p, static_cast<int>(k / 2));
    return Synthesised{std::move(relay.trees), relay.per_root_gbps, {}};
  }
  if (arcs == Arcs::Orders) {
    Synthesised out;
    if (root < 0) out.trees = ring_chains(t, p, static_cast<int>(k));
    if (!out.trees.empty()) out.packed_gbps = synth::routed_tree_rate(t, out.trees) / p;
    return out;
  }
  bool walks = arcs == Arcs::Walks;
  // The rate over the routed links is where splitting starts; keeping to the routes' walks
  // (split_routed) may lower it, so that every tree arc is a route and the plan's sends load the
  // links as the packing did. Direct arcs: the same on the rank-to-rank links alone, whose
  // routes there are the links themselves and the same in t.
  std::optional<topo::Topology> direct;
  if (arcs == Arcs::Direct) direct = synth::direct_links(t, p);
  const topo::Topology& base = direct ? *direct : t;
  bool host = arcs == Arcs::Host || arcs == Arcs::HostFan;
  // Host arcs on a star whose ranks pair up through host memory (GB200's two GPUs a Grace), or on
  // hosts alike of such stars (racks): stars with some of a root's trees relayed inside each
  // group, the share of those that the rates favour (synth::star_relay_trees), without splitting
  // (72 ranks a host) and before the routes over every host path are laid out.
  if (std::optional<std::vector<std::vector<int>>> groups = host && root < 0 ? synth::star_groups(t, p) : std::nullopt) {
    synth::HostTrees best;
    synth::ArcPaths paths(t);
    const int fan = arcs == Arcs::HostFan ? kStarFanout : 0;
    for (int relay = 0; relay <= k; ++relay) {
      synth::HostTrees ht = synth::star_relay_trees(paths, p, *groups, static_cast<int>(k), relay, fan);
      if (ht.per_root_gbps > best.per_root_gbps) best = std::move(ht);
    }
    // Few trees a root share too coarsely by whole trees (two: a half or nothing): there the
    // groups relayed by turns in each tree too, at the shares of kRelayTurns next to the one that
    // evens a rank's star link and host link (g / (g - 1) x host / (star + host) of the groups).
    if (k <= kRelayTurnsTrees) {
      const std::vector<int>& g0 = groups->front();
      topo::VertexId a = t.rank_vertex(static_cast<topo::Rank>(g0[0])), b = t.rank_vertex(static_cast<topo::Rank>(g0[1]));
      double star = topo::Router(t).route(a, b).bottleneck_gbps, staged = sim::HostRoutes(t).route(a, b).bottleneck_gbps;
      double g = static_cast<double>(g0.size()), share = g / (g - 1) * staged / (star + staged);
      for (int of : kRelayTurns)
        for (int relay : {static_cast<int>(std::floor(share * of)), static_cast<int>(std::ceil(share * of))}) {
          if (relay <= 0 || relay >= of) continue;
          synth::HostTrees ht = synth::star_relay_trees(paths, p, *groups, static_cast<int>(k), relay, fan, of);
          if (ht.per_root_gbps > best.per_root_gbps * (1 + 1e-9)) best = std::move(ht);
        }
    }
    Synthesised out{std::move(best.trees), best.per_root_gbps, {}};
    // Groups of consecutive ranks (GB200's twins): a shift by one group maps the trees onto
    // themselves (the relaying rank's place turns with the root's place in its group).
    auto g = static_cast<int>(groups->front().size());
    bool blocks = true;
    for (std::size_t q = 0; q < groups->size(); ++q)
      for (int l = 0; l < g; ++l) blocks = blocks && (*groups)[q][static_cast<std::size_t>(l)] == static_cast<int>(q) * g + l;
    // On several hosts, a turn of every host's ranks by one group and a move of the hosts, where
    // each host's ranks are consecutive too.
    std::optional<synth::HostGrid> hosts = synth::equal_hosts(t, p, nullptr);  // nullopt on one host
    for (int r = 0; hosts && r < p; ++r) blocks = blocks && hosts->rank[static_cast<std::size_t>(r)] == r;
    out.shift = blocks ? g : 0;
    out.block = blocks ? (hosts ? hosts->local : p) : 0;
    for (const std::vector<char>& staged : best.host)
      if (std::count(staged.begin(), staged.end(), 1) > 0) {
        out.host = std::move(best.host);
        break;
      }
    return out;
  }
  topo::Topology routed = host ? synth::routed_host_links(base, p) : synth::routed_links(base, p);
  // Every rank's trees on a star (one switch, a link a rank): each root's k trees are its star,
  // at the optimum, without splitting (synth::star_rate). One root's trees are not: a chain
  // through the switch broadcasts at a link's rate, a star at 1 / (p - 1) of it.
  if (std::optional<double> star = root < 0 && !host && !direct ? synth::star_rate(routed, p) : std::nullopt) {
    Synthesised out;
    out.packed_gbps = *star;
    out.shift = 1;
    out.block = p;
    for (int r = 0; r < p; ++r) {
      std::vector<int> parent(static_cast<std::size_t>(p), r);
      parent[static_cast<std::size_t>(r)] = -1;
      for (std::int64_t j = 0; j < k; ++j) out.trees.push_back(parent);
    }
    return out;
  }
  double x = synth::rate_for_trees(routed, p, k, root);
  if (x <= 0) return {};  // Direct: the rank-to-rank links do not join every rank
  synth::SplitGraph g = walks ? synth::split_switches(routed, p, k, x / static_cast<double>(k), root)
                              : synth::split_routed(base, p, k, x / static_cast<double>(k), root, host);
  synth::Packing pk = synth::pack_trees(g);
  std::vector<int> rank_of(t.num_vertices(), -1);
  for (int r = 0; r < p; ++r) rank_of[t.rank_vertex(static_cast<topo::Rank>(r))] = r;
  // Host arcs: an arc that is not the route between its ends is the host path (split_routed).
  std::optional<topo::Router> router;
  if (host) router.emplace(t);
  auto staged = [&](const synth::SplitGraph::Arc& a) {
    return router && a.path != router->route(g.nodes[a.from], g.nodes[a.to]).vertices(t);
  };
  std::vector<std::vector<std::pair<std::vector<int>, std::vector<char>>>> by_root(static_cast<std::size_t>(p));
  bool any_staged = false;
  for (const synth::Tree& tr : pk.trees) {
    std::vector<int> parent(static_cast<std::size_t>(p), -1);
    std::vector<char> via_host(static_cast<std::size_t>(p), 0);
    for (std::size_t a : tr.arcs) {
      auto child = static_cast<std::size_t>(rank_of[g.nodes[g.arcs[a].to]]);
      parent[child] = rank_of[g.nodes[g.arcs[a].from]];
      via_host[child] = staged(g.arcs[a]);
      any_staged = any_staged || via_host[child];
    }
    by_root[static_cast<std::size_t>(rank_of[g.nodes[tr.root]])].emplace_back(std::move(parent), std::move(via_host));
  }
  Synthesised out;
  out.packed_gbps = g.unit_gbps * static_cast<double>(k);
  for (auto& list : by_root)
    for (auto& [parent, via_host] : list) {
      out.trees.push_back(std::move(parent));
      if (any_staged) out.host.push_back(std::move(via_host));
    }
  return out;
}

/// Channels a plan of trees has beside its trees' for a rank's copy of its own data into its
/// output (AllGather: every rank's own slice; Broadcast: the root's vector), after the trees'
/// channels: on a tree's channel the copy held back that tree's first sends (ForestColl's A100
/// node, one NVSwitch: AllGather 1.074 x the bound under Queue with the copy before the first
/// tree's sends, 1.000 beside them).
int copy_channels(Collective c) { return c == Collective::AllGather || c == Collective::Broadcast ? 1 : 0; }

/// A symmetry of a plan of every rank's trees (k per root, `slots` channels each, tree_channels a
/// phase, nch in all): ranks move by `rank`, and each phase's channels with their trees' roots;
/// the channels after `trees_end` (copy_channels) stay.
SymmetryAxis tree_axis(const std::vector<int>& rank, int order, int k, int slots, int tree_channels, int trees_end, int nch) {
  SymmetryAxis a;
  a.rank = rank;
  a.order = order;
  a.channel.resize(static_cast<std::size_t>(nch));
  for (int c = 0; c < nch; ++c) {
    if (c >= trees_end) {
      a.channel[static_cast<std::size_t>(c)] = c;
      continue;
    }
    int phase = c / tree_channels, w = c % tree_channels, t = w / slots;
    a.channel[static_cast<std::size_t>(c)] =
        phase * tree_channels + (rank[static_cast<std::size_t>(t / k)] * k + t % k) * slots + w % slots;
  }
  return a;
}

// ---- Symmetric synthesis (synth/symmetric.h, docs/synth.md "Scale by symmetry") ----
/// --inter: the general solver or host 0's pattern replicated (by default the latter beyond
/// kMaxAutoRanks where the hosts are alike, and always beyond kMaxRanks).
constexpr std::string_view kGeneral = "general", kSymmetric = "symmetric", kRails = "rails";
/// Fan-outs of the inter-host tree laid out (the fastest as simulated is kept); the last (the one
/// laid out beyond kSymSearchRanks) is the one supports() checks the symmetry with.
constexpr int kSymFanouts[] = {2, 4, 8};
constexpr int kSymCheckFanout = kSymFanouts[std::size(kSymFanouts) - 1];
/// From this many hosts on, the local rotation is not stated as a symmetry: the host generators
/// alone give the simulator's fold enough elements, and 8 times more of them made its fold of
/// 128 x dgx-h100 (18 k channels a rank) take 7-9 s instead of 3.4-3.9.
constexpr int kSymLocalAxisHosts = 64;
/// Beyond this many ranks one symmetric plan is laid out, not every fan-out and pipeline: each
/// simulation of 1024 ranks takes seconds (mostly the simulator's fold of 18 k channels a rank),
/// and there the choice hardly matters (every tree's pipeline fill hides behind the other trees'
/// chunks on the same links: 128 x dgx-h100 AllGather at fan-out 8, 16 chunks, is 0.4% over the
/// bound). The one laid out: the widest fan-out whose channels fit (the shallowest trees).
constexpr int kSymSearchRanks = 256;

bool symmetric_request(Collective c) { return c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllReduce; }
/// Broadcast and Reduce: one root's trees on hosts of one size (synth::rooted_trees) too.
bool rooted_request(Collective c) { return c == Collective::Broadcast || c == Collective::Reduce; }
/// One root's trees relayed through host memory on stars with groups (synth::star_relay_root_trees,
/// offer_star_relay_root): the trees a head tried (more trees split the shares finer), the relay
/// shares (relay of relay_of trees, for each relay_of), the via shares (via of via_of), the widest
/// heap of hosts, and the chunks a tree laid out. On a GB200 NVL72 rack the root's star link (900
/// GB/s) and its NVLink-C2C (225) carry its data in the ratio 4 : 1 at the bound (1125 in): a
/// fifth via its twin; a rank's star link and host link take in 0.8 and 0.2 of it, so two fifths
/// of the trees relay each group (half of them to either member). A larger tree count is kept only
/// where its rate is kStarRootGain higher.
constexpr int kStarRootTrees[] = {1, 5};
constexpr double kStarRootGain = 0.005;
constexpr int kStarRootRelayOf[] = {5, 7, 8, 13};
constexpr std::pair<int, int> kStarRootVia[] = {{0, 1}, {1, 4}, {1, 5}, {1, 6}};
constexpr int kStarRootFanout = 3;
constexpr int kStarRootPipelines[] = {16, 64, 256};
/// Sends and receives of the one such plan laid out beyond kSymSearchRanks (at the most chunks a
/// tree of kStarRootPipelines within it): 16 GB200 NVL72 racks at 64 chunks, 10 M ops, simulate in
/// about 15 s (1.154 x the bound at 1 GiB; 256 chunks, 41 M ops: 1.110 in a minute).
constexpr std::int64_t kStarRootOps = std::int64_t{16} << 20;
/// Up to this many ranks each tree count's plan is simulated and the fastest kept; beyond, the one
/// the pipeline formula favours, unsimulated. Four GB200 NVL72 racks' Reduce: one tree a head,
/// which the formula favours, simulates at 1.251 x the bound, five at 1.119 (Broadcast: 1.084 and
/// 1.101); sixteen racks' take 15 s a simulation.
constexpr int kStarRootSimRanks = 512;
/// Fan-outs of rooted_trees' inter-host trees laid out (a chain; two binary heaps, inner hosts by parity).
constexpr int kRootedFanouts[] = {1, 2};
/// One host's AllGather trees (one a local root, over its routed links, by the general solver):
/// where rooted_trees hands pieces on down them (synth/symmetric.h). nullopt where the ranks are
/// not on hosts of one size, or a host has fewer than three (a star is then the only tree).
std::optional<std::vector<std::vector<int>>> host_trees(const topo::Topology& t, int p) {
  std::optional<synth::HostGrid> g = synth::equal_hosts(t, p, nullptr);
  if (!g || g->local < 3) return std::nullopt;
  std::vector<std::vector<int>> trees = synthesise(synth::host_topology(t, *g), g->local, 1, -1, Arcs::Routed).trees;
  if (trees.size() != static_cast<std::size_t>(g->local)) return std::nullopt;
  return trees;
}

/// How fastest_rooted lays out the trees by rails (synth::RootedVariant): the root's own piece down
/// a chain, relayed by each other rank in turn, or every piece round each host.
enum class Rails { Chain, Relayed, Ring };

/// One root's trees by rails at fan-out `fan` (synth::rooted_trees) and their rate over the routes:
/// of the root's own piece down a chain (Rails::Chain) or relayed by each other rank in turn, and
/// pieces handed on inside a host straight from their holder or down the host's AllGather trees
/// (host_trees), the variant with the highest rate (the first of equals, in that order); with
/// Rails::Ring, every piece round each host alone. nullopt with `why` where rooted_trees makes none.
/// Memoised per (topology, p, root, fan, rails): each of fastest_rooted's pipelines lays the same
/// trees out, and ring_pays weighs them first (at 1024 ranks each rate takes a few tenths of a second).
/// With the rate a tree of them moves at where equal shares would leave links idle (one NIC of the
/// rails slower, whose rail's trees then set every tree's pace): the LP of algo::weighted_rates
/// over the trees' arcs, `rate` then their sum; empty where equal shares carry within
/// algo::kWeightGain of it (every preset).
struct RailTrees {
  std::vector<std::vector<int>> trees;
  double rate = 0;
  std::vector<double> rates;
};
using RootedTrees = std::optional<RailTrees>;
RootedTrees find_rooted_trees(const topo::Topology& t, int p, int root, int fan, Rails rails, std::string* why);
const RootedTrees& best_rooted_trees(const topo::Topology& t, int p, int root, int fan, Rails rails, std::string* why) {
  static Memo<std::tuple<std::uint64_t, int, int, int, Rails>, std::pair<RootedTrees, std::string>> memo;
  const auto& [found, reason] = memo.get({t.fingerprint(), p, root, fan, rails}, [&] {
    std::string w;
    RootedTrees trees = find_rooted_trees(t, p, root, fan, rails, &w);
    return std::make_pair(std::move(trees), std::move(w));
  });
  if (why && !found) *why = reason;
  return found;
}

/// `trees` at `rate` (equal shares, as synth::routed_tree_rate counts them), with the LP's rates
/// where their sum carries algo::kWeightGain more than that (4 x pcie-8gpu's chains by rails:
/// equal shares 28 GB/s, the LP 29.25, within the gain: none), so that a rate never reads lower
/// than the trees' own, which would take synth out of auto (rails_fall_short).
RailTrees weighed(const topo::Topology& t, std::vector<std::vector<int>> trees, double rate) {
  std::vector<algo::Hops> arcs(trees.size());
  for (std::size_t j = 0; j < trees.size(); ++j)
    for (std::size_t c = 0; c < trees[j].size(); ++c)
      if (trees[j][c] >= 0) arcs[j].emplace_back(trees[j][c], static_cast<int>(c));
  RailTrees out{std::move(trees), rate, algo::weighted_rates(t, arcs)};
  const double sum = std::accumulate(out.rates.begin(), out.rates.end(), 0.0);
  if (sum * (1 - algo::kWeightGain) > rate) out.rate = sum;
  else out.rates.clear();
  return out;
}

RootedTrees find_rooted_trees(const topo::Topology& t, int p, int root, int fan, Rails rails, std::string* why) {
  const bool chain = rails == Rails::Chain;
  std::optional<std::vector<std::vector<int>>> trees =
      synth::rooted_trees(t, p, root, fan, why, {.chain = chain, .ring = rails == Rails::Ring});
  if (!trees) return std::nullopt;
  // The rate before the trees move: a call's arguments are evaluated in no set order (clang moved
  // them first, and the ring's rate read 0).
  double rate = synth::routed_tree_rate(t, *trees);
  if (rails == Rails::Ring) return weighed(t, std::move(*trees), rate);
  auto keep_faster = [&](std::optional<std::vector<std::vector<int>>> other) {
    if (!other) return;
    double r = synth::routed_tree_rate(t, *other);
    if (r > rate * (1 + 1e-9)) {
      trees = std::move(other);
      rate = r;
    }
  };
  if (chain) keep_faster(synth::rooted_trees(t, p, root, fan, why));
  if (std::optional<std::vector<std::vector<int>>> intra = host_trees(t, p)) {
    keep_faster(synth::rooted_trees(t, p, root, fan, why, {.chain = chain, .intra = &*intra}));
    if (chain) keep_faster(synth::rooted_trees(t, p, root, fan, why, {.intra = &*intra}));
  }
  return weighed(t, std::move(*trees), rate);
}

/// The trees by rails, at their shares (RailTrees::rates), fall short of what the root can send
/// over the routed links (by more than a tenth): on 4 x dgx1-v100, whose NICs are each shared by
/// two GPUs, star hand-offs simulated at 3.4 x the bound where the packing gave 1.04 (the hosts'
/// NVLink trees mend it now), and with equal shares a NIC at an eighth of its rate (shares mend
/// it). Where so, the packing (up to kMaxRanks) is tried too, and auto does not weigh synth beyond
/// kMaxAutoRanks (the packing takes seconds there).
/// Memoised per (topology, p, root): it does not depend on the size or on which of the two rooted
/// collectives asks, and at 1024 GPUs it takes seconds (the routes of every pair for the rate over
/// the routed links), which every size of a sweep and every question of a shell paid again.
bool rails_fall_short(const topo::Topology& t, int p, int root) {
  static Memo<std::tuple<std::uint64_t, int, int>, bool> memo;
  return memo.get({t.fingerprint(), p, root}, [&] {
    double rails = 0;  // Chain compares every variant but Ring
    for (int fan : kRootedFanouts)
      for (Rails r : {Rails::Chain, Rails::Ring})
        if (const RootedTrees& best = best_rooted_trees(t, p, root, fan, r, nullptr)) rails = std::max(rails, best->rate);
    return rails < 0.9 * synth::broadcast_rate(synth::routed_links(t, p), p, root).per_root_gbps;
  });
}

/// Every rank's trees by rails (AllGather, ReduceScatter and AllReduce on hosts of one size whose
/// links differ: one NIC slower than its rail's others, or on hosts some of which are short of a
/// GPU (synth::rail_hosts), where host 0's pattern, which needs hosts alike, does not apply;
/// docs/synth.md, "Every rank's trees by rails"): root r's k trees are its
/// Broadcast trees by rails (synth::rooted_trees, the root's own piece down a chain on its host),
/// tree j carrying piece j off r's host on rail j of every host. Equal shares leave the slow
/// rail's trees setting every root's pace; the LP (algo::grouped_rates) gives the trees of the
/// roots of one local index one rate each, the least root's sum the most it can be, so that the
/// other rails carry what the slow one cannot (the cut: 16 x dgx-h100 with one NIC at half rate
/// has 7.5 of 8 rails, a ring's channels 7). `rate` is a root's (GB/s): the LP's least sum, or
/// equal shares' where those carry within algo::kWeightGain of it (rates then empty; else one a
/// tree, p k). Memoised per (topology, p, fan-out).
struct EveryRails {
  std::vector<std::vector<int>> trees;  ///< p k, root-major
  int k = 0;
  double rate = 0;
  std::vector<double> rates;
};
const std::optional<EveryRails>& every_rails(const topo::Topology& t, int p, int fan, std::string* why) {
  static Memo<std::tuple<std::uint64_t, int, int>, std::pair<std::optional<EveryRails>, std::string>> memo;
  const auto& [found, reason] = memo.get({t.fingerprint(), p, fan}, [&]() -> std::pair<std::optional<EveryRails>, std::string> {
    std::string w;
    std::optional<synth::HostGrid> g = synth::rail_hosts(t, p, &w);
    if (!g) return {std::nullopt, w};
    EveryRails e;
    for (int r = 0; r < p; ++r) {
      std::optional<std::vector<std::vector<int>>> trees = synth::rooted_trees(t, p, r, fan, &w, {.chain = true, .root_leads_holes = true});
      if (!trees) return {std::nullopt, w};
      if (r == 0) e.k = static_cast<int>(trees->size());
      if (static_cast<int>(trees->size()) != e.k) return {std::nullopt, "roots with unlike numbers of trees by rails"};
      std::move(trees->begin(), trees->end(), std::back_inserter(e.trees));
    }
    const int gl = g->local, k = e.k;
    auto local = [&](int r) { return g->pos[static_cast<std::size_t>(r)] % gl; };
    // The LP's channels: (local index l, tree j), every root of local index l's tree j.
    std::vector<algo::Hops> hops(static_cast<std::size_t>(gl * k));
    std::vector<int> group(hops.size()), rail(hops.size());
    for (std::size_t c = 0; c < hops.size(); ++c) {
      group[c] = static_cast<int>(c) / k;
      rail[c] = static_cast<int>(c) % k;
    }
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) {
        const std::vector<int>& parent = e.trees[static_cast<std::size_t>(r * k + j)];
        algo::Hops& h = hops[static_cast<std::size_t>(local(r) * k + j)];
        for (std::size_t c = 0; c < parent.size(); ++c)
          if (parent[c] >= 0) h.emplace_back(parent[c], static_cast<int>(c));
      }
    std::vector<double> col = algo::grouped_rates(t, hops, group, rail);
    e.rate = synth::routed_tree_rate(t, e.trees) / p;
    if (col.empty()) return {std::move(e), ""};
    double least = std::numeric_limits<double>::infinity();
    for (int l = 0; l < gl; ++l) least = std::min(least, std::accumulate(col.begin() + l * k, col.begin() + (l + 1) * k, 0.0));
    e.rate = least;
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) e.rates.push_back(col[static_cast<std::size_t>(local(r) * k + j)]);
    return {std::move(e), ""};
  });
  if (why && !found) *why = reason;
  return found;
}

/// Whether every piece round each host (Rails::Ring) reaches at least the rate of the other trees
/// by rails at fan-out `fan`, on hosts of more than two ranks (else the ring is the chain): on
/// pcie-8gpu hosts, where one PCIe link joins a GPU to its peers, its NIC and the other socket, 31.5
/// GB/s a root (the bound) against 28-29.6; on NVLink hosts the ring's last rank sends two pieces
/// off the host through its NIC and the root's NIC none, so it falls short there and is not laid out.
/// Memoised per (topology, p, root, fan) as rails_fall_short is.
bool ring_pays(const topo::Topology& t, int p, int root, int fan) {
  static Memo<std::tuple<std::uint64_t, int, int, int>, bool> memo;
  return memo.get({t.fingerprint(), p, root, fan}, [&] {
    std::optional<synth::HostGrid> g = synth::equal_hosts(t, p, nullptr);
    if (!g || g->local <= 2) return false;
    const RootedTrees& ring = best_rooted_trees(t, p, root, fan, Rails::Ring, nullptr);
    if (!ring) return false;
    const RootedTrees& chain = best_rooted_trees(t, p, root, fan, Rails::Chain, nullptr);
    return ring->rate > 0 && (!chain || ring->rate >= chain->rate * (1 - 1e-9));
  });
}
/// Chunks per tree of rooted_trees beyond kMaxRanks (without --pipeline): each of these up to
/// kSymSearchRanks, the fastest as simulated kept; beyond, the largest whose plan has at most
/// kRootedOps sends and receives (one simulation of 4 M ops takes 5-10 s). Under the Queue link
/// model the heaps' time over the bound does not fall evenly with more chunks (32 hosts at 128,
/// 256 and 512 chunks: 1.064, 1.094, 1.079; 64 hosts: 1.095, 1.037, 1.027), so they are
/// simulated, not predicted by the pipeline formula. Chunks of at least kMinRootedChunk bytes
/// (1 MiB on 16 trees: 16 chunks of 4 KiB, not 128 of 512 bytes).
constexpr int kRootedPipelines[] = {128, 256, 512};
constexpr std::int64_t kRootedOps = std::int64_t{4} << 20;
/// Every rank's trees by rails at shares (lay_every_rails): units a tree at most, bytes a unit at
/// least (a 1 GiB AllGather on 128 ranks: 64 units a tree, 16 KiB each).
constexpr std::uint64_t kRailUnits = 64;
constexpr std::uint64_t kMinRailUnit = 4096;
/// The fan-out of the hosts' trees and the steps a tree of every rank's trees by rails, by what
/// the Queue model simulated on 16 x dgx-h100 with one NIC at half rate (1 GiB; docs/synth.md,
/// "Every rank's trees by rails"): AllGather does not care (a chain of the hosts, 4 steps: 1.013
/// x the bound, 1 step 1.018, 16 1.012); the reversed trees of ReduceScatter wait at every rank for
/// its slowest child, and pay the chain's depth (17) by the step: 4 steps 1.145, 8 1.075, 16 1.044
/// at twice the ops; AllReduce (both phases) on two heaps of the hosts (depth 7, 16 trees a root)
/// at 4 steps 1.170, the chain's 1.238.
constexpr std::pair<int, int> kEveryRailsAllGather{1, 4}, kEveryRailsReduceScatter{1, 8}, kEveryRailsAllReduce{2, 4};
/// AllReduce on up to kEveryRailsChainHosts hosts: a chain of the hosts (of 3 others at most,
/// where the heaps' two copies double the trees) at 8 steps, twice that within kEveryRailsSends, with one NIC at
/// half rate: 4 x dgx-a100 1.078 x the bound (the heaps at 8 steps 1.134, the chain at 8 1.093),
/// 4 x mi300x 1.094 (1.131); on 8 hosts the heaps keep it (1.135 at 8 steps, the chain 1.204 at
/// 8 and 1.193 at 16).
constexpr std::pair<int, int> kEveryRailsAllReduceChain{1, 8};
constexpr int kEveryRailsChainHosts = 4;
/// ReduceScatter and AllReduce by every rank's trees by rails at twice those steps where the
/// plan's sends (phases p (p - 1) k steps) stay within this many: more steps shorten the wait of
/// the reversed trees for their slowest child, at as many more ops to simulate (x the bound, 1
/// GiB, Queue; docs/synth.md): 16 x dgx-h100 with one NIC at half rate, ReduceScatter at 8 / 16
/// steps 1.075 / 1.044 (1.4 / 2.8 CPU-s), AllReduce at 4 / 8 1.171 / 1.128 (3.1 / 8.0 s: 4.2 M
/// sends, beyond); one GPU gone, ReduceScatter 1.250 / 1.190 (the ring 1.215); 4 x dgx-a100 and 4
/// x mi300x with one NIC at half rate, ReduceScatter 1.059 / 1.035 and 1.078 / 1.061, AllReduce
/// on the heaps 1.169 / 1.134 and 1.162 / 1.131 (on a chain there now: kEveryRailsAllReduceChain).
constexpr std::uint64_t kEveryRailsSends = std::uint64_t{1} << 21;
/// Every rank's trees by rails up to this many ranks (a root's trees a Broadcast's: 1024 roots'
/// orders and p^2 k m ops are beyond seconds).
constexpr int kMaxEveryRailsRanks = 256;
constexpr std::uint64_t kMinRootedChunk = 4096;

/// Host 0's pattern (memoised in synth::quotient), the intra-host trees from the general solver on
/// one host (intra_k a root).
std::optional<synth::QuotientTrees> quotient(const topo::Topology& t, int p, int fanout, std::string* why, double* rate = nullptr,
                                             int intra_k = 1) {
  auto intra = [](const topo::Topology& one, int g, int k) { return synthesise(one, g, k, -1, Arcs::Routed).trees; };
  return synth::quotient(t, p, fanout, intra_k, intra, why, rate);
}

/// Intra-host trees a local root in host 0's pattern (synth/symmetric.h). One, unless one tree a
/// root packs below 0.97 of the host's own optimum and the pattern with tree_counts' number on
/// one host carries more than 3% more per root: ForestColl's MI250 (16 GCDs a host on an xGMI
/// mesh), whose one tree a root packs at 8.33 GB/s of the host's 21.43 (3 a root reach it), so that
/// at four nodes the pattern ran at 1.29 x the bound, its NICs under-used (docs/synth.md,
/// "Anchors"). Where the NICs bind, as on eight DGX-1 hosts, more trees carry nothing more and
/// cost smaller messages: one. Memoised per (topology, p).
int symmetric_intra_k(const topo::Topology& t, int p) {
  static Memo<std::pair<std::uint64_t, int>, int> memo;
  return memo.get({t.fingerprint(), p}, [&] {
    int best = 1;
    std::optional<synth::HostGrid> grid = synth::host_grid(t, p, nullptr);
    if (grid && grid->local > 1) {
      int g = grid->local;
      topo::Topology one = synth::routed_links(synth::host_topology(t, *grid), g);
      double optimum = synth::optimal_rate(one, g).per_root_gbps;
      double r1 = 0;
      if (quotient(t, p, kSymCheckFanout, nullptr, &r1) && synthesise(one, g, 1, -1, Arcs::Routed).packed_gbps < 0.97 * optimum) {
        int k = static_cast<int>(tree_counts(one, g).front());
        double rk = 0;
        if (k > 1 && quotient(t, p, kSymCheckFanout, nullptr, &rk, k) && rk > r1 * 1.03) best = k;
      }
    }
    return best;
  });
}

/// The torus the ranks form (synth/torus.h), memoised per (topology, p).
const std::optional<synth::TorusGrid>& torus(const topo::Topology& t, int p, std::string* why = nullptr) {
  static Memo<std::pair<std::uint64_t, int>, std::pair<std::optional<synth::TorusGrid>, std::string>> memo;
  const auto& [grid, reason] = memo.get({t.fingerprint(), p}, [&] {
    std::string w;
    std::optional<synth::TorusGrid> g = synth::torus_grid(t, p, &w);
    return std::make_pair(std::move(g), std::move(w));
  });
  if (why) *why = reason;
  return grid;
}

/// --inter torus: every root's trees the translates of rank 0's on a torus (synth/torus.h); by
/// default beyond kMaxRanks on a torus.
constexpr std::string_view kTorus = "torus";

std::string format_trees(const std::vector<std::vector<int>>& trees) {
  std::string s;
  for (std::size_t i = 0; i < trees.size(); ++i) {
    if (i) s += ';';
    for (std::size_t r = 0; r < trees[i].size(); ++r) s += (r ? "," : "") + std::to_string(trees[i][r]);
  }
  return s;
}

/// The "host_arcs" parameter (format_host_arcs) read back and checked against `trees`: one list
/// per tree, of ranks each with a parent there.
std::vector<std::vector<char>> parse_host_arcs(const std::string& s, const std::vector<std::vector<int>>& trees) {
  auto bad = [](const std::string& why) { return InputError("synth: plan parameter host_arcs: " + why); };
  std::vector<std::vector<char>> host(1, std::vector<char>(trees.empty() ? 0 : trees[0].size(), 0));
  const char* c = s.data();
  const char* end = c + s.size();
  while (c < end) {
    if (*c == ';') {
      host.emplace_back(host[0].size(), 0);
      ++c;
      continue;
    }
    int r = 0;
    auto [q, ec] = std::from_chars(c, end, r);
    std::size_t t = host.size() - 1;
    if (ec != std::errc() || r < 0 || static_cast<std::size_t>(r) >= host[0].size())
      throw bad("expected ranks 0.." + std::to_string(static_cast<long long>(host[0].size()) - 1) + " at character " +
                std::to_string(c - s.data()));
    if (t < trees.size() && trees[t][static_cast<std::size_t>(r)] < 0)
      throw bad("rank " + std::to_string(r) + " is the root of tree " + std::to_string(t) + ": no arc leads to it");
    if (t < trees.size()) host[t][static_cast<std::size_t>(r)] = 1;
    c = q;
    if (c < end && *c == ',') ++c;
  }
  if (host.size() != trees.size()) throw bad(std::to_string(host.size()) + " trees, expected " + std::to_string(trees.size()));
  return host;
}

/// The "trees" parameter read back and checked: p k trees, tree t rooted at rank t / k, every
/// rank's parent chain reaching the root; with root >= 0, k trees all rooted there.
std::vector<std::vector<int>> parse_trees(const PlanInfo& info, int p, int k, int root) {
  auto it = info.params.find("trees");
  if (it == info.params.end()) throw InputError("synth: plan parameter trees is missing");
  auto bad = [](const std::string& why) { return InputError("synth: plan parameter trees: " + why); };
  // The last trees read and checked, kept: every rank's program reads them (one root's trees
  // at 1024 ranks are 115 k numbers).
  struct Kept {
    std::string text;
    int p = 0, k = 0, root = 0;
    std::vector<std::vector<int>> trees;
  };
  thread_local Kept kept;
  if (kept.p == p && kept.k == k && kept.root == root && kept.text == it->second) return kept.trees;
  std::vector<std::vector<int>> trees(1);
  const std::string& s = it->second;
  const char* c = s.data();
  const char* end = c + s.size();
  while (c < end) {
    int v = 0;
    auto [q, ec] = std::from_chars(c, end, v);
    if (ec != std::errc() || v < -1 || v >= p)
      throw bad("expected ranks -1.." + std::to_string(p - 1) + " at character " + std::to_string(c - s.data()));
    trees.back().push_back(v);
    c = q;
    if (c < end && *c == ';') trees.emplace_back();
    if (c < end && (*c == ',' || *c == ';')) ++c;
  }
  std::size_t expected = static_cast<std::size_t>(root >= 0 ? 1 : p) * static_cast<std::size_t>(k);
  if (trees.size() != expected) throw bad(std::to_string(trees.size()) + " trees, expected " + std::to_string(expected));
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const std::vector<int>& parent = trees[t];
    int top = root >= 0 ? root : static_cast<int>(t) / k;
    if (parent.size() != static_cast<std::size_t>(p))
      throw bad("tree " + std::to_string(t) + " has " + std::to_string(parent.size()) + " ranks");
    for (int r = 0; r < p; ++r) {
      int at = r;
      for (int step = 0; step < p && at != top && at >= 0; ++step) at = parent[static_cast<std::size_t>(at)];
      if (at != top || parent[static_cast<std::size_t>(top)] != -1)
        throw bad("tree " + std::to_string(t) + " does not lead rank " + std::to_string(r) + " to its root " + std::to_string(top));
    }
  }
  kept = {s, p, k, root, trees};
  return trees;
}

/// Channels per tree: the most children over routes a rank has in any tree, then (param
/// host_arcs) the most over paths staged through host memory, on channels of their own so that
/// channel_paths can mark them "host".
struct TreeSlots {
  int routes = 1;
  int host = 0;
  int total() const { return routes + host; }
};
TreeSlots slots_of(const std::vector<std::vector<int>>& trees, const std::vector<std::vector<char>>& host_arcs) {
  TreeSlots s;
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const std::vector<int>& parent = trees[t];
    std::vector<int> routes(parent.size(), 0), host(parent.size(), 0);
    for (std::size_t c = 0; c < parent.size(); ++c) {
      if (parent[c] < 0) continue;
      auto up = static_cast<std::size_t>(parent[c]);
      if (!host_arcs.empty() && host_arcs[t][c]) s.host = std::max(s.host, ++host[up]);
      else s.routes = std::max(s.routes, ++routes[up]);
    }
  }
  return s;
}

/// How far rank c lies after rank a in blocks of `block` consecutive ranks: blocks on first, then
/// places inside the block (0 .. p - 1, 0 for a itself). Any turn inside every block and any move
/// of the blocks keep it: the order a rank takes its children in under a tree shift.
int tree_distance(int a, int c, int block, int p) {
  int n = p / block;
  return ((c / block - a / block) % n + n) % n * block + ((c % block - a % block) % block + block) % block;
}

/// Every arc's slot in one tree of `parent`s (-1 at the root): the child's place among its
/// parent's children of its kind (rank order), after the routes' slots for a host arc (via_host,
/// where not null).
std::vector<int> arc_slots(const std::vector<int>& parent, const std::vector<char>* via_host, const TreeSlots& s, int block = 0) {
  auto p = static_cast<int>(parent.size());
  std::vector<int> slot(parent.size(), -1), next(2 * parent.size(), 0);  // (parent, kind) -> children of that kind so far
  // In rank order, or with a tree shift (block > 0) by tree_distance from the parent, which every
  // image of the parent shares, so that a slot is the same place in every image.
  std::vector<int> order(parent.size());
  std::iota(order.begin(), order.end(), 0);
  if (block > 0) {
    // (parent, distance) packed in one key a child, computed once (a sort's comparisons would
    // compute each many times: 16 GB200 racks' 3456 trees of 1152 ranks, for every program).
    std::vector<std::int64_t> key(parent.size());
    for (int c = 0; c < p; ++c) {
      int a = parent[static_cast<std::size_t>(c)];
      key[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(a + 1) * (p + 1) + (a < 0 ? c : tree_distance(a, c, block, p));
    }
    std::sort(order.begin(), order.end(),
              [&](int x, int y) { return key[static_cast<std::size_t>(x)] < key[static_cast<std::size_t>(y)]; });
  }
  for (int c : order) {
    auto u = static_cast<std::size_t>(c);
    if (parent[u] < 0) continue;
    bool staged = via_host && (*via_host)[u];
    slot[u] = (staged ? s.routes : 0) + next[2 * static_cast<std::size_t>(parent[u]) + (staged ? 1 : 0)]++;
  }
  return slot;
}

/// Trees (k a root, root-major, with their host arcs) that the rank permutation `sigma` maps onto
/// themselves (root r's j-th tree onto root sigma(r)'s), arcs staged through host memory onto arcs
/// so staged, as the stars relayed inside groups (synth::star_relay_trees, groups of consecutive
/// ranks) under a turn of every host's ranks by one group: the map of their channels (tree t's
/// slots at t slots ..), each arc's onto its image's and the slots no arc takes onto the image
/// tree's alike, in order. nullopt where the trees are not so.
std::optional<std::vector<int>> shifted_channels(const std::vector<std::vector<int>>& trees, const std::vector<std::vector<char>>& host,
                                                 int k, const std::vector<int>& sigma, const TreeSlots& ts, int block) {
  auto at = [](int i) { return static_cast<std::size_t>(i); };
  int p = static_cast<int>(trees.front().size()), slots = ts.total();
  auto image = [&](int t) { return sigma[at(t / k)] * k + t % k; };
  std::vector<int> map(trees.size() * at(slots), -1);
  std::vector<char> taken(map.size(), 0);
  for (int t = 0; t < static_cast<int>(trees.size()); ++t) {
    int u = image(t);
    const std::vector<int>&a = trees[at(t)], &b = trees[at(u)];
    for (int c = 0; c < p; ++c) {
      int pc = a[at(c)], img = b[at(sigma[at(c)])];
      if ((pc < 0 ? -1 : sigma[at(pc)]) != img || host[at(t)][at(c)] != host[at(u)][at(sigma[at(c)])]) return std::nullopt;
    }
    std::vector<int> from = arc_slots(a, &host[at(t)], ts, block), to = arc_slots(b, &host[at(u)], ts, block);
    for (int c = 0; c < p; ++c) {
      if (from[at(c)] < 0) continue;
      std::size_t x = at(t * slots + from[at(c)]);
      int y = u * slots + to[at(sigma[at(c)])];
      if (map[x] >= 0 && map[x] != y) return std::nullopt;
      map[x] = y;
      taken[at(y)] = 1;
    }
  }
  for (int t = 0; t < static_cast<int>(trees.size()); ++t) {
    int u = image(t), j = 0;
    for (int sl = 0; sl < slots; ++sl) {
      if (map[at(t * slots + sl)] >= 0) continue;
      while (j < slots && taken[at(u * slots + j)]) ++j;
      if (j == slots) return std::nullopt;
      map[at(t * slots + sl)] = u * slots + j;
      taken[at(u * slots + j)] = 1;
    }
  }
  return map;
}

/// The param host_arcs: per tree (';' between), the ranks (',' between) whose arc from their
/// parent is staged through host memory.
std::string format_host_arcs(const std::vector<std::vector<char>>& host) {
  std::string s;
  for (std::size_t t = 0; t < host.size(); ++t) {
    if (t) s += ';';
    bool first = true;
    for (std::size_t r = 0; r < host[t].size(); ++r)
      if (host[t][r]) {
        s += (first ? "" : ",") + std::to_string(r);
        first = false;
      }
  }
  return s;
}

/// The host share's hosts (param share_hosts "g:r,r,...": g ranks a host, then the ranks host by
/// host), where the share crosses hosts (docs/synth.md, "Across two hosts"): root r's
/// share goes to the other ranks of its host and to the rank of its local index on every other
/// host (r's rail: each share chunk crosses a host's NICs once, as the trees' do), which hands it
/// to the others of its host; every arc inside a host staged through host memory, the rail's
/// arcs over the routes. Absent: one host, a star from r.
struct ShareGrid {
  int g = 0;              ///< ranks a host
  std::vector<int> rank;  ///< host by host
  std::vector<int> pos;   ///< each rank's place in `rank`
  int hosts() const { return static_cast<int>(rank.size()) / g; }
  int host(int x) const { return pos[static_cast<std::size_t>(x)] / g; }
  int local(int x) const { return pos[static_cast<std::size_t>(x)] % g; }
  int at(int e, int l) const { return rank[static_cast<std::size_t>(e * g + l)]; }
  /// x's parent in root r's share tree (-1 at r).
  int parent(int r, int x) const {
    if (x == r) return -1;
    if (host(x) == host(r) || local(x) == local(r)) return r;
    return at(host(x), local(r));
  }
  /// x's children in root r's share tree: at r, its host's others then its rail's ranks on the
  /// other hosts; at a rail's rank, the others of its host.
  std::vector<int> children(int r, int x) const {
    std::vector<int> c;
    int er = host(r), lr = local(r);
    if (x == r) {
      for (int l = 0; l < g; ++l)
        if (l != lr) c.push_back(at(er, l));
      for (int e = 0; e < hosts(); ++e)
        if (e != er) c.push_back(at(e, lr));
    } else if (host(x) != er && local(x) == lr) {
      for (int l = 0; l < g; ++l)
        if (l != lr) c.push_back(at(host(x), l));
    }
    return c;
  }
  /// The offset of x's first arc among root r's p - 1 (r's, then each rail rank's by host).
  int first(int r, int x) const {
    if (x == r) return 0;
    int e = host(x), er = host(r);
    return (g - 1) + (hosts() - 1) + (e < er ? e : e - 1) * (g - 1);
  }
};

std::string format_share_grid(const synth::HostGrid& grid) {
  std::string s = std::to_string(grid.local) + ":";
  for (std::size_t i = 0; i < grid.rank.size(); ++i) s += (i ? "," : "") + std::to_string(grid.rank[i]);
  return s;
}

/// Param share_hosts read and checked; nullopt where the plan has none.
std::optional<ShareGrid> read_share_grid(const PlanInfo& info) {
  auto it = info.params.find("share_hosts");
  if (it == info.params.end()) return std::nullopt;
  int p = info.req.nranks;
  auto bad = [&](const std::string& why) { return InputError("synth: plan parameter share_hosts \"" + it->second + "\": " + why); };
  const std::string& s = it->second;
  const char* c = s.data();
  const char* end = c + s.size();
  ShareGrid grid;
  auto [q, ec] = std::from_chars(c, end, grid.g);
  if (ec != std::errc() || q == end || *q != ':' || grid.g < 1) throw bad("expected ranks a host, ':', then the ranks host by host");
  c = q + 1;
  grid.pos.assign(static_cast<std::size_t>(std::max(p, 0)), -1);
  while (c < end) {
    int v = 0;
    auto [n, e] = std::from_chars(c, end, v);
    if (e != std::errc() || v < 0 || v >= p || grid.pos[static_cast<std::size_t>(v)] >= 0)
      throw bad("expected each rank 0.." + std::to_string(p - 1) + " once, at character " + std::to_string(c - s.data()));
    grid.pos[static_cast<std::size_t>(v)] = static_cast<int>(grid.rank.size());
    grid.rank.push_back(v);
    c = n;
    if (c < end && *c != ',') throw bad("unexpected '" + std::string(1, *c) + "' at character " + std::to_string(c - s.data()));
    if (c < end) ++c;
  }
  if (static_cast<int>(grid.rank.size()) != p || p % grid.g != 0 || p / grid.g < 2)
    throw bad("not the " + std::to_string(p) + " ranks on two hosts or more of " + std::to_string(grid.g) + " each");
  return grid;
}

/// How a plan uses its trees, from the request and (AllReduce) param "allreduce".
struct Shape {
  int root = -1;      ///< the one root of every tree (Broadcast, Reduce, AllReduce as reduce-bcast); -1: k per rank
  bool up = false;    ///< partial sums up the reversed trees (ReduceScatter, Reduce, AllReduce)
  bool down = false;  ///< data down the trees (AllGather, Broadcast, AllReduce)
  /// Trees per rank k, chunks per tree m: chunks of the input, output and scratch buffers.
  std::uint32_t in_chunks = 0, out_chunks = 0, scratch_chunks = 0;
  std::uint32_t unit = 0;  ///< chunks of a root's slice (the whole vector of a one-root plan): k m + host, or tree_units' sum
};

constexpr std::string_view kRsAg = "rs-ag", kReduceBcast = "reduce-bcast";

/// `units` > 0: a root's slice of that many chunks (param tree_units), not k m + host.
Shape shape(const Request& req, std::string_view allreduce, int allreduce_root, int k, int m, int host = 0, int units = 0) {
  Shape s;
  auto unit = static_cast<std::uint32_t>(units > 0 ? units : k * m + host), whole = static_cast<std::uint32_t>(req.nranks) * unit;
  s.unit = unit;
  s.up = facts(req.coll).reduces;
  s.down = req.coll != Collective::ReduceScatter && req.coll != Collective::Reduce;
  if (facts(req.coll).has_root) s.root = req.root;
  if (req.coll == Collective::AllReduce && allreduce == kReduceBcast) s.root = allreduce_root;
  if (s.root >= 0) {
    s.in_chunks = s.out_chunks = unit;  // tree t carries chunks [t m, (t + 1) m) of the vector
    return s;
  }
  s.in_chunks = req.coll == Collective::AllGather ? unit : whole;
  s.out_chunks = req.coll == Collective::ReduceScatter ? unit : whole;
  if (s.up) s.scratch_chunks = whole;  // a rank's partial sums of the slices it relays, laid out as its input
  return s;
}

/// The plan's parameters checked as its programs need them, with the trees (none for one rank)
/// and the shape they give.
SynthTrees read_params(const PlanInfo& info, Shape& sh) {
  const Request& req = info.req;
  int p = req.nranks;
  SynthTrees st;
  st.k = param_int(info, "channels", 1);
  st.m = param_int(info, "pipeline", kDefaultPipeline);
  std::string allreduce = info.params.count("allreduce") ? info.params.at("allreduce") : std::string(kRsAg);
  if (req.coll == Collective::AllReduce && allreduce != kRsAg && allreduce != kReduceBcast)
    throw InputError("synth: plan parameter allreduce is \"" + allreduce + "\", expected " + std::string(kRsAg) + " or " +
                     std::string(kReduceBcast));
  int root_param = param_int(info, "root", 0);
  if (root_param < 0 || root_param >= p) throw InputError("synth: plan parameter root " + std::to_string(root_param) + " is not a rank");
  st.host = param_int(info, "host_chunks", 0);
  if (st.host < 0 || st.host > 65535)
    throw InputError("synth: plan parameter host_chunks " + std::to_string(st.host) + " is not 0 to 65535");
  // Every rank's trees of unequal shares: a root's slice is its trees' units (checked against the
  // trees below).
  std::int64_t slice_units = 0;
  const std::string kUnitsWhere =
      "synth: plan parameter tree_units: units are for every rank's trees, without host chunks, host arcs, rings or tree_chunks";
  if (auto it = info.params.find("tree_units"); it != info.params.end()) {
    if (facts(req.coll).has_root || (req.coll == Collective::AllReduce && allreduce == kReduceBcast) || st.host > 0)
      throw InputError(kUnitsWhere);
    st.units = param_ints("synth: plan parameter tree_units", it->second, 1, 1 << 20, "a positive unit count per tree");
    for (std::size_t t = 0; t < st.units.size() && st.k > 0 && t < static_cast<std::size_t>(st.k); ++t) slice_units += st.units[t];
    if (slice_units > (1 << 24)) throw InputError("synth: plan parameter tree_units: a root's slice of more than 2^24 units");
  }
  sh = shape(req, allreduce, root_param, std::max(st.k, 1), std::max(st.m, 1), st.host, static_cast<int>(slice_units));
  if (st.host > 0 && (info.params.count("sym_grid") > 0 || info.params.count("sym_torus") > 0))
    throw InputError("synth: plan parameter host_chunks: the host share is for packed trees, not symmetric or torus ones");
  if (slice_units > 0 && st.k >= 1 && st.m >= 1 && (info.in_chunks != sh.in_chunks || info.out_chunks != sh.out_chunks))
    throw InputError("synth: plan parameter tree_units: root 0's trees hold " + std::to_string(slice_units) +
                     " units, which do not match " + std::to_string(info.in_chunks) + " input chunks");
  if (st.k < 1 || st.m < 1 || info.in_chunks != sh.in_chunks || info.out_chunks != sh.out_chunks)
    throw InputError("synth: plan parameters channels=" + std::to_string(st.k) + ", pipeline=" + std::to_string(st.m) + " do not match " +
                     std::to_string(info.in_chunks) + " input chunks");
  if (req.coll == Collective::AllReduce) st.allreduce = allreduce;
  st.root = sh.root;
  // A symmetric plan (synth/symmetric.h) gives its trees as host 0's pattern instead.
  bool sym = info.params.count("sym_grid") > 0 || info.params.count("sym_torus") > 0;
  if (sym &&
      (sh.root >= 0 || !(req.coll == Collective::AllGather || req.coll == Collective::ReduceScatter || req.coll == Collective::AllReduce)))
    throw InputError(
        "synth: plan parameter sym_grid: symmetric trees are for AllGather, ReduceScatter and AllReduce over every rank's trees");
  if (p > 1 && !sym) st.trees = parse_trees(info, p, st.k, sh.root);
  if (info.params.count("host_arcs") > 0) {
    if (sym || p < 2) throw InputError("synth: plan parameter host_arcs: host arcs are for packed trees, not symmetric or torus ones");
    st.host_arcs = parse_host_arcs(info.params.at("host_arcs"), st.trees);
  }
  if (info.params.count("arcs") > 0 && info.params.at("arcs") == "orders") {
    if (sym || p < 3 || info.params.count("host_arcs") > 0 || st.host > 0)
      throw InputError("synth: plan parameter arcs=orders: chains along rings are trees of 3 ranks or more, alone");
    // Every tree a chain through all p ranks from its root, and ring j's chains (tree t's ring is
    // t mod k) one cycle: each rank's child the same in all of them (else one channel a ring
    // cannot carry them in order).
    std::vector<std::vector<int>> next(static_cast<std::size_t>(st.k), std::vector<int>(static_cast<std::size_t>(p), -1));
    for (std::size_t t = 0; t < st.trees.size(); ++t) {
      std::size_t j = t % static_cast<std::size_t>(st.k);
      std::vector<int> child(static_cast<std::size_t>(p), -1);
      int linked = 0;
      for (int c = 0; c < p; ++c) {
        int up = st.trees[t][static_cast<std::size_t>(c)];
        if (up < 0) continue;
        int& slot = child[static_cast<std::size_t>(up)];
        int& ring = next[j][static_cast<std::size_t>(up)];
        if (slot >= 0 || (ring >= 0 && ring != c))
          throw InputError("synth: plan parameter arcs=orders: tree " + std::to_string(t) + " is not a chain round ring " +
                           std::to_string(j) + " (rank " + std::to_string(up) + ")");
        slot = ring = c;
        ++linked;
      }
      if (linked != p - 1) throw InputError("synth: plan parameter arcs=orders: tree " + std::to_string(t) + " is not a chain");
    }
    st.rings = true;
  }
  if (auto it = info.params.find("tree_chunks"); it != info.params.end()) {
    // One root's trees of unequal shares (lay_rooted): tree t's chunks follow tree t - 1's.
    if (sh.root < 0 || st.host > 0 || st.rings || !st.host_arcs.empty() || p < 2)
      throw InputError("synth: plan parameter tree_chunks: shares are for one root's trees, without host chunks, host arcs or rings");
    st.chunks =
        param_ints("synth: plan parameter tree_chunks", it->second, 1, std::numeric_limits<int>::max(), "a positive chunk count per tree");
    std::int64_t sum = 0;
    for (int c : st.chunks) sum += c;
    if (st.chunks.size() != st.trees.size() || sum != static_cast<std::int64_t>(st.k) * st.m)
      throw InputError("synth: plan parameter tree_chunks: " + std::to_string(st.chunks.size()) + " counts summing to " +
                       std::to_string(sum) + ", expected one per tree (" + std::to_string(st.trees.size()) +
                       ") summing to channels x pipeline (" + std::to_string(static_cast<std::int64_t>(st.k) * st.m) + ")");
  }
  if (!st.units.empty()) {
    // Every rank's k trees, each root's units summing to the same slice (the first root's).
    if (sh.root >= 0 || st.host > 0 || st.rings || !st.host_arcs.empty() || !st.chunks.empty() || p < 2) throw InputError(kUnitsWhere);
    if (st.units.size() != st.trees.size())
      throw InputError("synth: plan parameter tree_units: " + std::to_string(st.units.size()) + " counts, expected one per tree (" +
                       std::to_string(st.trees.size()) + ")");
    for (std::size_t r = 0; r < static_cast<std::size_t>(p); ++r) {
      std::int64_t sum = 0;
      for (std::size_t j = 0; j < static_cast<std::size_t>(st.k); ++j) sum += st.units[r * static_cast<std::size_t>(st.k) + j];
      if (sum != slice_units)
        throw InputError("synth: plan parameter tree_units: root " + std::to_string(r) + "'s trees hold " + std::to_string(sum) +
                         " units, root 0's " + std::to_string(slice_units) + " (every root's slice is one size)");
    }
  }
  if (info.params.count("tree_shift") > 0) {
    st.shift = param_int(info, "tree_shift", 0);
    st.block = param_int(info, "tree_block", p);
    if (sym || sh.root >= 0 || p < 2 || st.block < 2 || st.block > p || p % st.block != 0 || st.shift < 1 || st.shift >= st.block ||
        st.block % st.shift != 0)
      throw InputError("synth: plan parameters tree_shift " + info.params.at("tree_shift") + ", tree_block " + std::to_string(st.block) +
                       " are not a shift inside blocks of every rank's packed trees (a block of 2 to p ranks dividing p = " +
                       std::to_string(p) + ", a shift of 1 to block - 1 dividing the block)");
  }
  return st;
}

class SynthAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "synth"; }

  std::string_view formula(Collective c) const override {
    switch (c) {
      case Collective::AllGather: return "(depth + m - 1)(n/(p k m))/u: k trees per rank packed at the topology's rate, m chunks each";
      case Collective::ReduceScatter: return "(depth + m - 1)(n/(p k m))/u + ng: the AllGather trees reversed, summing on the way up";
      case Collective::AllReduce:
        return "2(depth + m - 1)(n/(p k m))/u + ng: ReduceScatter up the trees, then AllGather down them; or Reduce then Broadcast "
               "on one root's trees, whichever simulates faster";
      case Collective::Broadcast: return "(depth + m - 1)(n/(k m))/u: k trees from the root packed at its max-flow rate, m chunks each";
      case Collective::Reduce: return "(depth + m - 1)(n/(k m))/u + ng: the Broadcast trees reversed, summing on the way up";
      default: return "not applicable";
    }
  }

  /// None: every layout chooses its trees a root, fan-out and chunks by simulating them already
  /// (fastest_pipeline, fastest_rooted, fastest_symmetric), over the values auto's knobs tried
  /// (channels 1, 2, 4; pipeline 4, 64), and each knob value would lay them out again. What auto
  /// chooses, `--algo synth` makes again.
  std::vector<Knob> knobs(const Request&, const topo::Topology*) const override { return {}; }

  bool supports(const Request& req, const topo::Topology* t, std::string* why) const override {
    auto no = [&](std::string w) {
      if (why) *why = std::move(w);
      return false;
    };
    if (req.coll == Collective::AlltoAll) return no("synth does AllGather, ReduceScatter, AllReduce, Broadcast and Reduce (docs/synth.md)");
    if (!t) return no("synth needs a topology");
    if (static_cast<std::size_t>(req.nranks) > t->num_ranks()) return no("the topology has fewer ranks");
    std::vector<double> w = bounds::rank_weights(*t, req.nranks);
    for (double x : w)
      if (x > 1) return no("synth needs one rank per GPU (ranks sharing a vertex are not handled yet)");
    // Beyond kMaxRanks only by symmetry (synth/symmetric.h): host 0's pattern, replicated; one
    // root's trees on hosts lined up by rail (rooted_trees; synth::rail_hosts: of one size, or
    // some short of GPUs).
    if (req.nranks > kMaxRanks) {
      std::string sym_why;
      bool ok = rooted_request(req.coll)
                    ? synth::rail_hosts(*t, req.nranks, &sym_why).has_value() || star_groups_here(*t, req.nranks)
                    : symmetric_request(req.coll) &&
                          (torus(*t, req.nranks) || one_star_host(*t, req.nranks) || quotient(*t, req.nranks, kSymCheckFanout, &sym_why) ||
                           (req.nranks <= kMaxEveryRailsRanks && synth::rail_hosts(*t, req.nranks, &sym_why)));
      if (!ok)
        return no("synth packs trees for at most " + std::to_string(kMaxRanks) +
                  " ranks, beyond only AllGather, ReduceScatter and AllReduce on hosts lined up by rail, a torus or one host's switch, and "
                  "Broadcast and Reduce on hosts lined up by rail or one host's switch of paired GPUs (" +
                  (symmetric_request(req.coll) || rooted_request(req.coll) ? sym_why : std::string("not this collective")) + ")");
    }
    return true;
  }

  /// Beyond kMaxAutoRanks, where the fast paths apply (host 0's pattern on hosts alike; one
  /// root's trees by rails on hosts of one size), up to kMaxAutoSymRanks (kMaxAutoRootedRanks for
  /// Broadcast and Reduce): their layouts take 0.1-3 s there, the general solver's tens of seconds.
  bool in_auto(const Request& req, const topo::Topology* t, std::string* why) const override {
    if (req.nranks <= kMaxAutoRanks) return supports(req, t, why);
    // Host 0's pattern is itself solved by the general solver, and one root's trees by rails are
    // laid out over every local GPU: both are quick only on hosts of at most kMaxAutoRanks ranks
    // (2 x gb200-nvl72, 72 a host, took auto past a minute for one ReduceScatter), or, for host
    // 0's pattern, on hosts whose GPUs hang off one switch, whose trees are stars found at once
    // (synth::star_rate: the same 2 x gb200-nvl72 in 0.1 s).
    std::optional<synth::HostGrid> hosts = t ? synth::rail_hosts(*t, req.nranks, nullptr) : std::nullopt;
    const int most = rooted_request(req.coll) ? kMaxAutoRootedRanks : kMaxAutoSymRanks;
    // One host whose GPUs hang off one switch (a GB200 NVL72 rack): stars, and stars relayed
    // through host memory (offer_host_arcs), laid out at once and simulated folded.
    if (t && symmetric_request(req.coll) && req.nranks <= most && one_star_host(*t, req.nranks)) return supports(req, t, why);
    // Broadcast and Reduce there where its GPUs pair up through host memory (one GB200 NVL72
    // rack): the root's trees relayed through each pair's Grace (offer_star_relay_root), laid out
    // at once.
    if (t && rooted_request(req.coll) && req.nranks <= most && one_star_host(*t, req.nranks) && star_groups_here(*t, req.nranks))
      return supports(req, t, why);
    bool fast =
        hosts && req.nranks <= most &&
        ((symmetric_request(req.coll) && (hosts->local <= kMaxAutoRanks || star_hosts(*t, req.nranks)) &&
          quotient(*t, req.nranks, kSymCheckFanout, nullptr) && !(req.nranks <= kMaxRanks && symmetric_falls_short(*t, req.nranks))) ||
         (rooted_request(req.coll) && hosts->local <= kMaxAutoRanks && !rails_fall_short(*t, req.nranks, req.root)) ||
         (symmetric_request(req.coll) && hosts->local <= kMaxAutoRanks && !quotient(*t, req.nranks, kSymCheckFanout, nullptr) &&
          every_rails_here(*t, req.nranks)));
    if (fast) return supports(req, t, why);
    if (why)
      *why = "auto weighs synth at " + std::to_string(kMaxAutoRanks) + " ranks at most, beyond only on hosts lined up by rail up to " +
             std::to_string(most) + " ranks of hosts of " + std::to_string(kMaxAutoRanks) + " ranks at most" +
             (rooted_request(req.coll) ? "" : " or of one switch each") + " (synthesis takes seconds beyond; --algo synth makes it)";
    return false;
  }

  PlanInfo layout(const Request& req, const topo::Topology* t, const AlgoOptions& opt) const override {
    std::string why;
    if (!supports(req, t, &why)) throw InputError("synth: " + why);
    int p = req.nranks;
    if (opt.inter != "" && opt.inter != kGeneral && opt.inter != kSymmetric && opt.inter != kTorus && opt.inter != kRails)
      throw InputError("synth: --inter " + opt.inter + " is not general, symmetric, torus or rails");
    // On a torus beyond kMaxRanks (or with --inter torus), rank 0's trees translated (synth/torus.h).
    if (p > 1 && (opt.inter == kTorus || (opt.inter.empty() && p > kMaxRanks && symmetric_request(req.coll) && torus(*t, p))))
      return fastest_torus(req, *t, opt);
    if (opt.inter == kRails && !every_rails_here(*t, p))
      throw InputError("synth: --inter rails: every rank's trees by rails are for up to " + std::to_string(kMaxEveryRailsRanks) +
                       " ranks on two hosts or more lined up by rail (of one size, or short of GPUs: synth::rail_hosts)");
    if (p > kMaxRanks && opt.inter == kGeneral)
      throw InputError("synth: the general solver packs trees for at most " + std::to_string(kMaxRanks) + " ranks");
    // By default beyond kMaxAutoRanks, host 0's pattern wherever the hosts are alike: on 4 x
    // dgx-h100 it lands at 1.030 / 1.038 / 1.030 x the bound (AllGather / ReduceScatter /
    // AllReduce) in 0.2-0.5 s, where the general solver gives 1.113 / 1.174 / 1.052 in 10-97 s
    // (results/synth_symmetric.md); the general solver where they are not.
    // Where host 0's pattern falls short of the routed optimum (its intra-host trees are one a
    // root, k = 1) and the general solver is allowed (at most kMaxRanks), both, the faster kept.
    const bool alike =
        opt.inter.empty() && p > kMaxAutoRanks && symmetric_request(req.coll) && quotient(*t, p, kSymCheckFanout, nullptr).has_value();
    const bool both = alike && p <= kMaxRanks && symmetric_falls_short(*t, p);
    const bool star = p > kMaxRanks && one_star_host(*t, p);  // one switch: no solver to skip
    // Hosts of one size that are not alike (a NIC slower than its rail's others), beyond auto's
    // general solver: every rank's trees by rails at the LP's shares (or with --inter rails). On 4
    // x dgx-a100 with a NIC at half rate the general solver packs no trees over the routes at all.
    if (p > 1 && symmetric_request(req.coll) &&
        (opt.inter == kRails || (opt.inter.empty() && p > kMaxAutoRanks && !star && !alike && every_rails_here(*t, p))))
      return default_every_rails(req, *t, opt);
    if (p > 1 && !rooted_request(req.coll) && (opt.inter == kSymmetric || (p > kMaxRanks && !star) || alike) && !both) {
      // Racks of stars whose GPUs pair up through host memory (GB200 NVL72): beside host 0's
      // pattern, every rank's trees relayed through each Grace on every rack (offer_host_arcs),
      // alone where the pattern's channels do not fit (sixteen racks).
      if (!opt.inter.empty()) return fastest_symmetric(req, *t, opt);
      if (!star_group_hosts(*t, p)) return with_orders(fastest_symmetric(req, *t, opt), req, *t, opt);
      Fastest best(*this, *t, 1e-3);
      std::string refused;
      try {
        best.offer(fastest_symmetric(req, *t, opt));
      } catch (const InputError& e) {
        refused = e.what();
      }
      offer_host_arcs(best, req, *t, opt, kRsAg, -1, !refused.empty());
      if (best.peek().params.empty()) throw InputError(refused);
      return best.take();
    }
    if (both) {
      PlanInfo sym = fastest_symmetric(req, *t, opt), general = lay_general(req, *t, opt);
      return simulated_us(GeneratedPlan(general, *this), *t) < simulated_us(GeneratedPlan(sym, *this), *t) ? general : sym;
    }
    // Where the general solver packs no trees over the routes, every rank's trees by rails.
    try {
      return lay_general(req, *t, opt);
    } catch (const InputError&) {
      if (!opt.inter.empty() || !symmetric_request(req.coll) || !every_rails_here(*t, p)) throw;
    }
    return default_every_rails(req, *t, opt);
  }

  /// fn(t, p), memoised per (topology, p) in `memo` (one per question asked).
  using TopologyMemo = Memo<std::pair<std::uint64_t, int>, bool>;
  template <class F>
  static bool per_topology(TopologyMemo& memo, const topo::Topology& t, int p, F&& fn) {
    return memo.get({t.fingerprint(), p}, std::forward<F>(fn));
  }

  /// Whether one host's routed links are a star (synth::star_rate), so that host 0's pattern
  /// needs no general solver.
  static bool star_hosts(const topo::Topology& t, int p) {
    static TopologyMemo memo;
    return per_topology(memo, t, p, [&] {
      std::optional<synth::HostGrid> g = synth::host_grid(t, p, nullptr);
      return g && synth::star_rate(synth::routed_links(synth::host_topology(t, *g), g->local), g->local).has_value();
    });
  }

  /// Whether every rank's trees by rails apply (every_rails): up to kMaxEveryRailsRanks ranks on
  /// hosts lined up by rail (two or more, synth::rail_hosts: of one size, or some short of GPUs),
  /// not racks whose GPUs pair up through host memory.
  static bool every_rails_here(const topo::Topology& t, int p) {
    return p <= kMaxEveryRailsRanks && synth::rail_hosts(t, p, nullptr) && !star_groups_here(t, p);
  }

  /// Every rank's trees by rails at the fan-out and steps a tree of kEveryRailsAllGather (and its
  /// siblings for the other two), or --pipeline's: one plan, laid out without simulating (auto
  /// simulates it as any candidate).
  PlanInfo default_every_rails(const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    std::optional<synth::HostGrid> g = synth::rail_hosts(t, req.nranks, nullptr);
    const auto [fan, m] = req.coll == Collective::AllGather              ? kEveryRailsAllGather
                          : req.coll == Collective::ReduceScatter        ? kEveryRailsReduceScatter
                          : g && g->num_hosts() <= kEveryRailsChainHosts ? kEveryRailsAllReduceChain
                                                                         : kEveryRailsAllReduce;
    // The reversed trees gain from twice the steps where the plan's sends stay within
    // kEveryRailsSends (AllGather does not: 4 steps reach 1.013 x the bound).
    int steps = m;
    if (req.coll != Collective::AllGather) {
      const std::optional<EveryRails>& e = every_rails(t, req.nranks, fan, nullptr);
      const std::uint64_t phases = req.coll == Collective::AllReduce ? 2 : 1;
      const auto p = static_cast<std::uint64_t>(req.nranks);
      if (e && phases * p * (p - 1) * static_cast<std::uint64_t>(e->k) * static_cast<std::uint64_t>(2 * m) <= kEveryRailsSends)
        steps = 2 * m;
    }
    return lay_every_rails(req, t, opt, fan, steps);
  }

  /// Whether the first p ranks are on several hosts alike whose GPUs hang off one switch each and
  /// pair up through host memory (synth::star_groups: GB200 NVL72 racks).
  static bool star_group_hosts(const topo::Topology& t, int p) { return !one_star_host(t, p) && star_groups_here(t, p); }

  /// Whether the first p ranks are all on one host and the routes between them are a star
  /// (synth::star_rate): every rank's trees are then laid out without the general solver, at any
  /// p (a GB200 NVL72 rack's 72 GPUs).
  static bool one_star_host(const topo::Topology& t, int p) {
    static TopologyMemo memo;
    return per_topology(memo, t, p, [&] {
      return p > 1 && static_cast<std::size_t>(p) <= t.num_ranks() && synth::one_host(t, p) &&
             synth::star_rate(synth::routed_links(t, p), p).has_value();
    });
  }

  /// Host 0's pattern packs below 0.9 of the optimal rate over the routed links: ForestColl's
  /// MI250 x2 (16 GCDs a host on an xGMI mesh), whose one intra-host tree a root reaches 8.33 GB/s
  /// of 11.07 (1.34 x the bound), the general solver's 2 a root 1.059 x (docs/synth.md, "Anchors").
  static bool symmetric_falls_short(const topo::Topology& t, int p) {
    double rate = 0;
    if (!quotient(t, p, kSymCheckFanout, nullptr, &rate, symmetric_intra_k(t, p))) return false;
    return rate < 0.9 * synth::optimal_rate(synth::routed_links(t, p), p).per_root_gbps;
  }

  /// The general solver's plan (every rank's trees; AllReduce in both forms, the faster kept).
  PlanInfo lay_general(const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    int p = req.nranks;
    // Beyond kMaxRanks (one host's switch) one root's trees are not packed: the general solver's.
    if (req.coll != Collective::AllReduce || p < 2 || p > kMaxRanks) return lay(req, t, opt, kRsAg, -1);
    // AllReduce both ways, keeping whichever the simulator predicts faster: every rank's trees
    // move (p - 1)/p of the vector twice, spread over all links; one root's trees move it once
    // each way with a p-th of the messages and one pipeline to fill, which wins where messages
    // are small or one rank is far better connected than the others.
    int root = best_root(t, p);
    PlanInfo spread = lay(req, t, opt, kRsAg, -1);
    PlanInfo rooted = lay(req, t, opt, kReduceBcast, root);
    double a = simulated_us(GeneratedPlan(spread, *this), t), b = simulated_us(GeneratedPlan(rooted, *this), t);
    return b < a ? rooted : spread;
  }

  /// A symmetric plan's group (synth/symmetric.h): each generator moves every rank and every
  /// tree's channels to its image's (tree root r k + j -> image(r) k + j, the child's place kept).
  std::vector<SymmetryAxis> symmetries(const PlanInfo& info) const override {
    int p = info.req.nranks;
    if (info.params.count("sym_torus") && p > 1 && symmetric_chunks(info)) return torus_symmetries(info);
    if (info.params.count("tree_shift") && !info.params.count("sym_grid") && p > 2 && symmetric_chunks(info)) return shift_symmetries(info);
    if (!info.params.count("sym_grid") || p < 2 || !symmetric_chunks(info)) return {};
    std::optional<synth::QuotientTrees> q = synth::read_params(info.params, p);
    Shape sh;
    SynthTrees st = read_params(info, sh);
    std::shared_ptr<const synth::TreeSet> ts = synth::shared_trees(info.params, p, st.k);
    int k = st.k, slots = ts->most_children, tree_channels = p * k * slots, nch = std::max<int>(1, info.channels);
    int phases = sh.up && sh.down ? 2 : 1;
    if (!q || phases * tree_channels + copy_channels(info.req.coll) != nch) return {};
    std::vector<SymmetryAxis> axes;
    for (const synth::Generator& g : synth::generators(*q)) {
      if (g.local && q->grid.num_hosts() >= kSymLocalAxisHosts) continue;
      axes.push_back(tree_axis(g.rank, g.order, k, slots, tree_channels, phases * tree_channels, nch));
    }
    return axes;
  }

  /// A plan of every rank's trees laid out by rule states their shift (param tree_shift) where the
  /// trees hold to it (shifted_channels): the stars of one switch (shift 1), and stars relayed
  /// through host memory on a GB200 NVL72 rack (shift 2: 13 s -> 0.4 s at 72 ranks).
  std::vector<SymmetryAxis> shift_symmetries(const PlanInfo& info) const {
    int p = info.req.nranks;
    Shape sh;
    SynthTrees st = read_params(info, sh);
    if (st.shift <= 0 || sh.root >= 0 || st.host > 0 || st.trees.size() != static_cast<std::size_t>(p) * static_cast<std::size_t>(st.k))
      return {};
    if (st.host_arcs.empty()) st.host_arcs.assign(st.trees.size(), std::vector<char>(static_cast<std::size_t>(p), 0));
    TreeSlots ts = slots_of(st.trees, st.host_arcs);
    std::int64_t tree_channels = static_cast<std::int64_t>(st.trees.size()) * ts.total();
    int phases = sh.up && sh.down ? 2 : 1, nch = std::max<int>(1, info.channels);
    if (phases * tree_channels + copy_channels(info.req.coll) != nch) return {};
    // The stated turn inside every block and, with several blocks, the move of the blocks, each
    // where the trees hold to it (a plan edited by hand may not).
    std::vector<SymmetryAxis> axes;
    std::vector<std::pair<int, int>> moves{{st.shift, st.block}};  // (by, inside blocks of)
    if (st.block < p) moves.emplace_back(st.block, p);
    for (auto [by, size] : moves) {
      std::vector<int> sigma;
      for (int r = 0; r < p; ++r) sigma.push_back(r / size * size + (r % size + by) % size);
      std::optional<std::vector<int>> map = shifted_channels(st.trees, st.host_arcs, st.k, sigma, ts, st.block);
      if (!map) continue;
      SymmetryAxis a;
      a.order = size / by;
      a.rank = std::move(sigma);
      a.channel.resize(static_cast<std::size_t>(nch));
      std::iota(a.channel.begin(), a.channel.end(), 0);
      for (int phase = 0; phase < phases; ++phase)
        for (std::int64_t c = 0; c < tree_channels; ++c)
          a.channel[static_cast<std::size_t>(phase * tree_channels + c)] =
              static_cast<int>(phase * tree_channels + (*map)[static_cast<std::size_t>(c)]);
      axes.push_back(std::move(a));
    }
    return axes;
  }

  std::vector<Op> program(const PlanInfo& info, int rank) const override {
    const Request& req = info.req;
    int p = req.nranks;
    Shape sh;
    SynthTrees st = read_params(info, sh);
    int k = st.k, m = st.m, host = st.host;
    std::vector<Op> ops;
    if (p == 1) {
      ops.push_back(copy(in(0), out(0), info.out_chunks, 0));
      return ops;
    }
    std::vector<std::vector<int>> trees = std::move(st.trees);
    // A symmetric plan's trees, expanded once and kept (synth/symmetric.h): children in the
    // group's order, so that a child's channel is the same in every translate.
    std::shared_ptr<const synth::TreeSet> sym = info.params.count("sym_grid") ? synth::shared_trees(info.params, p, k) : nullptr;
    std::shared_ptr<const synth::TorusTrees> tor = info.params.count("sym_torus") ? synth::shared_torus_trees(info.params, p) : nullptr;
    std::size_t ntrees = sym || tor ? static_cast<std::size_t>(p * k) : trees.size();
    TreeSlots tree_slots = slots_of(trees, st.host_arcs);
    int slots = sym ? sym->most_children : tor ? tor->most_children : tree_slots.total();
    // Chains along rings (arcs=orders): ring j's chains share channel j, their ops in step order
    // (ring_channels), as the ring algorithm runs a ring.
    const bool rings = st.rings;
    int tree_channels = rings ? k : static_cast<int>(ntrees) * slots;
    auto um = static_cast<std::uint32_t>(m), unit = sh.unit;
    auto root_of = [&](std::size_t t) { return sh.root >= 0 ? sh.root : static_cast<int>(t) / k; };
    if (req.coll == Collective::AllGather)
      ops.push_back(copy(in(0), out(static_cast<std::uint32_t>(rank) * unit), unit, static_cast<std::uint16_t>(tree_channels)));
    // AllGather, Broadcast: the own copy on a channel of its own, beside the sends (copy_channels).
    if (req.coll == Collective::Broadcast && rank == sh.root)
      ops.push_back(copy(in(0), out(0), unit, static_cast<std::uint16_t>(tree_channels)));
    // Each tree arc has a channel of its own (tree t, the child's place among its parent's
    // children): one channel sends one message after another, so a parent feeds its children (or
    // takes from them) at once only on separate channels, as ForestColl gives each a threadblock.
    // AllReduce's second phase (down the trees) runs on a second such set of channels.
    std::vector<Tree> places;
    for (std::size_t t = 0; t < ntrees && sym; ++t) {
      std::size_t r = sym->index(static_cast<int>(t)), me = static_cast<std::size_t>(rank);
      const std::vector<int>& first = sym->first[r];
      std::vector<int> children(sym->child[r].begin() + first[me], sym->child[r].begin() + first[me + 1]);
      int base = static_cast<int>(t) * slots;
      places.push_back({sym->parent[r][me], std::move(children), base, base + sym->slot[r][me]});
    }
    for (std::size_t t = 0; t < ntrees && tor; ++t) {
      synth::TorusPlace tp = synth::torus_place(*tor, root_of(t), static_cast<int>(t) % k, rank);
      int base = static_cast<int>(t) * slots;
      places.push_back({tp.parent, std::move(tp.children), base, base + tp.slot});
    }
    for (std::size_t t = 0; t < trees.size() && !sym; ++t) {
      const std::vector<int>& parent = trees[t];
      const std::vector<char>* via_host = st.host_arcs.empty() ? nullptr : &st.host_arcs[t];
      std::vector<int> children, at;
      int first = static_cast<int>(t) * slots;
      // Children in rank order; with a tree shift in the order of their distance after this rank
      // (tree_distance), so that every image of the rank sums its children's in the same order and
      // sends to them on the same slots (arc_slots).
      std::vector<int> slot = arc_slots(parent, via_host, tree_slots, st.shift > 0 ? st.block : 0);
      for (int c = 0; c < p; ++c)
        if (parent[static_cast<std::size_t>(c)] == rank) children.push_back(c);
      if (st.shift > 0)
        std::sort(children.begin(), children.end(),
                  [&](int x, int y) { return tree_distance(rank, x, st.block, p) < tree_distance(rank, y, st.block, p); });
      if (via_host || st.shift > 0)
        for (int c : children) at.push_back(first + slot[static_cast<std::size_t>(c)]);
      int up_ch = rank == root_of(t) ? first : first + slot[static_cast<std::size_t>(rank)];
      if (rings) first = up_ch = static_cast<int>(t) % k;
      places.push_back({parent[static_cast<std::size_t>(rank)], std::move(children), first, up_ch, std::move(at)});
    }
    // Tree t's step i moves n(t, i) chunks from `mine` in a slice of k m chunks (the one a rank
    // roots, or the whole vector of a one-root plan), `theirs` in a buffer of p k m: one chunk a
    // step. One root's trees of unequal shares (tree_chunks): tree t's count(t) chunks from
    // first[t]. Every rank's trees of unequal shares (tree_units): tree t's w units from first[t]
    // in its root's slice, in min(m, w) steps of about w / m.
    std::vector<std::uint32_t> first(std::max(st.chunks.size(), st.units.size()) + 1, 0);
    for (std::size_t t = 0; t < st.chunks.size(); ++t) first[t + 1] = first[t] + static_cast<std::uint32_t>(st.chunks[t]);
    for (std::size_t t = 0; t < st.units.size(); ++t)
      first[t + 1] = (t + 1) % static_cast<std::size_t>(k) == 0 ? 0 : first[t] + static_cast<std::uint32_t>(st.units[t]);
    auto count = [&](std::size_t t) {
      if (!st.units.empty()) return std::min(um, static_cast<std::uint32_t>(st.units[t]));
      return st.chunks.empty() ? um : static_cast<std::uint32_t>(st.chunks[t]);
    };
    // Tree t's step i in units: [lo(t, i), lo(t, i + 1)).
    auto lo = [&](std::size_t t, std::uint32_t i) {
      return static_cast<std::uint32_t>(static_cast<std::uint64_t>(i) * static_cast<std::uint32_t>(st.units[t]) / count(t));
    };
    auto n = [&](std::size_t t, std::uint32_t i) { return st.units.empty() ? 1u : lo(t, i + 1) - lo(t, i); };
    auto mine = [&](std::size_t t, std::uint32_t i) {
      if (!st.units.empty()) return first[t] + lo(t, i);
      if (!st.chunks.empty()) return first[t] + i;
      return static_cast<std::uint32_t>(sh.root >= 0 ? t : t % static_cast<std::size_t>(k)) * um + i;
    };
    auto theirs = [&](std::size_t t, std::uint32_t i) {
      return sh.root >= 0 ? mine(t, i) : static_cast<std::uint32_t>(root_of(t)) * unit + mine(t, i);
    };
    // Per tree and step (k m of them, one root's or a rank's slice's), the op after which this
    // rank is done with the step's chunks going up: at the root, their total is complete.
    std::vector<std::uint32_t> done(ntrees * um, kNoDep);
    auto cell = [&](std::size_t t, std::uint32_t i) { return st.chunks.empty() ? t * um + i : mine(t, i); };
    std::vector<std::pair<std::size_t, std::uint32_t>> order_up = step_order(trees, m, rank, true, !rings),
                                                       order_down = step_order(trees, m, rank, false, !rings);
    if (order_up.empty())
      for (std::size_t t = 0; t < ntrees; ++t)
        for (std::uint32_t i = 0; i < count(t); ++i) order_up.emplace_back(t, i);
    if (order_down.empty()) order_down = order_up;
    for (auto [t, i] : order_up) {
      if (!sh.up) break;
      bool top = rank == root_of(t);
      // Partial sums: in scratch where the output is a slice or needed whole (ReduceScatter,
      // AllReduce over every rank's trees), else in the output (Reduce's and reduce-bcast's
      // output is the whole vector, what a non-root rank holds there is not read).
      ChunkRef acc = sh.root >= 0 ? out(theirs(t, i)) : !top ? scratch(theirs(t, i)) : sh.down ? out(theirs(t, i)) : out(mine(t, i));
      done[cell(t, i)] = up(ops, places[t], in(theirs(t, i)), acc, n(t, i));
    }
    int shift = sh.up ? tree_channels : 0;
    for (auto [t, i] : order_down) {
      if (!sh.down) break;
      bool top = rank == root_of(t);
      Tree place = places[t];
      place.first += shift;
      place.up_ch += shift;
      for (int& ch : place.at) ch += shift;
      // Down after up (AllReduce): the root sends once the chunk's total is complete; a rank
      // of one root's trees receives over the output chunk its partial sum went up from.
      std::uint32_t after = top || sh.root >= 0 ? done[cell(t, i)] : kNoDep;
      down(ops, place, top && !sh.up ? in(mine(t, i)) : out(theirs(t, i)), top, after, n(t, i));
    }
    if (host > 0 && sh.root < 0) {
      std::optional<ShareGrid> grid = read_share_grid(info);
      host_share(ops, sh, rank, p, k * m, host, (sh.up && sh.down ? 2 : 1) * tree_channels + copy_channels(req.coll),
                 grid ? &*grid : nullptr);
    }
    if (host > 0 && sh.root >= 0)
      rooted_host_share(ops, sh, rank, p, k * m, host, (sh.up && sh.down ? 2 : 1) * tree_channels + copy_channels(req.coll));
    return ops;
  }

 private:
  /// A rank's (tree, chunk) pairs in the order their ops come ready on chains through all the
  /// ranks (read_params checks them): going down, chunk i of a chain where the rank is d hops from
  /// its root at step d + i; going up, at p - 1 - d + i, the hops below it (ties in tree order). A
  /// sender and its receiver on one ring's channel order their ops alike (the receiver's steps
  /// are the sender's plus one), so the k-th send meets the k-th receive. Empty where `none`.
  static std::vector<std::pair<std::size_t, std::uint32_t>> step_order(const std::vector<std::vector<int>>& trees, int m, int rank, bool up,
                                                                       bool none) {
    std::vector<std::pair<std::size_t, std::uint32_t>> order;
    if (none) return order;
    std::vector<std::pair<int, std::pair<std::size_t, std::uint32_t>>> keyed;
    for (std::size_t t = 0; t < trees.size(); ++t) {
      const std::vector<int>& parent = trees[t];
      int depth = 0;
      for (int x = rank; parent[static_cast<std::size_t>(x)] >= 0; x = parent[static_cast<std::size_t>(x)]) ++depth;
      int step = up ? static_cast<int>(parent.size()) - 1 - depth : depth;
      for (int i = 0; i < m; ++i) keyed.push_back({step + i, {t, static_cast<std::uint32_t>(i)}});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& e : keyed) order.push_back(e.second);
    return order;
  }

  /// One rank's place in one tree: its parent (-1 at the root), children, the tree's first
  /// channel (child q's arc is on first + q, or on at[q] where given: host arcs) and the channel
  /// of the arc to its parent.
  struct Tree {
    int parent;
    std::vector<int> children;
    int first;
    int up_ch;
    std::vector<int> at = {};
    int child_ch(std::size_t q) const { return at.empty() ? first + static_cast<int>(q) : at[q]; }
  };

  /// The plan for `allreduce` (rs-ag: every rank's trees; reduce-bcast: `root`'s trees; for other
  /// collectives the request says which).
  PlanInfo lay(const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce, int allreduce_root,
               Arcs arcs = Arcs::Routed, int host = 0) const {
    PlanInfo info;
    info.req = req;
    int p = req.nranks;
    int m = opt.pipeline > 0 ? opt.pipeline : kDefaultPipeline;
    Shape probe = shape(req, allreduce, allreduce_root, 1, 1);
    if ((opt.channels <= 0 || opt.pipeline <= 0 || p > kMaxRanks || opt.inter == kSymmetric) && probe.root >= 0 && p > 1)
      return fastest_rooted(req, t, opt, allreduce, allreduce_root);
    if (opt.pipeline <= 0 && p > 1) return fastest_pipeline(req, t, opt, allreduce, allreduce_root);
    std::int64_t k = opt.channels > 0 ? opt.channels : (p > 1 ? default_trees(synth::routed_links(t, p), p) : 1);
    // Each tree takes at least one channel (per phase): refuse before synthesising so many.
    std::int64_t phases = probe.up && probe.down ? 2 : 1, roots = probe.root >= 0 ? 1 : p;
    std::string trees_of = std::to_string(k) + (probe.root >= 0 ? " trees from the root" : " trees per rank");
    if (p > 1 && phases * roots * k > 65535)
      throw InputError("synth: " + trees_of + " need at least " + std::to_string(phases * roots * k) +
                       " channels, more than a plan holds (65535)");
    info.params["channels"] = std::to_string(k);
    info.params["pipeline"] = std::to_string(m);
    if (req.coll == Collective::AllReduce) info.params["allreduce"] = std::string(allreduce);
    if (req.coll == Collective::AllReduce && probe.root >= 0) info.params["root"] = std::to_string(probe.root);
    int slots = 1;
    TreeSlots tree_slots;
    if (p > 1) {
      Synthesised syn = synthesise(t, p, k, probe.root, arcs);
      if (syn.trees.empty())
        throw InputError(arcs == Arcs::Direct ? "synth: the links between ranks do not join every rank"
                                              : "synth: the topology has no neighbour graph to relay trees over");
      if (arcs != Arcs::Routed)
        info.params["arcs"] = arcs == Arcs::Walks     ? "walks"
                              : arcs == Arcs::Relay   ? "relay"
                              : arcs == Arcs::Direct  ? "direct"
                              : arcs == Arcs::Host    ? "host"
                              : arcs == Arcs::HostFan ? "host_fan"
                              : arcs == Arcs::Orders  ? "orders"
                                                      : "rings";
      tree_slots = slots_of(syn.trees, syn.host);
      slots = tree_slots.total();
      info.params["trees"] = format_trees(syn.trees);
      if (!syn.host.empty()) info.params["host_arcs"] = format_host_arcs(syn.host);
      // A tree shift where the plan may fold (not beside a host share, which does not).
      if (syn.shift > 0 && probe.root < 0 && host == 0) {
        info.params["tree_shift"] = std::to_string(syn.shift);
        if (syn.block != p) info.params["tree_block"] = std::to_string(syn.block);
      }
      info.params["packed_gbps"] = fmt::format("{:.9g}", syn.packed_gbps);
    }
    std::int64_t channels = p > 1 ? phases * roots * k * slots + copy_channels(req.coll) : 1;
    if (arcs == Arcs::Orders && p > 1) channels = phases * k + copy_channels(req.coll);  // a channel a ring
    if (channels <= 65535) mark_host_slots(info, phases * roots * k, tree_slots, channels);
    if (host > 0 && p > 1) {
      // The host share's channels after the trees', staged through host memory, per phase: every
      // rank's stars, p (p - 1) (host_share), or one root's chain, p - 1 (rooted_host_share).
      bool stars = probe.root < 0;
      info.params["host_chunks"] = std::to_string(host);
      info.params["host_gbps"] = fmt::format("{:.9g}", stars ? host_star_rate(t, p) : chain_host_rate(t, p, probe.root));
      info.channel_paths.resize(static_cast<std::size_t>(channels), ChannelPath::Route);
      std::int64_t trees_end = channels;
      channels += phases * (stars ? p * (p - 1) : p - 1);
      info.channel_paths.resize(static_cast<std::size_t>(std::min<std::int64_t>(channels, 65535)), ChannelPath::Host);
      // Across hosts, each root's arcs to its rail's ranks go over the routes (ShareGrid).
      if (std::optional<synth::HostGrid> hosts = stars ? share_hosts(t, p) : std::nullopt) {
        info.params["share_hosts"] = format_share_grid(*hosts);
        ShareGrid grid{hosts->local, hosts->rank, hosts->pos};
        for (std::int64_t phase = 0; phase < phases; ++phase)
          for (int r = 0; r < p; ++r)
            for (int e = 0; e + 1 < grid.hosts(); ++e) {
              std::int64_t ch = trees_end + (phase * p + r) * (p - 1) + (grid.g - 1) + e;
              if (ch < static_cast<std::int64_t>(info.channel_paths.size()))
                info.channel_paths[static_cast<std::size_t>(ch)] = ChannelPath::Route;
            }
      }
    } else {
      host = 0;
    }
    if (channels > 65535)
      throw InputError("synth: " + trees_of + " need " + std::to_string(channels) + " channels, more than a plan holds (65535)");
    info.channels = static_cast<std::uint16_t>(channels);
    Shape sh = shape(req, allreduce, allreduce_root, static_cast<int>(k), m, host);
    info.in_chunks = sh.in_chunks;
    info.out_chunks = sh.out_chunks;
    if (sh.scratch_chunks > 0 && p > 1) {
      info.scratch_chunks = sh.scratch_chunks;
      info.scratch_bytes = input_bytes(req);
    }
    return info;
  }

  /// The symmetric plan at one fan-out (synth/symmetric.h): host 0's pattern in the parameters, k
  /// (--channels, default 1) identical trees per root, m chunks each (--pipeline, default 16).
  PlanInfo lay_symmetric(const Request& req, const topo::Topology& t, const AlgoOptions& opt, int fan) const {
    int p = req.nranks;
    std::string why;
    double rate = 0;
    // K distinct intra-host trees a root (symmetric_intra_k), k a multiple of K: --channels, where
    // it is one, else K.
    int K = symmetric_intra_k(t, p);
    if (opt.channels > 0 && opt.channels % K != 0) K = 1;
    std::optional<synth::QuotientTrees> q = quotient(t, p, fan, &why, &rate, K);
    if (!q) throw InputError("synth: no symmetric trees here: " + why);
    PlanInfo info;
    info.req = req;
    int k = opt.channels > 0 ? opt.channels : q->intra_k, m = opt.pipeline > 0 ? opt.pipeline : kDefaultPipeline;
    info.params["channels"] = std::to_string(k);
    info.params["pipeline"] = std::to_string(m);
    if (req.coll == Collective::AllReduce) info.params["allreduce"] = std::string(kRsAg);
    synth::write_params(*q, info.params);
    info.params["packed_gbps"] = fmt::format("{:.9g}", rate);
    Shape sh = shape(req, kRsAg, -1, k, m);
    std::int64_t phases = sh.up && sh.down ? 2 : 1;
    std::int64_t channels = phases * p * k * synth::shared_trees(info.params, p, k)->most_children + copy_channels(req.coll);
    return with_channels(std::move(info), req, sh, channels, std::to_string(k) + " symmetric trees per rank");
  }

  /// A plan of every rank's trees finished: its channels (refused past a plan's 65535, naming
  /// `trees`) and its buffers' chunks from `sh`.
  static PlanInfo with_channels(PlanInfo info, const Request& req, const Shape& sh, std::int64_t channels, const std::string& trees) {
    if (channels > 65535)
      throw InputError("synth: " + trees + " need " + std::to_string(channels) + " channels, more than a plan holds (65535)");
    info.channels = static_cast<std::uint16_t>(channels);
    info.in_chunks = sh.in_chunks;
    info.out_chunks = sh.out_chunks;
    if (sh.scratch_chunks > 0) {
      info.scratch_chunks = sh.scratch_chunks;
      info.scratch_bytes = input_bytes(req);
    }
    return info;
  }

  /// One root's pieces-per-rail trees (synth::rooted_trees) at inter-host fan-out `fan`, m chunks
  /// per tree (--pipeline, default 16); k is the trees' number.
  PlanInfo lay_rooted(const Request& req, const topo::Topology& t, const AlgoOptions& opt, int fan, Rails rails) const {
    int p = req.nranks;
    std::string why;
    // Rails::Chain: the root's own piece down a chain on its host (a seventh of the trees) where
    // that keeps the rate, else (and Relayed) relayed by each other rank in turn.
    const RootedTrees& best = best_rooted_trees(t, p, req.root, fan, rails, &why);
    if (!best) throw InputError("synth: no trees by rails here: " + why);
    const int m = opt.pipeline > 0 ? opt.pipeline : kDefaultPipeline;
    PlanInfo info = lay_root_trees(req, best->trees, m, best->rate);
    info.params["rails_fanout"] = std::to_string(fan);
    // Unequal rates (a slow NIC): tree j carries chunks in proportion to its rate, k m in all, so
    // that every tree ends together (param tree_chunks).
    if (!best->rates.empty() && m >= 2)
      info.params["tree_chunks"] = format_order(algo::round_shares(best->rates, m * static_cast<int>(best->trees.size())));
    return info;
  }

  /// Every rank's trees by rails (every_rails) at inter-host fan-out `fan`, each tree in m steps
  /// (--pipeline, else `m`); at the LP's shares (param tree_units: a root's slice in up to
  /// kRailUnits units a tree, of at least kMinRailUnit bytes) where it has them.
  PlanInfo lay_every_rails(const Request& req, const topo::Topology& t, const AlgoOptions& opt, int fan, int m) const {
    int p = req.nranks;
    std::string why;
    const std::optional<EveryRails>& e = every_rails(t, p, fan, &why);
    if (!e) throw InputError("synth: no trees by rails here: " + why);
    const int k = e->k;
    if (opt.pipeline > 0) m = opt.pipeline;
    PlanInfo info;
    info.req = req;
    info.params["channels"] = std::to_string(k);
    info.params["pipeline"] = std::to_string(m);
    info.params["rails_fanout"] = std::to_string(fan);
    info.params["packed_gbps"] = fmt::format("{:.9g}", e->rate);
    info.params["trees"] = format_trees(e->trees);
    if (req.coll == Collective::AllReduce) info.params["allreduce"] = std::string(kRsAg);
    // A root's slice in units, each tree's by its rate, the same number for every root.
    const std::uint64_t slice = req.bytes / static_cast<std::uint64_t>(p);
    const auto per_tree = static_cast<int>(std::min<std::uint64_t>(kRailUnits, slice / (static_cast<std::uint64_t>(k) * kMinRailUnit)));
    int units = 0;
    if (!e->rates.empty() && per_tree >= 2) {
      units = k * per_tree;
      std::vector<int> w;
      for (int r = 0; r < p; ++r) {
        std::vector<double> rates(e->rates.begin() + r * k, e->rates.begin() + (r + 1) * k);
        std::vector<int> share = algo::round_shares(rates, units);
        w.insert(w.end(), share.begin(), share.end());
      }
      info.params["tree_units"] = format_order(w);
    }
    Shape sh = shape(req, kRsAg, -1, k, m, 0, units);
    std::int64_t phases = sh.up && sh.down ? 2 : 1;
    std::int64_t channels = phases * p * k * slots_of(e->trees, {}).total() + copy_channels(req.coll);
    return with_channels(std::move(info), req, sh, channels, std::to_string(k) + " trees by rails per rank");
  }

  /// Tree arcs staged through host memory (`ts.host` slots a tree): each of the `trees` trees'
  /// last ts.host channels marked "host" in a plan of `channels`, the rest "route"; none where
  /// no arc is staged.
  static void mark_host_slots(PlanInfo& info, std::int64_t trees, const TreeSlots& ts, std::int64_t channels) {
    if (ts.host <= 0) return;
    info.channel_paths.assign(static_cast<std::size_t>(channels), ChannelPath::Route);
    for (std::int64_t tree = 0; tree < trees; ++tree)
      for (int sl = ts.routes; sl < ts.total(); ++sl)
        info.channel_paths[static_cast<std::size_t>(tree * ts.total() + sl)] = ChannelPath::Host;
  }

  /// A Broadcast or Reduce plan down (up) the root's `trees`, m chunks a tree, packed at `rate`;
  /// with `host`, the arcs staged through host memory (per tree and rank), each tree's last
  /// channels marked "host".
  static PlanInfo lay_root_trees(const Request& req, const std::vector<std::vector<int>>& trees, int m, double rate,
                                 const std::vector<std::vector<char>>& host = {}) {
    PlanInfo info;
    info.req = req;
    int k = static_cast<int>(trees.size());
    TreeSlots ts = slots_of(trees, host);
    std::int64_t channels = static_cast<std::int64_t>(k) * ts.total() + copy_channels(req.coll);
    if (channels > 65535)
      throw InputError("synth: " + std::to_string(k) + " trees from the root need " + std::to_string(channels) +
                       " channels, more than a plan holds (65535)");
    info.params["channels"] = std::to_string(k);
    info.params["pipeline"] = std::to_string(m);
    info.params["packed_gbps"] = fmt::format("{:.9g}", rate);
    info.params["trees"] = format_trees(trees);
    if (ts.host > 0) info.params["host_arcs"] = format_host_arcs(host);
    mark_host_slots(info, k, ts, channels);
    info.channels = static_cast<std::uint16_t>(channels);
    Shape sh = shape(req, kRsAg, -1, k, m);
    info.in_chunks = sh.in_chunks;
    info.out_chunks = sh.out_chunks;
    return info;
  }

  /// Whether the symmetric plan at the widest fan-out (default pipeline) has chunks of unequal
  /// size, which the simulator cannot fold on (algo::symmetric_chunks).
  bool uneven_symmetric(const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    AlgoOptions with = opt;
    if (with.pipeline <= 0) with.pipeline = kDefaultPipeline;
    try {
      return !symmetric_chunks(lay_symmetric(req, t, with, kSymCheckFanout));
    } catch (const InputError&) {
      return false;
    }
  }

  /// The symmetric plan at the widest fan-out of kSymFanouts whose channels fit (the shallowest
  /// trees), not simulated.
  PlanInfo widest_symmetric(const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    std::string last;
    for (auto fan = std::end(kSymFanouts); fan-- != std::begin(kSymFanouts);) {
      try {
        return lay_symmetric(req, t, opt, *fan);
      } catch (const InputError& e) {
        last = e.what();
      }
    }
    throw InputError(last);
  }

  /// Symmetric plans at each fan-out of kSymFanouts whose channels fit, and (without --pipeline)
  /// 1, 16 and 64 chunks per tree, the fastest as simulated kept; beyond kSymSearchRanks one plan.
  PlanInfo fastest_symmetric(const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    if (!symmetric_request(req.coll)) throw InputError("synth: symmetric trees are for AllGather, ReduceScatter and AllReduce");
    if (req.nranks > kSymSearchRanks) return widest_symmetric(req, t, opt);
    // A vector too small to cut into equal chunks (a few elements a tree: up to 8K on 32 x
    // dgx-h100) leaves the plan without the symmetry the simulator folds on: the six candidates'
    // simulations took 14-34 s there (AllGather, AllReduce 1K). At such sizes the trees' depth,
    // not their bandwidth, sets the time, so one plan is laid out: the widest fan-out (the
    // shallowest trees), whole pieces (one chunk a tree, or --pipeline).
    auto shallowest = [&] {
      AlgoOptions whole = opt;
      whole.pipeline = opt.pipeline > 0 ? opt.pipeline : 1;
      return widest_symmetric(req, t, whole);
    };
    const bool unfolded_slow = req.nranks > kMaxAutoRanks;  // unfolded simulations are quick up to here
    if (unfolded_slow && uneven_symmetric(req, t, opt)) return shallowest();
    Fastest best(*this, t, 1e-3);
    std::string last;
    bool any = false;
    // A fan-out at least every group's hosts - 1 and the groups - 1 makes the inter-host tree a
    // star at both levels: wider ones give the same trees, not laid out again (3 hosts: 2 of 6).
    std::optional<synth::HostGrid> grid = synth::host_grid(t, req.nranks, nullptr);
    int star = grid ? std::max(grid->hosts, grid->groups) - 1 : std::numeric_limits<int>::max();
    int prev = 0;
    for (int fan : kSymFanouts) {
      if (prev >= star) break;
      prev = fan;
      std::map<int, double> at_m;  // simulated time by chunks a tree
      for (int m : {1, kDefaultPipeline, kDeepPipeline, kDeeperPipeline}) {
        if (opt.pipeline > 0 && m != kDefaultPipeline) continue;
        // Deeper still only where 64 chunks beat 16 by more than kDeeperGain: deep intra-host
        // trees (ForestColl's MI250, depth 14: ReduceScatter 1.116 x the bound at 64 chunks,
        // 1.031 at 256), and never chunks under kMinDeeperChunk.
        if (m == kDeeperPipeline && !(at_m.count(kDefaultPipeline) && at_m.count(kDeepPipeline) &&
                                      at_m[kDeepPipeline] < at_m[kDefaultPipeline] * (1 - kDeeperGain)))
          continue;
        AlgoOptions with = opt;
        with.pipeline = opt.pipeline > 0 ? opt.pipeline : m;
        try {
          PlanInfo info = lay_symmetric(req, t, with, fan);
          // Deeper pipelines cut the chunks unequal first (8K on 32 x dgx-h100: 64 chunks a tree
          // are, 16 are not): such a candidate is left out rather than simulated unfolded.
          if (unfolded_slow && !symmetric_chunks(info)) continue;
          if (m == kDeeperPipeline && output_bytes(req) / std::max<std::uint64_t>(1, info.out_chunks) < kMinDeeperChunk) continue;
          at_m[m] = best.offer(std::move(info));
          any = true;
        } catch (const InputError& e) {
          last = e.what();
        }
      }
    }
    if (!any) return shallowest();
    return best.take();
  }

  /// The torus plan of one kind (synth/torus.h): rank 0's k trees in the parameters, every root's
  /// their translates, m chunks a tree (--pipeline, default 16).
  PlanInfo lay_torus(const Request& req, const topo::Topology& t, const AlgoOptions& opt, synth::TorusKind kind,
                     bool nic_choice = true) const {
    int p = req.nranks;
    std::string why;
    std::optional<synth::TorusGrid> g = torus(t, p, &why);
    if (!g) throw InputError("synth: no torus trees here: " + why);
    synth::TorusTrees tt = synth::torus_trees(*g, kind);
    if (opt.channels > 0 && opt.channels != tt.k)
      throw InputError("synth: torus trees come " + std::to_string(tt.k) + " a root here (--channels " + std::to_string(opt.channels) +
                       ")");
    PlanInfo info;
    info.req = req;
    int m = opt.pipeline > 0 ? opt.pipeline : kDefaultPipeline;
    info.params["channels"] = std::to_string(tt.k);
    info.params["pipeline"] = std::to_string(m);
    if (req.coll == Collective::AllReduce) info.params["allreduce"] = std::string(kRsAg);
    synth::write_torus_params(tt, info.params);
    // Trees through a second NIC where that raises the rate (a GPU fed through both of its host's
    // NICs): tree j's channels name its NIC, channel (r k + j) slots + s, period k slots.
    double rate = 0;
    std::vector<int> nics = nic_choice ? synth::torus_nics(t, tt, &rate) : std::vector<int>{};
    if (nics.empty()) rate = synth::torus_rate(t, tt);
    for (std::size_t c = 0; !nics.empty() && c < static_cast<std::size_t>(tt.k * tt.most_children); ++c)
      info.channel_nics.push_back(static_cast<std::int16_t>(nics[c / static_cast<std::size_t>(tt.most_children)]));
    info.params["packed_gbps"] = fmt::format("{:.9g}", rate);
    Shape sh = shape(req, kRsAg, -1, tt.k, m);
    std::int64_t phases = sh.up && sh.down ? 2 : 1;
    std::int64_t channels = phases * p * tt.k * tt.most_children + copy_channels(req.coll);
    return with_channels(std::move(info), req, sh, channels, std::to_string(tt.k) + " torus trees per rank");
  }

  /// Torus plans of both kinds at 1, 4, 16 and 64 chunks a tree (or --pipeline), the fastest as
  /// simulated; beyond kSymSearchRanks shortest-path trees only (a simulation of 512 ranks takes
  /// a second or two), at 1 and 4 chunks up to 512 ranks (8x8x8, AllGather / ReduceScatter /
  /// AllReduce over the bound: 1.010 / 1.055 / 1.073 at 1 chunk, 1.008 / 1.009 / 1.008 at 4, and
  /// ReduceScatter / AllReduce 1.030 / 1.021 at 16, AllGather 1.016 at 8), at 1 beyond (32x32:
  /// 1.011 / 1.011 / 1.011, at 4 1.013 / 1.014 / 1.015); docs/synth.md "Tori by translation".
  PlanInfo fastest_torus(const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    if (!symmetric_request(req.coll)) throw InputError("synth: torus trees are for AllGather, ReduceScatter and AllReduce");
    std::vector<synth::TorusKind> kinds{synth::TorusKind::Shortest, synth::TorusKind::Chains};
    std::vector<int> ms{1, 4, kDefaultPipeline, kDeepPipeline};
    if (req.nranks > kSymSearchRanks) {
      kinds.resize(1);
      ms = req.nranks <= 2 * kSymSearchRanks ? std::vector<int>{1, 4} : std::vector<int>{1};
    }
    if (opt.pipeline > 0) ms = {opt.pipeline};
    // Each with and without trees through a second NIC (torus_nics); beyond kSymSearchRanks the
    // NICs alone: on 8x8x8 they take AllGather / ReduceScatter / AllReduce from the routes'
    // 1.276 / 1.260 / 1.260 x the bound to 1.010 / 1.030 / 1.021 (docs/synth.md).
    std::vector<bool> nic_choices{true, false};
    if (req.nranks > kSymSearchRanks) nic_choices = {true};
    Fastest best(*this, t, 1e-3);
    std::string last;
    bool any = false;
    for (bool nic : nic_choices)
      for (synth::TorusKind kind : kinds)
        for (int m : ms) {
          AlgoOptions with = opt;
          with.pipeline = m;
          try {
            PlanInfo info = lay_torus(req, t, with, kind, nic);
            if (nic_choices.size() * kinds.size() * ms.size() == 1) return info;
            best.offer(std::move(info));
            any = true;
          } catch (const InputError& e) {
            last = e.what();
          }
        }
    if (!any) throw InputError(last);
    return best.take();
  }

  /// A torus plan's group: one translation per dimension; tree r k + j's channels go to the
  /// image root's tree j, the child's place kept (children are in their offsets' order).
  std::vector<SymmetryAxis> torus_symmetries(const PlanInfo& info) const {
    int p = info.req.nranks;
    Shape sh;
    SynthTrees st = read_params(info, sh);
    std::shared_ptr<const synth::TorusTrees> tt = synth::shared_torus_trees(info.params, p);
    int k = st.k, slots = tt->most_children, tree_channels = p * k * slots, nch = std::max<int>(1, info.channels);
    int phases = sh.up && sh.down ? 2 : 1;
    if (k != tt->k || phases * tree_channels + copy_channels(info.req.coll) != nch) return {};
    std::vector<SymmetryAxis> axes;
    for (const synth::TorusShift& s : synth::torus_shifts(tt->grid)) {
      axes.push_back(tree_axis(s.rank, s.order, k, slots, tree_channels, phases * tree_channels, nch));
    }
    return axes;
  }

  /// A layout laid out and simulated on `t` at a time, the fastest kept: a later one replaces it
  /// only when faster by more than `min_gain` (a fraction; near ties keep the earlier).
  class Fastest {
   public:
    Fastest(const SynthAlgorithm& algo, const topo::Topology& t, double min_gain) : algo_(algo), t_(t), min_gain_(min_gain) {}
    /// Simulates `info`, kept if the fastest so far; returns its time.
    double offer(PlanInfo info) {
      double us = simulated_us(GeneratedPlan(info, algo_), t_);
      if (best_us_ == 0 || us < best_us_ * (1 - min_gain_)) {
        best_ = std::move(info);
        best_us_ = us;
      }
      return us;
    }
    /// Keeps `info` unsimulated where nothing was offered yet (the one candidate).
    void put(PlanInfo info) {
      if (best_us_ == 0 && best_.params.empty()) best_ = std::move(info);
    }
    PlanInfo take() { return std::move(best_); }
    /// The fastest so far (empty params: none yet).
    const PlanInfo& peek() const { return best_; }

   private:
    const SynthAlgorithm& algo_;
    const topo::Topology& t_;
    double min_gain_;
    PlanInfo best_;
    double best_us_ = 0;
  };

  /// Every rank's trees at m = kDefaultPipeline and kDeepPipeline chunks, the faster as simulated
  /// at the request's size (the trees are synthesised once, memoised). Deep trees pay their depth
  /// as (d + m - 1) / m: ForestColl's A100 x4 topology packs trees of depth 8 and simulates at
  /// 1.18 x the bound with 16 chunks, 1.05 with 64; small sizes want fewer, larger messages.
  PlanInfo fastest_pipeline(const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                            int allreduce_root) const {
    Fastest best(*this, t, 1e-3);
    // Where relay trees already reach the optimal rate over the routed links (the tori of one GPU
    // a host: every NIC full), no packing of routed sends does better: the splitting is skipped
    // (4x4x2 torus: 10 s of it).
    bool relay_optimal = relay_at_optimum(req, t, opt, allreduce, allreduce_root);
    for (std::int64_t k : trees_to_try(req, t, opt))
      for (int m : {kShallowPipeline, kDefaultPipeline, kDeepPipeline, kDeeperPipeline})
        // Up to kMaxAutoRanks the trees are also split over any walks (arcs=walks), as they all were
        // before routed arcs, and kept where they simulate faster: on 2 x dgx-h100 with one NIC's
        // link failed (docs/shell.md) the routed trees' AllReduce took 2397 us, the walks' 1879.
        // The routed trees also at kDeeperPipeline chunks of kMinDeeperChunk bytes or more, on
        // several hosts: under Queue the time does not fall evenly with chunks (2 x dgx-a100
        // AllGather at 16, 64 and 256: 1.059, 1.054, 1.037 x the bound).
        for (bool walks : {false, true}) {
          if (relay_optimal || (walks && req.nranks > kMaxAutoRanks) || (walks && m == kDeeperPipeline)) continue;
          AlgoOptions with = opt;
          with.pipeline = m;
          with.channels = static_cast<int>(k);
          if (m == kDeeperPipeline && !share_hosts(t, req.nranks)) continue;  // on one host 256 never won (six presets)
          if (m > kShallowPipeline && opt.pipeline <= 0 &&
              std::max(input_bytes(req), output_bytes(req)) / (static_cast<std::uint64_t>(req.nranks) * static_cast<std::uint64_t>(k * m)) <
                  kMinPipelinedChunk)
            continue;
          PlanInfo info = lay(req, t, with, allreduce, allreduce_root, walks ? Arcs::Walks : Arcs::Routed);
          if (m == kDeeperPipeline && output_bytes(req) / std::max<std::uint64_t>(1, info.out_chunks) < kMinDeeperChunk) continue;
          best.offer(std::move(info));
        }
    offer_relay(best, req, t, opt, allreduce, allreduce_root);
    offer_torus(best, req, t, opt, allreduce, allreduce_root);
    if (!relay_optimal) offer_host_arcs(best, req, t, opt, allreduce, allreduce_root);
    if (!relay_optimal) offer_host_share(best, req, t, opt, allreduce, allreduce_root);
    offer_orders(best, req, t, opt, allreduce, allreduce_root);
    return best.take();
  }

  /// Every rank's trees packed over the routes and, between two ranks on one host, the paths
  /// staged through host memory at once (Arcs::Host; docs/synth.md, "Host arcs"), where those
  /// paths add links, each root's slice is kHostArcMinSlice or more and the packing beats the
  /// routed trees' rate: kHostArcTrees trees a root (or --channels; a later count only where it
  /// packs faster than the one before, or on one box) at 64 and 256 chunks a tree (or --pipeline),
  /// each kept if it simulates faster. `alone`: nothing else is offered (host 0's pattern refused
  /// for its channels), so at any slice.
  void offer_host_arcs(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                       int allreduce_root, bool alone = false) const {
    int p = req.nranks;
    // Beyond kMaxAutoRanks only on stars whose ranks pair up through host memory (one host, or
    // hosts alike), where the trees are laid out without splitting (synth::star_relay_trees) and
    // simply offered: the plan they are weighed against is laid out elsewhere.
    const bool wide = p > kMaxAutoRanks;
    if (p < 2 || (wide && !synth::star_groups(t, p)) || shape(req, allreduce, allreduce_root, 1, 1).root >= 0 ||
        !symmetric_request(req.coll))
      return;
    if (!alone && std::max(input_bytes(req), output_bytes(req)) / static_cast<std::uint64_t>(p) < kHostArcMinSlice) return;
    std::optional<topo::Topology> links;
    double routed = 0;  // the routed trees' best rate (memoised: fastest_pipeline laid them out)
    if (!wide) {
      links = synth::routed_host_links(t, p);
      if (links->num_links() == synth::routed_links(t, p).num_links()) return;
      for (std::int64_t k : trees_to_try(req, t, opt)) routed = std::max(routed, synthesise(t, p, k, -1, Arcs::Routed).packed_gbps);
    }
    std::vector<std::int64_t> ks(std::begin(kHostArcTrees), std::end(kHostArcTrees));
    if (opt.channels > 0) ks = {opt.channels};
    std::vector<int> ms{kDeepPipeline, kDeeperPipeline};
    if (opt.pipeline > 0) ms = {opt.pipeline};
    // Beyond kMaxAutoRanks kWideHostArcTrees (or --channels), only the counts whose channels a
    // plan holds: a tree's arcs take a channel each (slots_of), 73 a tree on two GB200 NVL72
    // racks, so AllReduce's two phases hold 6 trees a root on one rack, 3 on two; where the stars'
    // do not fit, the two-level stars' (Arcs::HostFan: 11 a tree on sixteen racks).
    std::map<std::int64_t, Arcs> arcs_of;
    auto fits = [&](std::int64_t k, Arcs arcs) {
      int phases = req.coll == Collective::AllReduce ? 2 : 1;
      Synthesised syn = synthesise(t, p, k, -1, arcs);
      return !syn.trees.empty() && phases * p * k * slots_of(syn.trees, syn.host).total() + copy_channels(req.coll) <= 65535;
    };
    if (wide) {
      if (opt.channels <= 0) ks.assign(std::begin(kWideHostArcTrees), std::end(kWideHostArcTrees));
      for (std::int64_t k : ks) arcs_of[k] = fits(k, Arcs::Host) ? Arcs::Host : Arcs::HostFan;
      ks.erase(std::remove_if(ks.begin(), ks.end(), [&](std::int64_t k) { return arcs_of[k] == Arcs::HostFan && !fits(k, Arcs::HostFan); }),
               ks.end());
    }
    bool one_box = !share_hosts(t, p);
    double before = 0;  // the last count's rate over routes and host paths
    for (std::int64_t k : ks) {
      if (!one_box && !wide) {
        double rate = synth::rate_for_trees(*links, p, k);
        if (rate <= before * (1 + kHostArcGain)) continue;
        before = std::max(before, rate);
      }
      Arcs arcs = arcs_of.count(k) ? arcs_of[k] : Arcs::Host;
      Synthesised syn = synthesise(t, p, k, -1, arcs);
      if (syn.host.empty() || syn.packed_gbps <= routed * (1 + kHostArcGain)) continue;
      for (int m : ms) {
        AlgoOptions with = opt;
        with.pipeline = m;
        with.channels = static_cast<int>(k);
        PlanInfo info = lay(req, t, with, allreduce, allreduce_root, arcs);
        if (m == kDeeperPipeline && output_bytes(req) / std::max<std::uint64_t>(1, info.out_chunks) < kMinDeeperChunk) continue;
        best.offer(std::move(info));
      }
    }
  }

  /// Blink's PCIe path beside NVLink (docs/synth.md "The PCIe path"): on one host, where sends
  /// staged through host memory reach every rank (sim::HostRoutes), a share of each root's slice
  /// goes that way (host_share) and the rest down its routed trees. The share is the host stars'
  /// rate over the trees' and the stars' together (the two load different links where the trees
  /// keep to NVLink), in whole chunks beside the trees' k m: the nearest, and half of it (where
  /// trees and stars share PCIe links, as on DGX-1), each laid out at 16 and 64 chunks a tree and
  /// kept if it simulates faster. Beside the routed trees only where the host paths take links no
  /// route takes (host_paths_add_links).
  void offer_host_share(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                        int allreduce_root) const {
    int p = req.nranks;
    if (p < 2 || p > kMaxAutoRanks || shape(req, allreduce, allreduce_root, 1, 1).root >= 0 || !symmetric_request(req.coll)) return;
    double star = host_star_rate(t, p);
    if (star <= 0) return;
    for (Arcs arcs : {Arcs::Routed, Arcs::Direct}) {
      std::vector<std::int64_t> ks = trees_to_try(req, t, opt);
      if (arcs == Arcs::Direct) {
        std::optional<topo::Topology> direct = routed_direct_links(t, p);
        if (!direct) continue;
        if (opt.channels <= 0) ks = tree_counts(*direct, p);
      }
      if (arcs == Arcs::Routed && !host_paths_add_links(t, p)) continue;
      for (std::int64_t k : ks) {
        double trees = synthesise(t, p, k, -1, arcs).packed_gbps;
        if (trees <= 0) continue;
        for (int m : opt.pipeline > 0 ? std::vector<int>{opt.pipeline} : std::vector<int>{kDefaultPipeline, kDeepPipeline}) {
          // Across hosts the share's PCIe links also carry the trees' NIC traffic, which the host
          // paths' rate leaves out: a quarter of its share too (2 x mi300x AllGather: 2 of 64
          // chunks, 1.041 x the bound; its nearest, 4, 1.39).
          std::set<int> hs = share_sizes(static_cast<double>(k * m) * star / trees, 0);
          if (share_hosts(t, p)) hs.insert(std::max(1, static_cast<int>(std::lround(static_cast<double>(k * m) * star / trees / 4))));
          for (int h : hs) {
            AlgoOptions with = opt;
            with.pipeline = m;
            with.channels = static_cast<int>(k);
            best.offer(lay(req, t, with, allreduce, allreduce_root, arcs, h));
          }
        }
      }
    }
  }

  /// Whether the paths staged through host memory take links no route between the first p ranks
  /// takes (memoised per (topology, p)): on PCIe hosts they do not (every GPU's route to its peers
  /// is its PCIe link already), so a host share beside the routed trees only moves load between
  /// the same links.
  static bool host_paths_add_links(const topo::Topology& t, int p) {
    static TopologyMemo memo;
    return per_topology(memo, t, p, [&] { return synth::routed_host_links(t, p).num_links() > synth::routed_links(t, p).num_links(); });
  }

  /// Host shares tried beside k m tree chunks: `nearest` (k m x the host paths' rate over the
  /// trees', so that both finish together where they load different links), half of it (where
  /// they share some), its ceiling, and with `fill` chunks (a chain's depth less one) the share
  /// whose h + fill chunks end with the trees.
  static std::set<int> share_sizes(double nearest, int fill) {
    std::set<int> shares;
    for (double h : {nearest, nearest / 2, std::ceil(nearest), nearest - fill})
      if (std::lround(h) > 0) shares.insert(static_cast<int>(std::lround(h)));
    return shares;
  }

  /// The links the routes between ranks take over the links joining two ranks alone (the trees
  /// of Arcs::Direct), only where some route between ranks is not such a link (DGX-1: 0 to 5 over
  /// PCIe and the CPUs); elsewhere those trees are the routed packing again: nullopt.
  static std::optional<topo::Topology> routed_direct_links(const topo::Topology& t, int p) {
    topo::Topology direct = synth::direct_links(t, p);
    if (direct.num_links() == synth::routed_links(t, p).num_links()) return std::nullopt;
    return synth::routed_links(direct, p);
  }

  /// Trees per root laid out for every rank's trees: --channels, or tree_counts (one or two).
  static std::vector<std::int64_t> trees_to_try(const Request& req, const topo::Topology& t, const AlgoOptions& opt) {
    if (opt.channels > 0) return {opt.channels};
    std::vector<std::int64_t> ks = tree_counts(synth::routed_links(t, req.nranks), req.nranks);
    // Up to kMaxAutoRanks also the counts `auto` once searched as a knob on top of this search:
    // fewer trees than the rate asks for mean larger messages, more a rate the counts within 5%
    // leave (dgx1-v100 x2 ReduceScatter 1 GiB: 2 trees a root 4.5% faster than tree_counts' 1).
    if (req.nranks <= kMaxAutoRanks)
      for (std::int64_t k : kKnobTrees)
        if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
    return ks;
  }

  /// The rate of rooted_host_share's chain from `root`: synth::host_paths_rate over its arcs (two GPUs
  /// behind one PCIe switch: half its uplink).
  static double chain_host_rate(const topo::Topology& t, int p, int root) {
    std::vector<std::pair<int, int>> arcs;
    for (int i = 0; i + 1 < p; ++i) arcs.emplace_back((root + i) % p, (root + i + 1) % p);
    return synth::host_paths_rate(t, arcs);
  }

  /// One root's trees beside a host share (rooted_host_share) on one host of at most
  /// kMaxAutoRanks ranks: the trees over the routed links and (where some route leaves the links
  /// between ranks) over those links alone, k from tree_counts (or --channels), the share in
  /// whole chunks beside k m at the host paths' rate over the trees', as offer_host_share does.
  void offer_root_host_share(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                             int allreduce_root) const {
    int p = req.nranks, root = shape(req, allreduce, allreduce_root, 1, 1).root;
    if (p < 3 || p > kMaxAutoRanks || root < 0) return;
    double star = chain_host_rate(t, p, root);
    if (star <= 0) return;
    for (Arcs arcs : {Arcs::Routed, Arcs::Direct}) {
      std::optional<topo::Topology> direct = arcs == Arcs::Direct ? routed_direct_links(t, p) : std::nullopt;
      if (arcs == Arcs::Direct && !direct) continue;
      topo::Topology links = direct ? std::move(*direct) : synth::routed_links(t, p);
      // k and m: --channels and --pipeline, else the fastest trees' so far and (k) the counts
      // near the best rate over these links, the fewest first (one tree a root is a chain on a
      // switch, as deep as there are ranks: the fastest's k is what depth left worth having).
      std::vector<std::int64_t> ks{opt.channels};
      std::vector<int> ms{opt.pipeline};
      if (opt.channels <= 0) {
        ks = tree_counts(links, p, root);
        if (best.peek().params.count("channels")) ks.insert(ks.begin(), param_int(best.peek(), "channels", 1));
        std::sort(ks.begin(), ks.end());
        ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      }
      // 256 chunks a tree too: the chain is p - 1 sends deep, and its fill costs p - 2 of its h
      // chunks' time, less the more chunks there are (DGX-1 Broadcast, 6 trees: 1.107 x the
      // bound at 128 chunks with 20 down the chain, 1.068 at 256 with 75).
      if (opt.pipeline <= 0) ms = {kDefaultPipeline, 64, 128, 256};
      for (std::int64_t k : ks) {
        double trees = synthesise(t, p, k, root, arcs).packed_gbps;
        if (trees <= 0) continue;
        for (int m : ms) {
          // The chain's fill: p - 2 chunks.
          for (int h : share_sizes(static_cast<double>(k * m) * star / trees, p - 2)) {
            AlgoOptions with = opt;
            with.pipeline = m;
            with.channels = static_cast<int>(k);
            try {
              best.offer(lay(req, t, with, allreduce, allreduce_root, arcs, h));
            } catch (const InputError&) {
              // the links between ranks do not join every rank: not a candidate
            }
          }
        }
      }
    }
  }

  /// Per root, the rate every rank's host share reaches at once over its arcs staged through host
  /// memory (the least bandwidth over the arcs crossing a link direction): the stars from every
  /// rank to every other on one host; across hosts (share_hosts) the share trees' arcs inside each
  /// host, their crossings loading the NICs as the trees' own do. 0 where some arc has no such path.
  static double host_star_rate(const topo::Topology& t, int p) {
    std::vector<std::pair<int, int>> sends;
    std::optional<synth::HostGrid> hosts = share_hosts(t, p);
    ShareGrid grid;
    if (hosts) grid = ShareGrid{hosts->local, hosts->rank, hosts->pos};
    for (int a = 0; a < p; ++a)
      for (int b = 0; b < p; ++b) {
        if (a == b) continue;
        if (!hosts) {
          sends.emplace_back(a, b);
          continue;
        }
        int up = grid.parent(a, b);
        if (grid.host(up) == grid.host(b)) sends.emplace_back(up, b);
      }
    return synth::host_paths_rate(t, sends);
  }

  /// The hosts a host share crosses (ShareGrid): the first p ranks on two hosts or more of one
  /// size (synth::equal_hosts); nullopt on one host or hosts of unlike sizes.
  static std::optional<synth::HostGrid> share_hosts(const topo::Topology& t, int p) {
    std::optional<synth::HostGrid> hosts = synth::equal_hosts(t, p, nullptr);
    return hosts && hosts->local > 1 ? hosts : std::nullopt;
  }

  /// On a torus (synth/torus.h), the translated trees of both kinds at 1, 16 and 64 chunks (or
  /// --pipeline; k is fixed by the torus, --channels else) offered too: on 3D tori under Queue
  /// they beat relay trees and chains at ReduceScatter and AllReduce (4x4x2: 1.43 -> 1.30 x the
  /// bound; docs/synth.md "Tori by translation").
  void offer_torus(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                   int allreduce_root) const {
    if (shape(req, allreduce, allreduce_root, 1, 1).root >= 0 || !symmetric_request(req.coll) || !torus(t, req.nranks)) return;
    for (bool nic : {true, false})
      for (synth::TorusKind kind : {synth::TorusKind::Shortest, synth::TorusKind::Chains})
        for (int m : opt.pipeline > 0 ? std::vector<int>{opt.pipeline} : std::vector<int>{1, kDefaultPipeline, kDeepPipeline}) {
          AlgoOptions with = opt;
          with.pipeline = m;
          try {
            best.offer(lay_torus(req, t, with, kind, nic));
          } catch (const InputError&) {
            // --channels other than the torus's k: not a candidate
          }
        }
  }

  /// Whether relay trees (k of 1 and 2, or --channels) reach the optimal rate over the routed links.
  bool relay_at_optimum(const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                        int allreduce_root) const {
    if (shape(req, allreduce, allreduce_root, 1, 1).root >= 0 || req.nranks < 3) return false;
    double best = 0;
    for (int k : opt.channels > 0 ? std::vector<int>{opt.channels} : std::vector<int>{1, 2})
      best = std::max(best, synthesise(t, req.nranks, k, -1, Arcs::Relay).packed_gbps);
    return best > 0 && best >= synth::optimal_rate(synth::routed_links(t, req.nranks), req.nranks).per_root_gbps * (1 - 1e-6);
  }

  /// Relay trees (synth/relay.h) offered to `best` where the topology has them: shortest-path
  /// trees with k of 1 and 2, chains round 1 and 2 Hamiltonian cycles (k = 2, 4; or k from
  /// --channels), m of kDefaultPipeline and kDeepPipeline (or --pipeline). On tori of one GPU a
  /// host the packing above splits routers into arcs that drop units and cross the torus links
  /// unevenly (3x3 at 1.91 x the bound); trees of neighbour arcs reach the NICs' rate (docs/synth.md).
  void offer_relay(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                   int allreduce_root) const {
    if (shape(req, allreduce, allreduce_root, 1, 1).root >= 0) return;
    std::vector<int> ks{opt.channels}, ms{opt.pipeline};
    // Up to kMaxAutoRanks also 4 trees a root and 4 chunks a tree, as auto's knobs once tried (2
    // x dgx-a100 AllReduce 16 MiB: 4 trees a root 0.65% faster than 1 or 2).
    if (opt.channels <= 0) ks = req.nranks <= kMaxAutoRanks ? std::vector<int>{1, 2, 4} : std::vector<int>{1, 2};
    if (opt.pipeline <= 0) ms = {kShallowPipeline, kDefaultPipeline, kDeepPipeline};
    if (synthesise(t, req.nranks, ks.front(), -1, Arcs::Relay).trees.empty()) return;  // no neighbour graph
    // Chains round Hamiltonian cycles only where no host holds two ranks (the tori of one GPU a
    // host they are for): on the presets' two hosts they never won, and their 5 layouts (with
    // the cycles' search) were most of what relay candidates added to synth's time there.
    bool rings = one_rank_a_host(t, req.nranks);
    for (Arcs arcs : {Arcs::Relay, Arcs::Rings})
      for (int k : opt.channels <= 0 && arcs == Arcs::Rings ? std::vector<int>{2, 4} : ks) {
        if (arcs == Arcs::Rings && !rings) continue;
        if (synthesise(t, req.nranks, k, -1, arcs).trees.empty()) continue;
        // Chains are p - 1 deep: ReduceScatter on the 3x3 torus's needs 256 chunks to reach its
        // packing under Queue (1.008 x; 64: 1.17 x); one cycle's only, up to kMaxAutoRanks ranks
        // (simulating 32 ranks' chains at 256 chunks takes 5-15 s; 128 and 256 chunks did not help
        // the 3D tori's ReduceScatter on two cycles' chains).
        std::vector<int> chunks = ms;
        if (opt.pipeline <= 0 && arcs == Arcs::Rings && k == 2 && req.nranks <= kMaxAutoRanks) chunks.push_back(kRingPipeline);
        for (int m : chunks) {
          AlgoOptions with = opt;
          with.channels = k;
          with.pipeline = m;
          best.offer(lay(req, t, with, allreduce, allreduce_root, arcs));
        }
      }
  }

  /// Chains along the ring algorithm's orders (Arcs::Orders, ring_chains), k of 2 and the first
  /// host's NIC count (or --channels), at 1, kShallowPipeline and kDefaultPipeline chunks a chain
  /// (or --pipeline), offered where their counted rate reaches that of the fastest plan so far
  /// (its packed_gbps), up to kSymSearchRanks: on PCIe hosts every GPU's link carries a chain of
  /// each ring each way, the bound's rate, in p - 1 hops of one child each, which the Queue link
  /// model serves without the gaps of packed trees' fan-out (2 / 4 / 16 x pcie-8gpu AllGather:
  /// 1.050 / 1.073 / 1.082 x the bound packed; docs/synth.md "Chains along the rings"). Elsewhere
  /// the rings cross one NIC a host each and fall short, so nothing is laid out.
  void offer_orders(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                    int allreduce_root) const {
    int p = req.nranks;
    if (shape(req, allreduce, allreduce_root, 1, 1).root >= 0 || best.peek().params.empty()) return;
    std::vector<int> ms{opt.pipeline};
    if (opt.pipeline <= 0) ms = {1, kShallowPipeline, kDefaultPipeline};
    for (int k : order_counts(t, p, opt, packed_rate(best.peek()))) {
      for (int m : ms) {
        if (m > 1 && opt.pipeline <= 0 &&
            std::max(input_bytes(req), output_bytes(req)) / (static_cast<std::uint64_t>(p) * static_cast<std::uint64_t>(k * m)) <
                kMinPipelinedChunk)
          continue;
        AlgoOptions with = opt;
        with.channels = k;
        with.pipeline = m;
        best.offer(lay(req, t, with, allreduce, allreduce_root, Arcs::Orders));
      }
    }
  }

  /// The rings a root (of 2 and the first host's NIC count, or --channels) whose chains'
  /// counted rate reaches `rate`; none beyond kSymSearchRanks or on one switch.
  static std::vector<int> order_counts(const topo::Topology& t, int p, const AlgoOptions& opt, double rate) {
    std::vector<int> ks{opt.channels}, out;
    // Not on one switch: every rank's star is at the optimum one hop deep, the chains p - 1.
    if (p < 3 || p > kSymSearchRanks || one_star_host(t, p)) return out;
    if (opt.channels <= 0) {
      // Two rings, and on several hosts one a NIC of the first (a ring crosses one NIC a host),
      // up to kMaxOrderRings: a GB200 NVL72 rack's 72 NICs made 72 rings of 72 chains, 10 s of
      // simulation for nothing on one rack.
      int nics = 0;
      for (const topo::Vertex& v : t.vertices()) nics += v.kind == topo::VertexKind::Nic && v.host == t.host_of(0) ? 1 : 0;
      ks = {2};
      if (nics > 2 && nics <= kMaxOrderRings && !synth::one_host(t, p)) ks.push_back(nics);
    }
    for (int k : ks) {
      const Synthesised& chains = synthesise(t, p, k, -1, Arcs::Orders);
      if (!chains.trees.empty() && chains.packed_gbps > 0 && chains.packed_gbps >= rate * (1 - 1e-6)) out.push_back(k);
    }
    return out;
  }
  static double packed_rate(const PlanInfo& info) {
    auto it = info.params.find("packed_gbps");
    return it == info.params.end() ? 0 : std::stod(it->second);
  }

  /// `plan` (every rank's trees), or chains along the rings where they reach its rate and
  /// simulate faster (offer_orders).
  PlanInfo with_orders(PlanInfo plan, const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    if (order_counts(t, req.nranks, opt, packed_rate(plan)).empty()) return plan;
    Fastest best(*this, t, 1e-3);
    best.offer(std::move(plan));
    offer_orders(best, req, t, opt, kRsAg, -1);
    return best.take();
  }

  /// Whether no host holds two of the first p ranks.
  static bool one_rank_a_host(const topo::Topology& t, int p) {
    std::set<std::string> seen;
    for (int r = 0; r < p; ++r) {
      const std::string& host = t.vertex(t.rank_vertex(static_cast<topo::Rank>(r))).host;
      if (!host.empty() && !seen.insert(host).second) return false;
    }
    return true;
  }

  /// Broadcast and Reduce on stars whose ranks pair up through host memory (synth::star_groups: a
  /// GB200 NVL72 rack's superchips, one rack or several): the root's trees relayed through each
  /// group's host memory (synth::star_relay_root_trees), k a head (--channels, else each of
  /// kStarRootTrees), their shares and the hosts' fan-out chosen by counted rate and depth, each
  /// offered at its chunks (beyond kSymSearchRanks one plan, kept unsimulated). Whether any was.
  bool offer_star_relay_root(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    int p = req.nranks;
    if (!rooted_request(req.coll) || opt.inter == kSymmetric || p < 3 || !star_groups_here(t, p)) return false;
    std::vector<std::vector<int>> groups = *synth::star_groups(t, p);
    std::optional<synth::HostGrid> grid = synth::one_host(t, p) ? std::nullopt : synth::equal_hosts(t, p, nullptr);
    const int hosts = grid ? grid->num_hosts() : 1;
    const std::string& home = t.vertex(t.rank_vertex(static_cast<topo::Rank>(req.root))).host;
    synth::ArcPaths paths(t);
    // At k trees a head and fan-out `fan`, the shares with the highest counted rate, searched one
    // after another: the relay shares (the root's host and the others load apart, but for the
    // network between them: the share best on the root's host, and apart the one best elsewhere),
    // then the via shares.
    auto search = [&](int k, int fan, synth::RootRelay& at) {
      synth::HostTrees kept;
      at = {0, 1, 0, 1, 1, 5, fan};
      auto consider = [&](synth::RootRelay h, std::map<std::string, double>* shares = nullptr) {
        synth::HostTrees x = synth::star_relay_root_trees(paths, p, groups, req.root, k, h, shares);
        if (x.per_root_gbps > kept.per_root_gbps * (1 + 1e-9)) {
          kept = std::move(x);
          at = h;
        }
      };
      consider(at);
      double home_best = 0, away_best = 0;
      synth::RootRelay split = at;
      for (int of : kStarRootRelayOf)
        for (int relay = 1; relay < of; ++relay) {
          std::map<std::string, double> shares;
          synth::RootRelay h = at;
          h.relay = h.away = relay;
          h.relay_of = h.away_of = of;
          consider(h, &shares);
          double away = std::numeric_limits<double>::infinity();
          for (const auto& [host, x] : shares)
            if (host != home) away = std::min(away, x);
          if (shares.count(home) && shares[home] > home_best * (1 + 1e-9)) {
            home_best = shares[home];
            split.relay = relay;
            split.relay_of = of;
          }
          if (hosts > 1 && away > away_best * (1 + 1e-9)) {
            away_best = away;
            split.away = relay;
            split.away_of = of;
          }
        }
      if (hosts > 1) consider(split);
      for (auto [via, of] : kStarRootVia) {
        synth::RootRelay h = at;
        h.via = via;
        h.via_of = of;
        consider(h);
      }
      return kept;
    };
    // Chunks a tree at k trees a head: kStarRootPipelines over k (the same chunks of the root's
    // data), or --pipeline; of kMinRootedChunk bytes or more (else as many such as there are, at
    // least 1); beyond kSymSearchRanks one (laid out unsimulated): the most whose plan has at most
    // kStarRootOps sends and receives.
    auto chunks = [&](int k, std::uint64_t n) {
      std::vector<int> ms;
      for (int m : kStarRootPipelines) ms.push_back(std::max(1, m / k));
      if (opt.pipeline > 0) return std::vector<int>{opt.pipeline};
      std::vector<int> big;
      for (int m : ms)
        if (req.bytes / (n * static_cast<std::uint64_t>(m)) >= kMinRootedChunk) big.push_back(m);
      if (big.empty())
        big = {static_cast<int>(std::clamp<std::uint64_t>(req.bytes / (n * kMinRootedChunk), 1, static_cast<std::uint64_t>(ms.front())))};
      if (p > kSymSearchRanks) {
        auto ops = [&](int m) { return 2 * static_cast<std::int64_t>(p) * static_cast<std::int64_t>(n) * m; };
        while (big.size() > 1 && ops(big.back()) > kStarRootOps) big.pop_back();
        big = {big.back()};
      }
      return big;
    };
    // Each tree count (--channels, else kStarRootTrees) at the hosts' fan-out whose pipeline at
    // its most chunks, (depth + m - 1) / m at the counted rate, takes least (a wider heap is
    // shallower but sends more over each NIC, and on a GB200 over its Grace's C2C; of equals
    // within kStarRootGain the widest), each offered at its chunks (simulated, the fastest kept);
    // beyond kStarRootSimRanks only the count with the least such time (more trees split the
    // shares finer but take fewer chunks within kStarRootOps), kept unsimulated. On one host a
    // larger count only where it packs kStarRootGain faster than the smaller (its one gain there).
    struct Choice {
      synth::HostTrees trees;
      synth::RootRelay how;
      int k = 1;
      double time = std::numeric_limits<double>::infinity();
    };
    std::vector<Choice> choices;
    for (int k :
         opt.channels > 0 ? std::vector<int>{opt.channels} : std::vector<int>(std::begin(kStarRootTrees), std::end(kStarRootTrees))) {
      Choice c;
      c.k = k;
      for (int fan = std::max(1, std::min(hosts - 1, kStarRootFanout)); fan >= 1; --fan) {
        synth::RootRelay h;
        synth::HostTrees x = search(k, fan, h);
        if (x.trees.empty() || x.per_root_gbps <= 0) continue;
        int depth = 0;
        for (const std::vector<int>& parent : x.trees)
          for (int r = 0; r < p; ++r) {
            int d = 0;
            for (int at = r; parent[static_cast<std::size_t>(at)] >= 0 && d <= p; at = parent[static_cast<std::size_t>(at)]) ++d;
            depth = std::max(depth, d);
          }
        int m = chunks(k, x.trees.size()).back();
        double time = static_cast<double>(depth + m - 1) / m / x.per_root_gbps;
        if (time < c.time * (1 - kStarRootGain)) {
          c.time = time;
          c.trees = std::move(x);
          c.how = h;
        }
      }
      // On one host a count more only where it packs kStarRootGain faster than the fewer.
      if (!c.trees.trees.empty() &&
          (choices.empty() || hosts > 1 || c.trees.per_root_gbps > choices.back().trees.per_root_gbps * (1 + kStarRootGain)))
        choices.push_back(std::move(c));
    }
    if (choices.empty()) return false;
    if (p > kStarRootSimRanks) {
      auto fastest = std::min_element(choices.begin(), choices.end(),
                                      [](const Choice& a, const Choice& b) { return a.time < b.time * (1 - kStarRootGain); });
      choices = {std::move(*fastest)};
    }
    for (const Choice& c : choices) {
      std::vector<int> ms = chunks(c.k, c.trees.trees.size());
      for (int m : ms) {
        PlanInfo info = lay_root_trees(req, c.trees.trees, m, c.trees.per_root_gbps, c.trees.host);
        info.params["relay"] = fmt::format("{}/{}", c.how.relay, c.how.relay_of);
        if (hosts > 1) info.params["relay_away"] = fmt::format("{}/{}", c.how.away, c.how.away_of);
        info.params["via"] = fmt::format("{}/{}", c.how.via, c.how.via_of);
        if (hosts > 1) info.params["rails_fanout"] = std::to_string(c.how.fan);
        if (choices.size() == 1 && ms.size() == 1) best.put(std::move(info));
        else best.offer(std::move(info));
      }
    }
    return true;
  }

  /// Whether the first p ranks are on stars whose ranks pair up through host memory, one host or
  /// several alike (synth::star_groups).
  static bool star_groups_here(const topo::Topology& t, int p) {
    static TopologyMemo memo;
    return per_topology(memo, t, p, [&] { return synth::star_groups(t, p).has_value(); });
  }

  /// Broadcast and Reduce where every host holds one rank and the relay chains have cycles (the
  /// tori of one GPU a host): the root's chains round 1 or 2 Hamiltonian cycles, each way round
  /// each (synth::ring_trees), with the chains of a cycle through the host's second NIC or not
  /// (channel_nics), at 64, 256 and 1024 chunks a chain (or --pipeline), the fastest as simulated
  /// offered. Two cycles' four chains through both NICs carry the root's PCIe rate (3x3 torus:
  /// 31.5 GB/s out of the root, 7.9 a chain on 12.5 GB/s torus links, 15.75 into each NIC) where
  /// packed trees over the routes keep to one NIC (25 GB/s: 1.26 x the bound at best).
  void offer_root_chains(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    int p = req.nranks;
    // Not where the trees by rails are asked for alone (--inter symmetric), nor beyond
    // kSymSearchRanks, where they are laid out without simulating.
    if (!rooted_request(req.coll) || opt.channels > 0 || opt.inter == kSymmetric || p > kSymSearchRanks || !one_rank_a_host(t, p)) return;
    topo::RouteCache cache(t);
    sim::NicRoutes via(t, cache);
    bool second_nic = via.nic_of(t.rank_vertex(static_cast<topo::Rank>(req.root)), 1) != nullptr;
    // Beyond kMaxRanks (the packing's limit) two cycles' chains, one cycle's through NIC 1, at
    // 256 and 1024 chunks only: each simulation there is of p x 4 x m sends.
    bool wide = p > kMaxRanks;
    for (int cycles : wide ? std::vector<int>{2} : std::vector<int>{1, 2}) {
      const Synthesised& rings = synthesise(t, p, 2 * cycles, -1, Arcs::Rings);
      if (rings.trees.size() != static_cast<std::size_t>(2 * cycles * p)) continue;
      auto first = rings.trees.begin() + static_cast<std::ptrdiff_t>(2 * cycles * req.root);
      std::vector<std::vector<int>> trees(first, first + 2 * cycles);
      // Chain j goes round cycle j / 2; NIC choices: the routes' own, or one cycle's (or one
      // way's) chains through NIC 1.
      std::vector<std::vector<std::int16_t>> choices{{}};
      if (second_nic) {
        std::vector<std::int16_t> by_cycle, by_way;
        for (int j = 0; j < 2 * cycles; ++j) {
          by_cycle.push_back(static_cast<std::int16_t>((j / 2) % 2 == 1 ? 1 : -1));
          by_way.push_back(static_cast<std::int16_t>(j % 2 == 1 ? 1 : -1));
        }
        if (cycles > 1) choices.push_back(by_cycle);
        if (!wide) choices.push_back(by_way);
      }
      if (wide && choices.size() > 1) choices.erase(choices.begin());  // the routes' NIC alone: one NIC's rate
      for (const std::vector<std::int16_t>& nics : choices) {
        double packed = synth::routed_tree_rate(t, trees, nics);  // over the routes through those NICs
        if (packed <= 0) continue;
        for (int m : opt.pipeline > 0 ? std::vector<int>{opt.pipeline}
                     : wide           ? std::vector<int>{256, 1024}
                                      : std::vector<int>{64, 256, 1024}) {
          if (req.bytes / static_cast<std::uint64_t>(2 * cycles * m) < kMinRootedChunk && m > 64) continue;
          PlanInfo info = lay_root_trees(req, trees, m, packed);
          info.params["arcs"] = "rings";
          info.channel_nics = nics;  // a chain's channel is its tree's (fan-out 1)
          best.offer(std::move(info));
        }
      }
    }
  }

  /// Broadcast and Reduce up to kMaxRanks: the root's chains along the ring algorithm's two rings
  /// (its trees of ring_chains, or --channels rings; arcs=orders: a channel a ring, each rank's ops
  /// in step order) at 256, 512 and 1024 chunks a chain of at least kMinDeepRootedChunk bytes (or
  /// --pipeline), where their counted rate reaches the root's optimum over the routed links. On
  /// pcie-8gpu hosts every GPU link carries one stream of each ring each way: the bound's rate,
  /// p - 1 deep, which 1024 chunks pay as (p + 1022) / 1024 (two hosts: 1.014).
  void offer_root_orders(Fastest& best, const Request& req, const topo::Topology& t, const AlgoOptions& opt) const {
    int p = req.nranks;
    if (!rooted_request(req.coll) || opt.inter == kSymmetric || p < 3 || p > kMaxRanks) return;
    int k = opt.channels > 0 ? opt.channels : 2;
    const Synthesised& all = synthesise(t, p, k, -1, Arcs::Orders);
    if (all.trees.size() != static_cast<std::size_t>(p * k)) return;
    auto first = all.trees.begin() + static_cast<std::ptrdiff_t>(req.root * k);
    std::vector<std::vector<int>> trees(first, first + k);
    double rate = synth::routed_tree_rate(t, trees);
    if (rate <= 0 || rate < synth::broadcast_rate(synth::routed_links(t, p), p, req.root).per_root_gbps * (1 - 1e-6)) return;
    for (int m : opt.pipeline > 0 ? std::vector<int>{opt.pipeline} : std::vector<int>{256, 512, 1024}) {
      if (opt.pipeline <= 0 && req.bytes / static_cast<std::uint64_t>(k * m) < kMinDeepRootedChunk) continue;
      PlanInfo info = lay_root_trees(req, trees, m, rate);
      info.params["arcs"] = "orders";
      info.channels = static_cast<std::uint16_t>(k + copy_channels(req.coll));
      best.offer(std::move(info));
    }
  }

  /// One root's trees, k of 1, 2, 4 and p - 1 and m of 16, 64 and 128 (those the options leave
  /// open) the fastest as simulated at the request's size. Rate alone misleads here: on a switch
  /// one chain already has the root's whole rate (every rank forwards each byte once), but its
  /// depth is p - 1, which a pipeline of m chunks pays as (p + m - 2) / m; p - 1 trees of depth 2
  /// (the root sends each a p-1-th, which that rank sends to all the others, as scatter-allgather
  /// does) have the same rate, but their fan-out queues under the Queue link model.
  PlanInfo fastest_rooted(const Request& req, const topo::Topology& t, const AlgoOptions& opt, std::string_view allreduce,
                          int allreduce_root) const {
    std::vector<int> ks{opt.channels}, ms{opt.pipeline};
    if (opt.channels <= 0) {
      ks = {1, 2, 4};
      if (req.nranks - 1 > 4) ks.push_back(req.nranks - 1);
      // And the counts whose rate is near the best (tree_counts): DGX-1's root holds 6 trees on
      // its NVLinks exactly (25 GB/s each), where 7 reach 116.7 GB/s of its 150 and 4 100.
      if (req.nranks <= kMaxRanks)
        for (std::int64_t k : tree_counts(synth::routed_links(t, req.nranks), req.nranks, shape(req, allreduce, allreduce_root, 1, 1).root))
          if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(static_cast<int>(k));
    }
    if (opt.pipeline <= 0) ms = {kShallowPipeline, kDefaultPipeline, 64, 128};
    // Deeper pipelines for k trees (or rails' g x copies, at most 2 g): chunks of at least
    // kMinDeepRootedChunk bytes, at most kRootedOps sends and receives in all. Broadcast and
    // Reduce only: AllReduce's reduce-bcast form wins at small sizes, where they do not pay, and
    // simulating both phases at 512 and 1024 chunks for each k doubled its search.
    auto deep_enough = [&](int m, std::int64_t k) {
      return m <= 128 || (req.bytes / static_cast<std::uint64_t>(k * m) >= kMinDeepRootedChunk &&
                          2 * static_cast<std::int64_t>(req.nranks) * k * m <= kRootedOps);
    };
    if (opt.pipeline <= 0 && req.nranks <= kMaxRanks && rooted_request(req.coll))
      ms.insert(ms.end(), std::begin(kDeepRootedPipelines), std::end(kDeepRootedPipelines));
    Fastest best(*this, t, 0);
    // Stars whose ranks pair up through host memory (GB200 NVL72): the root's trees relayed
    // through each group's host memory, alone beyond kMaxRanks (no packing to weigh them against).
    if (offer_star_relay_root(best, req, t, opt) && req.nranks > kMaxRanks) return best.take();
    offer_root_chains(best, req, t, opt);
    offer_root_orders(best, req, t, opt);
    // Broadcast and Reduce on hosts of one size: the pieces-per-rail trees (synth::rooted_trees),
    // their own k; beyond kMaxAutoRanks (as for every rank's trees) instead of packing.
    bool rooted = false;
    bool only_rooted = opt.inter == kSymmetric || req.nranks > kMaxRanks;
    if (rooted_request(req.coll) && opt.inter != kGeneral && (opt.channels <= 0 || only_rooted) &&
        synth::rail_hosts(t, req.nranks, nullptr)) {
      // Candidates: both fan-outs at each pipeline up to kMaxRanks; beyond, the heaps (the
      // chains are H + 2 deep, the heaps 3 + log2 H) at kRootedPipelines' chunks, those of at
      // least kMinRootedChunk bytes (else the most chunks of that size, at least 1); beyond
      // kSymSearchRanks one of them, laid out without simulating (docs/synth.md, "Broadcast and
      // Reduce beyond 16 hosts").
      // Up to kMaxRanks also with the root's own piece relayed by each rank in turn (g - 1 times
      // the trees, shallower on the root's host: 4 x dgx-h100 Broadcast 1.012 x the bound
      // against the chain's 1.031, in 2.2 s against 0.3).
      std::vector<int> deep;
      if (opt.pipeline <= 0 && req.nranks > kMaxRanks) {
        constexpr int heaps = kRootedFanouts[std::size(kRootedFanouts) - 1];
        auto trees = synth::rooted_trees(t, req.nranks, req.root, heaps, nullptr, {.chain = true});
        auto k = static_cast<std::uint64_t>(trees ? trees->size() : 1);
        for (int m : kRootedPipelines)
          if (req.bytes / (k * static_cast<std::uint64_t>(m)) >= kMinRootedChunk &&
              (req.nranks <= kSymSearchRanks || deep.empty() ||
               2 * static_cast<std::int64_t>(req.nranks) * static_cast<std::int64_t>(k) * m <= kRootedOps))
            deep.push_back(m);
        if (deep.empty())
          deep.push_back(static_cast<int>(std::clamp<std::uint64_t>(req.bytes / (k * kMinRootedChunk), 1, kRootedPipelines[0])));
        if (req.nranks > kSymSearchRanks) deep = {deep.back()};
      }
      // And every piece round each host where that reaches the others' rate (ring_pays), beyond
      // kSymSearchRanks instead of the chain.
      std::vector<std::tuple<int, int, Rails>> tries;
      const std::int64_t rails_k = 2 * synth::rail_hosts(t, req.nranks, nullptr)->local;
      for (Rails rails : {Rails::Chain, Rails::Relayed, Rails::Ring})
        for (int fan : kRootedFanouts)
          for (int m : opt.pipeline > 0 || req.nranks <= kMaxRanks ? ms : deep) {
            // (Beyond kMaxRanks `deep` holds the chunk counts already, of at least kMinRootedChunk.)
            if ((req.nranks > kMaxRanks && fan != kRootedFanouts[std::size(kRootedFanouts) - 1]) ||
                (opt.pipeline <= 0 && req.nranks <= kMaxRanks &&
                 !deep_enough(m, rails == Rails::Relayed ? rails_k * rails_k / 2 : rails_k)))
              continue;
            bool ring = ring_pays(t, req.nranks, req.root, fan);
            bool keep = rails == Rails::Chain  ? !ring || req.nranks <= kSymSearchRanks
                        : rails == Rails::Ring ? ring
                                               : req.nranks <= kMaxRanks;
            if (keep) tries.emplace_back(fan, m, rails);
          }
      std::string last;
      for (auto [fan, m, rails] : tries) {
        AlgoOptions with = opt;
        with.pipeline = m;
        try {
          PlanInfo info = lay_rooted(req, t, with, fan, rails);
          if (tries.size() == 1) return info;
          best.offer(std::move(info));
          rooted = true;
        } catch (const InputError& e) {
          last = e.what();
        }
      }
      if (only_rooted && !rooted) throw InputError(last);
      if (rooted && (only_rooted || (req.nranks > kMaxAutoRanks && !rails_fall_short(t, req.nranks, req.root)))) return best.take();
    }
    if (opt.inter == kSymmetric && rooted_request(req.coll))
      throw InputError("synth: no trees by rails here: " + [&] {
        std::string why;
        synth::rail_hosts(t, req.nranks, &why);
        return why;
      }());
    for (int k : ks)
      for (int m : ms)
        // p - 1 trees also split over any walks (param arcs=walks): their arcs are not all the
        // sends' routes, so the links are loaded otherwise than packed, but on two dgx-h100 or
        // mi300x hosts such trees simulate at 1.14 / 1.26 x the bound under Queue where the
        // routed ones take 2.04 (under MaxMin the routed ones are 1.09): docs/synth.md.
        for (bool walks : {false, true}) {
          if ((walks && (k != req.nranks - 1 || k <= 4)) || (opt.pipeline <= 0 && !deep_enough(m, k))) continue;
          AlgoOptions with = opt;
          with.channels = k;
          with.pipeline = m;
          best.offer(lay(req, t, with, allreduce, allreduce_root, walks ? Arcs::Walks : Arcs::Routed));
        }
    offer_root_host_share(best, req, t, opt, allreduce, allreduce_root);
    return best.take();
  }

  /// The rank whose trees broadcast fastest over the routed links (the first of equals): the
  /// root of a reduce-bcast AllReduce.
  static int best_root(const topo::Topology& t, int p) {
    topo::Topology routed = synth::routed_links(t, p);
    int best = 0;
    double rate = -1;
    for (int r = 0; r < p; ++r) {
      double x = synth::broadcast_rate(routed, p, r).per_root_gbps;
      if (x > rate * (1 + 1e-9)) {
        rate = x;
        best = r;
      }
    }
    return best;
  }

  /// The host share (param host_chunks, docs/synth.md "The PCIe path"): chunks [km, km + host) of
  /// root r's slice go from r straight to every other rank (AllGather; ReduceScatter: from every
  /// rank straight to r, r adding them up; AllReduce: the one then the other), each pair on a
  /// channel of its own from `base` on (p (p - 1) a phase) whose sends the plan stages through host
  /// memory (channel_paths "host"): a star, as its arcs all load the PCIe links alike.
  /// With `grid` (param share_hosts), on several hosts, each root's share tree instead of the
  /// star (ShareGrid): the same p - 1 arcs and channels a root.
  static void host_share(std::vector<Op>& ops, const Shape& sh, int rank, int p, int km, int host, int base, const ShareGrid* grid) {
    auto unit = static_cast<std::uint32_t>(km + host);
    std::vector<std::uint32_t> done(static_cast<std::size_t>(p * host), kNoDep);
    auto star = [&](int r, int phase) {
      int first = base + (phase * p + r) * (p - 1);
      if (grid) {
        int up = grid->parent(r, rank);
        Tree place{up, grid->children(r, rank), first + grid->first(r, rank), 0};
        if (up >= 0) {
          std::vector<int> sib = grid->children(r, up);
          place.up_ch = first + grid->first(r, up) + static_cast<int>(std::find(sib.begin(), sib.end(), rank) - sib.begin());
        }
        return place;
      }
      Tree place{rank == r ? -1 : r, {}, first, 0};
      if (rank == r)
        for (int c = 0; c < p; ++c)
          if (c != r) place.children.push_back(c);
      place.up_ch = place.first + (rank < r ? rank : rank - 1);
      return place;
    };
    for (int r = 0; r < p && sh.up; ++r) {
      Tree place = star(r, 0);
      bool top = rank == r;
      for (int j = 0; j < host; ++j) {
        auto mine = static_cast<std::uint32_t>(km + j), theirs = static_cast<std::uint32_t>(r) * unit + mine;
        ChunkRef acc = !top ? scratch(theirs) : sh.down ? out(theirs) : out(mine);
        done[static_cast<std::size_t>(r * host + j)] = up(ops, place, in(theirs), acc);
      }
    }
    for (int r = 0; r < p && sh.down; ++r) {
      Tree place = star(r, sh.up ? 1 : 0);
      bool top = rank == r;
      for (int j = 0; j < host; ++j) {
        auto mine = static_cast<std::uint32_t>(km + j), theirs = static_cast<std::uint32_t>(r) * unit + mine;
        std::uint32_t after = top ? done[static_cast<std::size_t>(r * host + j)] : kNoDep;
        down(ops, place, top && !sh.up ? in(mine) : out(theirs), top, after);
      }
    }
  }

  /// One root's host share (Broadcast, Reduce, AllReduce as reduce-bcast; docs/synth.md "The
  /// PCIe path"): chunks [km, km + host) of the vector down a chain of sends staged through host
  /// memory, from the root through every other rank in turn (root + 1, root + 2, ... mod p), so
  /// that each rank takes that share in over its own PCIe link and the trees' NVLinks carry the
  /// rest (up: the chain reversed, summing on the way). Channels from `base`: per phase p - 1,
  /// one per arc of the chain.
  static void rooted_host_share(std::vector<Op>& ops, const Shape& sh, int rank, int p, int km, int host, int base) {
    int at = (rank - sh.root + p) % p;  // place on the chain
    auto place = [&](int phase) {
      int ch = base + phase * (p - 1) + at;  // the arc out of this rank
      return Tree{at == 0 ? -1 : (rank + p - 1) % p, at == p - 1 ? std::vector<int>{} : std::vector<int>{(rank + 1) % p}, ch, ch - 1};
    };
    std::vector<std::uint32_t> done(static_cast<std::size_t>(host), kNoDep);
    for (int j = 0; j < host && sh.up; ++j) {
      auto c = static_cast<std::uint32_t>(km + j);
      done[static_cast<std::size_t>(j)] = up(ops, place(0), in(c), out(c));
    }
    for (int j = 0; j < host && sh.down; ++j) {
      auto c = static_cast<std::uint32_t>(km + j);
      down(ops, place(sh.up ? 1 : 0), rank == sh.root && !sh.up ? in(c) : out(c), rank == sh.root, done[static_cast<std::size_t>(j)]);
    }
  }

  /// One chunk down the tree: received from the parent into `at` (not at the root), then sent on
  /// to each child, each send after the receive (at the root, after op `ready`; elsewhere the
  /// receive waits on `ready`, the rank's last use of `at` going up).
  static void down(std::vector<Op>& ops, const Tree& t, ChunkRef at, bool root, std::uint32_t ready, std::uint32_t n = 1) {
    std::uint32_t got = root ? ready : kNoDep;
    if (!root) {
      got = static_cast<std::uint32_t>(ops.size());
      Op o = recv(t.parent, at, n, static_cast<std::uint16_t>(t.up_ch));
      if (ready != kNoDep) o.depend_on(ready);
      ops.push_back(o);
    }
    for (std::size_t q = 0; q < t.children.size(); ++q) {
      int ch = t.child_ch(q);
      Op o = send(t.children[q], at, n, static_cast<std::uint16_t>(ch));
      if (got != kNoDep && (root || ch != t.up_ch)) o.depend_on(got);
      ops.push_back(o);
    }
  }

  /// One chunk up the (reversed) tree: each child's partial sum added to this rank's input chunk
  /// `own` in `acc` (a chain: each addition after the one before, on the children's channels),
  /// then the sum sent to the parent, or left in `acc` at the root. Returns the rank's last op on
  /// the chunk: the send, or at the root the op that completes the sum.
  static std::uint32_t up(std::vector<Op>& ops, const Tree& t, ChunkRef own, ChunkRef acc, std::uint32_t n = 1) {
    std::uint32_t last = kNoDep;
    for (std::size_t q = 0; q < t.children.size(); ++q) {
      Op o = recv_reduce(t.children[q], last == kNoDep ? own : acc, acc, n, static_cast<std::uint16_t>(t.child_ch(q)));
      if (last != kNoDep) o.depend_on(last);
      last = static_cast<std::uint32_t>(ops.size());
      ops.push_back(o);
    }
    if (t.parent >= 0) {
      Op o = send(t.parent, last == kNoDep ? own : acc, n, static_cast<std::uint16_t>(t.up_ch));
      if (last != kNoDep && ops[last].channel != t.up_ch) o.depend_on(last);
      ops.push_back(o);
      return static_cast<std::uint32_t>(ops.size() - 1);
    }
    if (last == kNoDep) {
      last = static_cast<std::uint32_t>(ops.size());
      ops.push_back(copy(own, acc, n, static_cast<std::uint16_t>(t.first)));
    }
    return last;
  }
};

}  // namespace

SynthTrees read_synth_trees(const PlanInfo& info) {
  Shape sh;
  SynthTrees st = read_params(info, sh);
  if (info.params.count("sym_torus") && info.req.nranks > 1)
    st.trees = synth::torus_all_trees(*synth::shared_torus_trees(info.params, info.req.nranks));
  if (info.params.count("sym_grid") && info.req.nranks > 1) {
    std::shared_ptr<const synth::TreeSet> ts = synth::shared_trees(info.params, info.req.nranks, st.k);
    for (int t = 0; t < info.req.nranks * st.k; ++t) st.trees.push_back(ts->parent[ts->index(t)]);
  }
  return st;
}

const Algorithm* make_synth() {
  static const SynthAlgorithm a;
  return &a;
}

}  // namespace collkit::plan
