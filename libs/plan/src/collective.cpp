#include "collkit/plan/collective.h"

#include <array>
#include <cctype>
#include <string>

#include "collkit/core/error.h"

namespace collkit::plan {

namespace {

constexpr std::array<CollectiveFacts, 6> kFacts{{
    {Collective::AllReduce, "allreduce", false, true, false},
    {Collective::ReduceScatter, "reducescatter", false, true, true},
    {Collective::AllGather, "allgather", false, false, true},
    {Collective::AlltoAll, "alltoall", false, false, true},
    {Collective::Broadcast, "broadcast", true, false, false},
    {Collective::Reduce, "reduce", true, true, false},
}};

}  // namespace

const CollectiveFacts& facts(Collective c) { return kFacts[static_cast<std::size_t>(c)]; }

std::string_view to_string(Collective c) { return facts(c).name; }

std::optional<Collective> parse_collective(std::string_view text) {
  std::string norm;
  for (char ch : text)
    if (ch != '_' && ch != '-') norm += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const auto& f : kFacts)
    if (f.name == norm) return f.coll;
  return std::nullopt;
}

std::string_view to_string(ChannelPath path) { return path == ChannelPath::Host ? "host" : "route"; }

std::optional<ChannelPath> parse_channel_path(std::string_view text) {
  if (text == "route") return ChannelPath::Route;
  if (text == "host") return ChannelPath::Host;
  return std::nullopt;
}

std::uint64_t input_bytes(const Request& r) {
  return r.coll == Collective::AllGather ? r.bytes / static_cast<std::uint64_t>(r.nranks) : r.bytes;
}

std::uint64_t output_bytes(const Request& r) {
  return r.coll == Collective::ReduceScatter ? r.bytes / static_cast<std::uint64_t>(r.nranks) : r.bytes;
}

double busbw_factor(Collective c, int nranks) {
  double n = nranks;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (n - 1) / n;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AlltoAll: return (n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce: return 1.0;
  }
  return 1.0;
}

double algbw_gbps(std::uint64_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e3) : 0.0;
}

namespace {

// The bytes the request must be a multiple of: one element, or one per rank when sliced.
std::uint64_t unit_bytes(const Request& r) {
  return std::uint64_t{r.elem_bytes} * (facts(r.coll).sliced ? static_cast<std::uint64_t>(r.nranks) : 1);
}

std::string elements(const Request& r) { return r.elem_bytes == 1 ? "elements" : std::to_string(r.elem_bytes) + "-byte elements"; }

void check_shape(const Request& r) {
  std::string what = std::string(to_string(r.coll));
  if (r.nranks < 1) throw InputError(what + ": the number of ranks must be >= 1, got " + std::to_string(r.nranks));
  if (r.nranks > kMaxPlanRanks)
    throw InputError(what + ": the number of ranks must be at most " + std::to_string(kMaxPlanRanks) + " (what a plan holds), got " +
                     std::to_string(r.nranks));
  if (r.bytes > kMaxPlanBytes)
    throw InputError(what + ": the size must be at most " + std::to_string(kMaxPlanBytes) + " bytes (what a plan holds), got " +
                     std::to_string(r.bytes));
  if (r.elem_bytes < 1) throw InputError(what + ": the element size must be >= 1 byte, got 0");
  if (facts(r.coll).has_root && (r.root < 0 || r.root >= r.nranks))
    throw InputError(what + ": root " + std::to_string(r.root) + " is not a rank of " + std::to_string(r.nranks));
}

}  // namespace

void check(const Request& r) {
  check_shape(r);
  if (r.bytes % unit_bytes(r) == 0) return;
  std::string what = std::string(to_string(r.coll)) + ": " + std::to_string(r.bytes) + " bytes";
  if (!facts(r.coll).sliced) throw InputError(what + " are not a whole number of " + elements(r));
  if (r.elem_bytes == 1) throw InputError(what + " do not split evenly over " + std::to_string(r.nranks) + " ranks");
  throw InputError(what + " do not split into whole " + elements(r) + " over " + std::to_string(r.nranks) + " ranks");
}

Rounded round_to_elements(const Request& r) {
  check_shape(r);
  Rounded out{r, ""};
  std::uint64_t unit = unit_bytes(r);
  out.req.bytes -= r.bytes % unit;
  if (out.req.bytes == r.bytes) return out;
  std::string why = facts(r.coll).sliced ? "whole " + elements(r) + " per rank" : "whole " + elements(r);
  if (out.req.bytes == 0)
    throw InputError(std::string(to_string(r.coll)) + ": size " + std::to_string(r.bytes) + " is less than " + std::to_string(unit) +
                     " bytes, the least that gives " + why);
  out.note = "size " + std::to_string(r.bytes) + " rounded down to " + std::to_string(out.req.bytes) + " bytes: " + why;
  return out;
}

}  // namespace collkit::plan
