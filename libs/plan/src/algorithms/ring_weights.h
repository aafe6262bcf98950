#pragma once
// Byte shares of a ring plan's channels (docs/algorithms.md, "Weighted channels"): where the
// channels' rings do not cross links of one speed alike (one NIC slower than its rail's others, a
// host short of a GPU whose ring then crosses another rail's NIC), equal shares leave the ring on
// the slowest link as the whole collective's pace. The shares that carry the most through every
// link direction the rings cross are an LP (maximise the sum of the channels' rates under each
// link direction's bandwidth, counting its crossings per channel), solved with GLPK and rounded
// to whole units.

#include <cstdint>
#include <utility>
#include <vector>

namespace collkit::topo {
class Topology;
}

namespace collkit::plan::algo {

/// The rank pairs (from, to) a channel's data crosses at once: a ring's hops, a tree's arcs.
using Hops = std::vector<std::pair<int, int>>;

/// The LP's rates per channel (GB/s; their sum the collective's rate), channel c's share moving
/// through each of hops[c] at once; empty where equal shares carry within kWeightGain of that
/// sum, fewer than two channels, or some pair has no route. Not memoised.
std::vector<double> weighted_rates(const topo::Topology& t, const std::vector<Hops>& hops);

/// The LP's rates where channels come in groups that must each move the same (every root's trees
/// of an AllGather: a root's slice is done when all its trees are): maximise the least group's
/// sum of rates, then, at that, the least channel's rate (the most even). group[c] is channel c's
/// group, 0 .. G - 1. Empty where equal shares carry within kWeightGain of that least sum (or some
/// pair has no route, or there are fewer than two channels). With `tied` (a class per channel,
/// 0 .. Q - 1), the channels of one class at one rate wherever that reaches the same least sum
/// (every root's tree of one rail alike, not the simplex's vertex of uneven shares). Not memoised.
std::vector<double> grouped_rates(const topo::Topology& t, const std::vector<Hops>& hops, const std::vector<int>& group,
                                  const std::vector<int>& tied = {});

/// Whole units summing to `units` (at least one a rate), at least one each, whose slowest channel
/// (units over rate) is the least it can be: each channel its floor of the rates' share, then each
/// spare unit to the channel that stays fastest with it.
std::vector<int> round_shares(const std::vector<double>& rates, int units);

/// Channel c's share in units of a rank's slice (their sum from units / 2 to units: the one whose
/// slowest channel is fastest, the largest of equals), from the rings' routes; empty
/// where equal shares carry within kWeightGain of the best rate (every preset's rings), where
/// `units` would be below twice the channels, or where some pair has no route. orders[c] is
/// channel c's order (position -> rank), `chain` whether it runs as a chain (p - 1 hops, no
/// wrap). Memoised per topology and orders.
std::vector<int> channel_weights(const topo::Topology& t, const std::vector<std::vector<int>>& orders, bool chain, int units);

/// Equal shares must carry at least this fraction less than the LP's best for weights to be laid out.
inline constexpr double kWeightGain = 0.05;

/// The units a slice is cut into for weights: 64 a channel, fewer where the plan's chunks over all
/// ranks would pass kMaxWeightedChunks, which keeps `coll-plan verify` of such a plan (every
/// channel executed: channels of unequal shares are not images of each other) within about
/// 700 MB, or a chunk would hold less than kMinWeightedChunk bytes (small messages, whose time is
/// latency, keep equal shares); 0 (no weights) below 2 a channel. `per_unit`: the chunks of a
/// rank's largest buffer for each unit (slices it holds x pipeline), `bytes` that buffer's size.
/// A 128-rank ring at 1 GiB gets 64 a channel (its rounding within 2% of the LP's rate), a
/// 1024-rank one 2.
inline constexpr std::uint64_t kMaxWeightedChunks = std::uint64_t{1} << 24;
inline constexpr std::uint64_t kMinWeightedChunk = 4096;
int weight_units(int channels, int ranks, std::uint64_t per_unit, std::uint64_t bytes);

}  // namespace collkit::plan::algo
