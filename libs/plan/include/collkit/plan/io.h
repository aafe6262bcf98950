#pragma once
// collkit.plan/1 JSON files (docs/plan.md). A generated plan is stored as its PlanInfo (algorithm
// and parameters), an explicit plan with every program.

#include <memory>
#include <string>

#include "collkit/plan/plan.h"

namespace collkit::plan {

inline constexpr int kPlanSchemaMajor = 1;

std::string to_json(const Plan& plan);
/// Parses a plan; errors are InputErrors "<file>: <json pointer>: <what>". A generated plan's
/// algorithm must be known to this build.
std::unique_ptr<Plan> from_json(const std::string& text, const std::string& file);
std::unique_ptr<Plan> load(const std::string& path);
void save(const Plan& plan, const std::string& path);

}  // namespace collkit::plan
