#include "planning.h"

#include <map>
#include <nlohmann/json.hpp>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/size.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/io.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/simulate.h"
#include "collkit/plan/transform.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/io.h"

namespace collkit::exec {

namespace {

using json = nlohmann::json;
using plan::Collective;

// Runs `fn` on rank 0 and gives its text, or its error as the same type, to every rank.
template <class Fn>
std::string decide(World& world, double timeout_s, Fn&& fn) {
  json verdict;
  if (world.rank() == 0) {
    try {
      verdict = json{{"ok", fn()}};
    } catch (const InputError& e) {
      verdict = {{"error", e.what()}, {"kind", "input"}};
    } catch (const UnsupportedError& e) {
      verdict = {{"error", e.what()}, {"kind", "unsupported"}};
    } catch (const std::exception& e) {
      verdict = {{"error", e.what()}, {"kind", "other"}, {"code", exit_code_for(e)}};
    }
  }
  json got = json::parse(world.broadcast(world.rank() == 0 ? verdict.dump() : std::string(), timeout_s));
  if (got.contains("error")) {
    std::string kind = got["kind"], what = got["error"];
    if (kind == "input") throw InputError(what);
    if (kind == "unsupported") throw UnsupportedError(what);
    throw AgreedError(what, got["code"].get<int>());  // a file rank 0 could not read: printed once, by rank 0
  }
  return got["ok"].get<std::string>();
}

// What makes two plans run alike in place, whatever their byte size: the plan at its smallest size
// of equal chunks. A size whose chunks split unevenly is proved at that size: which transfers
// match in bytes can depend on where the extra elements fall.
std::string shape_key(const plan::Plan& p, std::uint64_t esize) {
  plan::Granularity g = plan::granularity(p.info());
  if (g.even == 0 || p.info().req.bytes / esize % g.even != 0) return plan::to_json(p);
  return plan::to_json(*plan::resized(p, g.even * esize, esize));
}

}  // namespace

Planner::Planner(const RunOptions& opt, int nranks, World& world) : opt_(opt), nranks_(nranks), world_(world) {
  if (!opt.plan_file.empty()) {
    // Rank 0 reads and loads the file; every rank gets its text (read once: `-`, standard input,
    // works as mpirun gives it to rank 0) or its error, which rank 0 alone then prints.
    std::string text = decide(world, opt.timeout_s, [&] {
      std::string t = read_file(opt.plan_file);
      plan::from_json(t, opt.plan_file);
      return t;
    });
    file_plan_ = plan::from_json(text, opt.plan_file);
    if (file_plan_->nranks() != nranks)
      throw InputError(opt.plan_file + ": the plan is for " + std::to_string(file_plan_->nranks()) + " ranks, this job has " +
                       std::to_string(nranks) + " (mpirun -np " + std::to_string(file_plan_->nranks()) + ")");
  }
  if (!opt.topo_file.empty()) {
    topo_name_ = decide(world, opt.timeout_s, [&] {
      topo_ = topo::from_json(read_file(opt.topo_file), opt.topo_file);
      if (topo_->num_ranks() < static_cast<std::size_t>(nranks))
        throw InputError(opt.topo_file + ": the topology has " + std::to_string(topo_->num_ranks()) + " ranks, this job has " +
                         std::to_string(nranks));
      return topo_->name;
    });
  } else if (opt.discover && opt.plan_file.empty() && world.size() == nranks) {
    bool is_root = false;
    topo::Topology t = topo::discover_cluster({}, &is_root);
    if (is_root) {
      topo_name_ = t.name;
      topo_ = std::move(t);
    }
    topo_name_ = world.broadcast(topo_name_, opt.timeout_s);
  }
}

Planner::~Planner() = default;

std::uint64_t Planner::file_plan_bytes() const { return file_plan_ ? file_plan_->info().req.bytes : 0; }

std::vector<Collective> Planner::collectives() const {
  if (file_plan_) return {file_plan_->info().req.coll};
  return opt_.collectives;
}

std::vector<std::string> Planner::algorithms(Collective c) const {
  if (file_plan_) return {file_plan_->info().algorithm};
  // "all": the algorithms that can do this collective on these ranks (and topology), decided by
  // rank 0, which holds the topology.
  std::string list = decide(world_, opt_.timeout_s, [&] {
    std::string names;
    for (const std::string& a : opt_.algorithms) {
      if (a != "all") {
        names += a + ",";
        continue;
      }
      plan::Request req{c, opt_.max_bytes, nranks_, opt_.root};
      for (const plan::Algorithm* algo : plan::algorithms())
        if (std::string why; algo->supports(req, topo_ ? &*topo_ : nullptr, &why)) names += std::string(algo->name()) + ",";
    }
    return names;
  });
  std::vector<std::string> out;
  for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1)
    out.push_back(list.substr(at, comma - at));
  return out;
}

