#include "collkit/plan/transform.h"

#include <algorithm>
#include <numeric>

#include "collkit/core/error.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/verify.h"

namespace collkit::plan {

namespace {

// bytes(b) / req.bytes as a reduced fraction.
struct Ratio {
  std::uint64_t num = 0, den = 1;
};

Ratio ratio(const PlanInfo& info, Buf b) {
  std::uint64_t num = buffer_bytes(info, b), den = info.req.bytes;
  std::uint64_t g = std::gcd(num, den);
  if (g == 0) return {0, 1};
  return {num / g, den / g};
}

}  // namespace

Granularity granularity(const PlanInfo& info) {
  if (info.req.bytes == 0) return {};
  // AlltoAll's buffers are whole blocks per rank too, not only AllGather's and ReduceScatter's slices.
  std::uint64_t per_rank = facts(info.req.coll).sliced ? static_cast<std::uint64_t>(info.req.nranks) : 1;
  Granularity g{per_rank, per_rank};
  for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) {
    std::uint32_t chunks = buffer_chunks(info, b);
    if (chunks == 0) continue;
    Ratio r = ratio(info, b);
    // S x num / den elements must be whole: S a multiple of den (num / den is reduced).
    g.step = std::lcm(g.step, r.den);
    // ... and a whole multiple of `chunks` for equal chunks: S a multiple of den x chunks / gcd(num, den x chunks).
    std::uint64_t need = r.den * chunks;
    g.even = std::lcm(g.even, need / std::gcd(r.num, need));
  }
  return g;
}

std::unique_ptr<Plan> resized(const Plan& plan, std::uint64_t bytes, std::uint64_t elem_bytes) {
  const PlanInfo& from = plan.info();
  Granularity g = granularity(from);
  std::uint64_t count = bytes / elem_bytes;
  if (elem_bytes == 0 || elem_bytes > 1 << 16 || bytes % elem_bytes != 0 || g.step == 0 || count % g.step != 0)
    throw InputError("plan: cannot run at " + std::to_string(bytes) + " bytes of " + std::to_string(elem_bytes) +
                     "-byte elements: " + (g.step == 0 ? "its buffers do not scale with the size"
                                                        : "needs a multiple of " + std::to_string(g.step) + " elements"));
  PlanInfo info = from;
  Ratio s = ratio(from, Buf::Scratch);
  info.req.bytes = bytes;
  info.req.elem_bytes = static_cast<std::uint32_t>(elem_bytes);
  check(info.req);
  info.scratch_bytes = info.scratch_chunks == 0 ? 0 : bytes / s.den * s.num;
  info.predicted_us = info.bound_us = 0;  // they were for the other size
  if (plan.is_explicit()) {
    auto out = std::make_unique<ExplicitPlan>(materialize(plan));
    out->mutable_info() = std::move(info);
    return out;
  }
  return std::make_unique<GeneratedPlan>(std::move(info), static_cast<const GeneratedPlan&>(plan).algo());
}

std::optional<InPlace> in_place_layout(const PlanInfo& info, std::string* why) {
  auto p = static_cast<std::uint32_t>(info.req.nranks);
  switch (info.req.coll) {
    case Collective::AllGather:
      if (info.out_chunks == p * info.in_chunks) return InPlace{Buf::Input, Buf::Output, info.in_chunks};
      if (why) *why = "its output chunks are not ranks x input chunks";
      return std::nullopt;
    case Collective::ReduceScatter:
      if (info.in_chunks == p * info.out_chunks) return InPlace{Buf::Output, Buf::Input, info.out_chunks};
      if (why) *why = "its input chunks are not ranks x output chunks";
      return std::nullopt;
    default:
      if (info.in_chunks == info.out_chunks) return InPlace{Buf::Input, Buf::Output, 0};
      if (why) *why = "its input and output have different chunk counts";
      return std::nullopt;
  }
}

