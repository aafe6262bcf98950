// simulate_memo.h: the simulated times of generated plans, kept while a search runs.

#include "simulate_memo.h"

#include <bit>
#include <cstdint>

namespace collkit::plan::sim {

namespace {

thread_local TimeMemo* t_memo = nullptr;

void add(std::string& k, std::uint64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); }
void add(std::string& k, double v) { add(k, std::bit_cast<std::uint64_t>(v)); }
void add(std::string& k, const std::string& s) {  // length first: no two fields run together
  add(k, static_cast<std::uint64_t>(s.size()));
  k += s;
}

}  // namespace

TimeMemo::TimeMemo(const topo::Topology& topo) : topo_(&topo), outer_(t_memo) {
  if (in_force(topo)) return;
  t_memo = this;
  installed_ = true;
}

TimeMemo::TimeMemo(const topo::Topology& topo, const SimOptions& search) : TimeMemo(topo) { search_ = &search; }

SimOptions search_options(const topo::Topology& topo) {
  TimeMemo* memo = TimeMemo::in_force(topo);
  if (!memo || !memo->search_) return {};
  return time_only(*memo->search_);  // its route and fold caches, and its progress (a shell's Ctrl-C), too
}

TimeMemo::~TimeMemo() {
  if (installed_) t_memo = outer_;
}

TimeMemo* TimeMemo::in_force(const topo::Topology& topo) { return t_memo && t_memo->topo_ == &topo ? t_memo : nullptr; }

std::string TimeMemo::key(const Plan& plan, const SimOptions& opt) {
  if (plan.is_explicit()) return {};
  const PlanInfo& i = plan.info();
  std::string k;
  add(k, i.algorithm);
  for (std::uint64_t v : {static_cast<std::uint64_t>(i.req.coll), i.req.bytes, static_cast<std::uint64_t>(i.req.nranks),
                          static_cast<std::uint64_t>(i.req.root), std::uint64_t{i.req.elem_bytes}, std::uint64_t{i.in_chunks},
                          std::uint64_t{i.out_chunks}, std::uint64_t{i.scratch_chunks}, i.scratch_bytes, std::uint64_t{i.channels}})
    add(k, v);
  add(k, static_cast<std::uint64_t>(i.params.size()));
  for (const auto& [name, value] : i.params) {
    add(k, name);
    add(k, value);
  }
  add(k, static_cast<std::uint64_t>(i.channel_nics.size()));
  for (std::int16_t n : i.channel_nics) add(k, static_cast<std::uint64_t>(static_cast<std::uint16_t>(n)));
  add(k, static_cast<std::uint64_t>(i.channel_paths.size()));
  for (ChannelPath c : i.channel_paths) add(k, static_cast<std::uint64_t>(c));
  add(k, static_cast<std::uint64_t>(opt.model));
  add(k, opt.per_message_us);
  add(k, opt.reduce_gbps);
  add(k, opt.queue_store_bytes);
  add(k, static_cast<std::uint64_t>(opt.max_in_flight));
  add(k, static_cast<std::uint64_t>(opt.fold_symmetry));
  return k;
}

std::optional<double> TimeMemo::find(const std::string& key) const {
  if (key.empty()) return std::nullopt;
  auto it = times_.find(key);
  if (it == times_.end()) return std::nullopt;
  ++hits_;
  return it->second;
}

void TimeMemo::keep(std::string key, double time_us) {
  if (!key.empty()) times_.emplace(std::move(key), time_us);
}

}  // namespace collkit::plan::sim