std::string Planner::make(Collective c, const std::string& algo, DataType type, std::uint64_t bytes, int root) {
  const std::uint64_t esize = size_of(type);
  std::uint64_t count = bytes / esize;
  std::unique_ptr<plan::Plan> p;
  json out;
  auto skip = [&](const std::string& why) {
    out = {{"skip", format_size_bytes(bytes) + " skipped: " + why}};
    return out.dump();
  };
  if (file_plan_) {
    plan::Granularity g = plan::granularity(file_plan_->info());
    if (g.step == 0) {
      if (bytes != file_plan_->info().req.bytes) return skip("the plan's buffers do not scale, it runs at its own size only");
      if (bytes % esize != 0) return skip("the plan's size is not a whole number of " + std::string(to_string(type)) + " elements");
      g.step = count;
    }
    count -= count % g.step;
    if (count == 0) return skip("the plan needs a multiple of " + std::to_string(g.step) + " elements");
    p = naming_file(opt_.plan_file, [&] { return plan::resized(*file_plan_, count * esize, esize); });
  } else {
    const topo::Topology* t = topo_ ? &*topo_ : nullptr;
    plan::AlgoOptions ao;
    ao.channels = opt_.channels;
    // As nccl-tests: AllGather, ReduceScatter and AlltoAll round down to whole elements per rank;
    // the others run any count, their chunks splitting unevenly at whole elements.
    plan::Request req{c, count * esize, nranks_, root, static_cast<std::uint32_t>(esize)};
    std::uint64_t unit = plan::facts(c).sliced ? static_cast<std::uint64_t>(nranks_) : 1;
    if (count < unit) return skip("smaller than the " + std::to_string(unit) + " elements the collective needs");
    try {
      p = plan::plan_for(algo, plan::round_to_elements(req).req, t, ao);
    } catch (const InputError& e) {
      if (opt_.algorithms.size() == 1 && opt_.algorithms[0] != "all") throw;
      return skip(e.what());
    }
  }

  // Proofs depend on the programs and chunk counts, not on the bytes: once per plan shape. The
  // plan itself, then its in-place form.
  std::string key = shape_key(*p, esize);
  auto it = proofs_.find(key);
  if (it == proofs_.end()) {
    plan::VerifyResult v = plan::verify(*p);
    it = proofs_.emplace(key, Proofs{v.ok ? std::string() : v.error, v.ok ? plan::in_place_problem(*p) : std::string()}).first;
  }
  if (!it->second.error.empty())
    throw InputError((file_plan_ ? opt_.plan_file + ": plan is wrong: " : "plan " + p->info().algorithm + " is wrong: ") +
                     it->second.error);

  out["plan"] = plan::to_json(*p);
  out["in_place_note"] = it->second.in_place.empty() ? "" : "staged (" + it->second.in_place + ")";
  if (topo_) {
    double pred = p->info().predicted_us;
    if (pred <= 0) pred = plan::simulate(*p, *topo_).time_us;
    out["predicted_us"] = pred;
    out["bound_us"] = p->info().bound_us;
  }
  return out.dump();
}

PlannedSize Planner::plan(Collective c, const std::string& algo, DataType type, RedOp op, std::uint64_t bytes, int root) {
  // The plan does not depend on the reduction operator: the harness asks again for each one, and
  // gets rank 0's earlier answer (every rank keeps the same cache, so all skip the broadcast).
  std::string request = std::string(plan::to_string(c)) + " " + algo + " " + std::string(to_string(type)) + " root " +
                        std::to_string(root);
  if (request != decided_for_) {
    decided_.clear();
    decided_for_ = request;
  }
  auto hit = decided_.find(bytes);
  if (hit == decided_.end())
    hit = decided_.emplace(bytes, decide(world_, opt_.timeout_s, [&] { return make(c, algo, type, bytes, root); })).first;
  json got = json::parse(hit->second);
  PlannedSize ps;
  if (got.contains("skip")) {
    ps.skipped = got["skip"];
    return ps;
  }
  ps.plan_json = got["plan"];
  ps.plan = plan::from_json(ps.plan_json, "rank 0's plan");
  ps.job = Job{ps.plan->info().req, type, op};
  ps.in_place_note = got["in_place_note"];
  ps.in_place = ps.in_place_note.empty() ? InPlaceMode::Direct : InPlaceMode::Staged;
  ps.predicted_us = got.value("predicted_us", 0.0);
  ps.bound_us = got.value("bound_us", 0.0);
  return ps;
}

}  // namespace collkit::exec