namespace {

// Shifts every dep by `by` (ops were inserted before them).
void shift_deps(Op& op, std::uint32_t by) {
  for (auto& d : op.deps)
    if (d != kNoDep) d += by;
}

void alias(ChunkRef& ref, const InPlace& ip, std::uint32_t base) {
  if (ref.buf != ip.aliased) return;
  ref.buf = ip.base;
  ref.chunk += base;
}

// Drops the copies that aliasing turned into copies of a chunk onto itself: in place they move
// nothing (the runtime skips them too), and kept, their write would race with every unordered
// reader of the chunk. Whatever a dropped op ordered is handed on: an op that depended on it
// depends on what it depended on (its deps and its channel predecessor), and so does the next op
// of its channel. Throws UnsupportedError when that needs more than kMaxDeps.
std::vector<Op> drop_self_copies(std::vector<Op> ops, int rank) {
  auto self = [](const Op& o) { return o.type == OpType::Copy && o.src == o.dst; };
  if (std::none_of(ops.begin(), ops.end(), self)) return ops;
  const std::uint32_t n = static_cast<std::uint32_t>(ops.size());
  std::vector<std::uint32_t> prev(n, kNoDep), last(1, kNoDep);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (ops[i].channel >= last.size()) last.resize(ops[i].channel + 1u, kNoDep);
    prev[i] = last[ops[i].channel];
    last[ops[i].channel] = i;
  }
  // What each dropped op stands for: the kept ops it waited on, transitively through dropped ones.
  std::vector<std::vector<std::uint32_t>> stands_for(n);
  auto expand = [&](std::uint32_t d, std::vector<std::uint32_t>& into) {
    if (d == kNoDep) return;
    if (!self(ops[d])) into.push_back(d);
    else into.insert(into.end(), stands_for[d].begin(), stands_for[d].end());
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!self(ops[i])) continue;
    expand(prev[i], stands_for[i]);
    for (std::uint32_t d : ops[i].deps) expand(d, stands_for[i]);
  }
  std::vector<std::uint32_t> index(n, kNoDep);
  std::vector<Op> out;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (self(ops[i])) continue;
    Op o = ops[i];
    std::vector<std::uint32_t> deps;
    for (std::uint32_t d : ops[i].deps) expand(d, deps);
    if (prev[i] != kNoDep && self(ops[prev[i]])) expand(prev[i], deps);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    // The kept channel predecessor orders itself already.
    std::uint32_t kept_prev = prev[i];
    while (kept_prev != kNoDep && self(ops[kept_prev])) kept_prev = prev[kept_prev];
    std::erase(deps, kept_prev);
    if (deps.size() > kMaxDeps)
      throw UnsupportedError("plan: rank " + std::to_string(rank) + ": dropping its in-place self-copies leaves op " +
                             std::to_string(i) + " more than " + std::to_string(kMaxDeps) + " dependencies");
    o.deps.fill(kNoDep);
    for (std::size_t k = 0; k < deps.size(); ++k) o.deps[k] = index[deps[k]];
    index[i] = static_cast<std::uint32_t>(out.size());
    out.push_back(o);
  }
  return out;
}

// Adds a dependency on `index` to `op`; false when it has no room left.
bool try_depend(Op& op, std::uint32_t index) {
  if (op.num_deps() >= kMaxDeps) return false;
  op.depend_on(index);
  return true;
}

}  // namespace

ExplicitPlan in_place_form(const Plan& plan) {
  const PlanInfo& info = plan.info();
  std::string why;
  std::optional<InPlace> ip = in_place_layout(info, &why);
  if (!ip) throw UnsupportedError("plan: cannot run in place: " + why);
  std::uint32_t n_alias = buffer_chunks(info, ip->aliased);
  std::vector<std::vector<Op>> programs;
  programs.reserve(static_cast<std::size_t>(plan.nranks()));
  for (int r = 0; r < plan.nranks(); ++r) {
    std::vector<Op> ops = plan.program(r);
    std::uint32_t base = ip->base_chunk(r);
    for (Op& op : ops) {
      alias(op.src, *ip, base);
      alias(op.dst, *ip, base);
    }
    ops = drop_self_copies(std::move(ops), r);
    // The copies between the aliased buffer and its slot, all on channel 0: the input enters the
    // slot before any op, the output leaves it after every op.
    Op copy;
    copy.type = OpType::Copy;
    copy.count = n_alias;
    std::vector<Op> out;
    if (ip->aliased == Buf::Input) {
      out.reserve(ops.size() + 1);
      copy.src = {Buf::Input, 0};
      copy.dst = {ip->base, base};
      out.push_back(copy);
      std::vector<bool> seen(info.channels + 1u, false);
      for (Op op : ops) {
        shift_deps(op, 1);
        if (op.channel != 0 && op.channel < seen.size() && !seen[op.channel]) {
          seen[op.channel] = true;
          if (!try_depend(op, 0))
            throw UnsupportedError("plan: rank " + std::to_string(r) + ": no room to order its first op on channel " +
                                   std::to_string(op.channel) + " after the in-place input");
        }
        out.push_back(op);
      }
    } else {
      out = std::move(ops);
      // The copy out goes after the last op of every channel, carried by copies of one chunk
      // each on channel 0, up to kMaxDeps channels apiece.
      std::vector<std::uint32_t> last;
      std::vector<bool> seen(info.channels + 1u, false);
      for (std::uint32_t i = static_cast<std::uint32_t>(out.size()); i-- > 0;)
        if (out[i].channel != 0 && out[i].channel < seen.size() && !seen[out[i].channel]) {
          seen[out[i].channel] = true;
          last.push_back(i);
        }
      std::size_t carriers = (last.size() + kMaxDeps - 1) / kMaxDeps;
      if (carriers > n_alias)
        throw UnsupportedError("plan: " + std::to_string(last.size()) + " channels are too many to order the in-place output after");
      for (std::uint32_t c = 0; c < n_alias; ++c) {
        Op one = copy;
        one.count = 1;
        one.src = {ip->base, base + c};
        one.dst = {Buf::Output, c};
        for (std::size_t k = c * kMaxDeps; k < last.size() && k < (c + 1) * kMaxDeps; ++k) one.depend_on(last[k]);
        out.push_back(one);
      }
    }
    programs.push_back(std::move(out));
  }
  PlanInfo in = info;
  in.algorithm = info.algorithm + " (in place)";
  return ExplicitPlan(std::move(in), std::move(programs));
}

std::string in_place_problem(const Plan& plan) {
  std::string why;
  if (!in_place_layout(plan.info(), &why)) return "its chunks do not line up in place: " + why;
  try {
    VerifyResult v = verify(in_place_form(plan));
    if (!v.ok) return "not safe on overlapping buffers: " + v.error;
  } catch (const UnsupportedError& e) {
    return e.what();
  }
  return {};
}

}  // namespace collkit::plan
