// The one registry of algorithms. Each algorithm lives in its own file under algorithms/ and
// exposes a factory declared in algorithms/all.h.

#include <algorithm>
#include <cstdint>

#include "algorithms/all.h"
#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"

namespace collkit::plan {

const std::vector<const Algorithm*>& algorithms() {
  static const std::vector<const Algorithm*> all = [] {
    std::vector<const Algorithm*> v;
    for (auto* make : algorithm_factories()) v.push_back(make());
    return v;
  }();
  return all;
}

const Algorithm& algorithm(std::string_view name) {
  for (const Algorithm* a : algorithms())
    if (a->name() == name) return *a;
  throw InputError("unknown algorithm \"" + std::string(name) + "\" (known: " + algorithm_names(", ") + ")");
}

std::string algorithm_names(std::string_view sep) {
  std::string names;
  for (const Algorithm* a : algorithms()) names += (names.empty() ? "" : std::string(sep)) + std::string(a->name());
  return names;
}

namespace {

// Options a plan could not hold, refused before any layout: --channels 65536 was once written as
// "channels": 0, and chunk counts past 32 bits wrapped. The channel count times ranks times chunks
// per slice bounds the chunks of a buffer in every algorithm (a ring's is exactly that).
void check_options(const Request& req, const AlgoOptions& opt) {
  if (opt.channels < 0 || opt.channels > kMaxPlanChannels)
    throw InputError("channels must be between 0 (the algorithm's) and " + std::to_string(kMaxPlanChannels) + " (what a plan holds), got " +
                     std::to_string(opt.channels));
  if (opt.pipeline < 0) throw InputError("pipeline must be >= 0, got " + std::to_string(opt.pipeline));
  const std::uint64_t factors[] = {static_cast<std::uint64_t>(std::max(opt.channels, 1)), static_cast<std::uint64_t>(req.nranks),
                                   static_cast<std::uint64_t>(std::max(opt.pipeline, 1))};
  std::uint64_t chunks = 1;
  for (std::uint64_t f : factors) {
    if (chunks > kMaxPlanChunks / f)
      throw InputError(std::to_string(factors[0]) + " channels x " + std::to_string(factors[1]) + " ranks x pipeline " +
                       std::to_string(factors[2]) + " make more than " + std::to_string(kMaxPlanChunks) + " chunks (what a plan holds)");
    chunks *= f;
  }
}

}  // namespace

std::unique_ptr<Plan> generate(std::string_view name, const Request& req, const topo::Topology* topo, const AlgoOptions& opt) {
  check(req);
  const Algorithm& algo = algorithm(name);
  std::string why;
  if (!algo.supports(req, topo, &why))
    throw InputError("algorithm " + std::string(name) + " cannot do " + std::string(to_string(req.coll)) + " on " +
                     std::to_string(req.nranks) + " ranks: " + why);
  check_options(req, opt);
  PlanInfo info = algo.layout(req, topo, opt);
  info.req = req;
  info.algorithm = std::string(algo.name());
  return std::make_unique<GeneratedPlan>(std::move(info), algo);
}

}  // namespace collkit::plan
