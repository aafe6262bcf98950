#include "collkit/overlap/layout.h"

#include <fmt/format.h>

#include "collkit/core/error.h"
#include "collkit/overlap/model.h"

namespace collkit::overlap {

std::string_view to_string(Mode m) {
  switch (m) {
    case Mode::Train: return "train";
    case Mode::Prefill: return "prefill";
    case Mode::Decode: return "decode";
  }
  return "?";
}

Mode parse_mode(std::string_view text) {
  if (text == "train") return Mode::Train;
  if (text == "prefill") return Mode::Prefill;
  if (text == "decode") return Mode::Decode;
  throw InputError("unknown mode \"" + std::string(text) + "\" (expected train, prefill or decode)");
}

int dtype_bytes(std::string_view dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8") return 1;
  throw InputError("unknown dtype \"" + std::string(dtype) + "\" (expected bf16, fp16 or fp8)");
}

std::string_view to_string(Group g) {
  switch (g) {
    case Group::Tp: return "tp";
    case Group::Ep: return "ep";
    case Group::Dp: return "dp";
    case Group::ExpertDp: return "expert-dp";
    case Group::Pp: return "pp";
  }
  return "?";
}

namespace {

struct Strides {
  int tp = 1, dp = 1, pp = 1;
};

// Throws InputError unless `order` names tp, dp and pp once each.
Strides strides(const Layout& l) {
  Strides s;
  int next = 1;
  std::string seen;
  std::size_t start = 0;
  int count = 0;
  while (start <= l.order.size()) {
    std::size_t end = l.order.find(',', start);
    std::string dim = l.order.substr(start, end == std::string::npos ? std::string::npos : end - start);
    int* stride = dim == "tp" ? &s.tp : dim == "dp" ? &s.dp : dim == "pp" ? &s.pp : nullptr;
    if (!stride || seen.find(dim) != std::string::npos)
      throw InputError("--order \"" + l.order + "\" must name tp, dp and pp once each, innermost first (e.g. tp,dp,pp)");
    seen += dim + ",";
    *stride = next;
    next *= dim == "tp" ? l.tp : dim == "dp" ? l.dp : l.pp;
    ++count;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (count != 3) throw InputError("--order \"" + l.order + "\" must name tp, dp and pp once each, innermost first (e.g. tp,dp,pp)");
  return s;
}

}  // namespace

void check_layout(const Layout& l, const Model& m, const topo::Topology& t) {
  auto positive = [](int v, const char* flag) {
    if (v < 1) throw InputError(fmt::format("{} must be >= 1, got {}", flag, v));
  };
  positive(l.tp, "--tp");
  positive(l.dp, "--dp");
  positive(l.ep, "--ep");
  positive(l.pp, "--pp");
  positive(l.microbatches, "--microbatches");
  // --microbatches 1000000000 once built segments until the host ran out of time and memory.
  if (l.microbatches > kMaxMicrobatches)
    throw InputError(
        fmt::format("--microbatches must be at most {} (the limit on micro-batches per step), got {}", kMaxMicrobatches, l.microbatches));
  positive(l.micro_batch, "--micro-batch");
  if (l.seq_len < 1) throw InputError(fmt::format("--seq-len must be >= 1, got {}", l.seq_len));
  dtype_bytes(l.dtype);
  if (l.zero < 0 || l.zero > 3) throw InputError(fmt::format("--zero must be 0, 1, 2 or 3, got {}", l.zero));
  if (m.heads % l.tp != 0)
    throw InputError(fmt::format("--tp {} does not divide the {} attention heads of {}", l.tp, m.heads, m.name));
  if (m.ffn % l.tp != 0 || (m.moe && m.moe->expert_ffn % l.tp != 0))
    throw InputError(fmt::format("--tp {} does not divide the FFN width of {}", l.tp, m.name));
  if (l.sp && l.tp == 1) throw InputError("--sp needs --tp > 1");
  if (l.sp && l.mode == Mode::Decode) throw InputError("--sp splits the sequence, which decode does not have (one token per sequence)");
  if (l.sp && (l.micro_batch * l.seq_len) % l.tp != 0)
    throw InputError(fmt::format("--sp: micro-batch x seq-len = {} tokens do not split over --tp {}", l.micro_batch * l.seq_len, l.tp));
  if (l.ep > 1 && !m.moe) throw InputError(fmt::format("--ep {} needs a mixture-of-experts model; {} is dense", l.ep, m.name));
  if (m.moe && m.moe->experts % l.ep != 0)
    throw InputError(fmt::format("--ep {} does not divide the {} experts of {}", l.ep, m.moe->experts, m.name));
  if (l.dp % l.ep != 0) throw InputError(fmt::format("--ep {} must divide --dp {} (experts are spread over data-parallel ranks)", l.ep, l.dp));
  if (l.pp > m.layers) throw InputError(fmt::format("--pp {} exceeds the {} layers of {}", l.pp, m.layers, m.name));
  if (l.mode != Mode::Train && l.zero != 0) throw InputError("--zero applies to training only");
  strides(l);
  if (static_cast<std::size_t>(l.gpus()) > t.num_ranks())
    throw InputError(fmt::format("the layout needs {} GPUs (tp {} x dp {} x pp {}) but the topology {} has {}", l.gpus(), l.tp, l.dp,
                                 l.pp, t.name, t.num_ranks()));
}

std::vector<topo::Rank> group_ranks(const Layout& l, Group g) { return group_ranks(l, g, 0); }

std::vector<topo::Rank> group_ranks(const Layout& l, Group g, topo::Rank of) {
  const Strides s = strides(l);
  // `of`'s coordinates; its group varies one of them (DP's index splits into the EP index, inner,
  // and the expert-data-parallel index, outer: the first `ep` DP members form an EP group).
  const auto r = static_cast<std::int64_t>(of);
  const std::int64_t tp_i = r / s.tp % l.tp, dp_i = r / s.dp % l.dp, pp_i = r / s.pp % l.pp;
  const std::int64_t ep_i = dp_i % l.ep, edp_i = dp_i / l.ep;
  auto rank = [&](std::int64_t t, std::int64_t d, std::int64_t p) { return static_cast<topo::Rank>(t * s.tp + d * s.dp + p * s.pp); };
  std::vector<topo::Rank> out;
  switch (g) {
    case Group::Tp:
      for (int i = 0; i < l.tp; ++i) out.push_back(rank(i, dp_i, pp_i));
      break;
    case Group::Dp:
      for (int i = 0; i < l.dp; ++i) out.push_back(rank(tp_i, i, pp_i));
      break;
    case Group::Ep:
      for (int i = 0; i < l.ep; ++i) out.push_back(rank(tp_i, edp_i * l.ep + i, pp_i));
      break;
    case Group::ExpertDp:
      for (int i = 0; i < l.dp / l.ep; ++i) out.push_back(rank(tp_i, i * l.ep + ep_i, pp_i));
      break;
    case Group::Pp:
      // This stage and the next (the last stage's next is the first: the pair a send crosses).
      out.push_back(of);
      if (l.pp > 1) out.push_back(rank(tp_i, dp_i, (pp_i + 1) % l.pp));
      break;
  }
  return out;
}

}  // namespace collkit::overlap
