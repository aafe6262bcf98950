#include "collkit/plan/collective.h"

#include <array>
#include <cctype>
#include <string>

#include "collkit/core/error.h"

namespace collkit::plan {

namespace {

constexpr std::array<CollectiveFacts, 6> kFacts{{
    {Collective::AllReduce, "allreduce", false, true},
    {Collective::ReduceScatter, "reducescatter", false, true},
    {Collective::AllGather, "allgather", false, false},
    {Collective::AlltoAll, "alltoall", false, false},
    {Collective::Broadcast, "broadcast", true, false},
    {Collective::Reduce, "reduce", true, true},
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

void check(const Request& r) {
  std::string what = std::string(to_string(r.coll));
  if (r.nranks < 1) throw InputError(what + ": the number of ranks must be >= 1, got " + std::to_string(r.nranks));
  if (facts(r.coll).has_root && (r.root < 0 || r.root >= r.nranks))
    throw InputError(what + ": root " + std::to_string(r.root) + " is not a rank of " + std::to_string(r.nranks));
  bool sliced = r.coll == Collective::AllGather || r.coll == Collective::ReduceScatter || r.coll == Collective::AlltoAll;
  if (sliced && r.bytes % static_cast<std::uint64_t>(r.nranks) != 0)
    throw InputError(what + ": " + std::to_string(r.bytes) + " bytes do not split evenly over " + std::to_string(r.nranks) +
                     " ranks");
}

}  // namespace collkit::plan
