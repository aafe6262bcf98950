// The one registry of algorithms. Each algorithm lives in its own file under algorithms/ and
// exposes a factory declared in algorithms/all.h.

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

std::unique_ptr<Plan> generate(std::string_view name, const Request& req, const topo::Topology* topo, const AlgoOptions& opt) {
  check(req);
  const Algorithm& algo = algorithm(name);
  std::string why;
  if (!algo.supports(req, topo, &why))
    throw InputError("algorithm " + std::string(name) + " cannot do " + std::string(to_string(req.coll)) + " on " +
                     std::to_string(req.nranks) + " ranks: " + why);
  PlanInfo info = algo.layout(req, topo, opt);
  info.req = req;
  info.algorithm = std::string(algo.name());
  return std::make_unique<GeneratedPlan>(std::move(info), algo);
}

}  // namespace collkit::plan
