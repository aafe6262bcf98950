#include "interpret.h"

#include <algorithm>
#include <array>

#include "collkit/core/error.h"
#include "engine.h"

namespace collkit::plan::interp {

namespace {

using detail::EngineOp;

constexpr std::uint64_t kElementBytes = 8;

class Numeric final : public detail::Machine {
 public:
  Numeric(const PlanInfo& info, RedOp op, const Buffers& inputs) : op_(op) {
    int p = info.req.nranks;
    if (inputs.size() != static_cast<std::size_t>(p))
      throw InputError("interpret: " + std::to_string(inputs.size()) + " input buffers for " + std::to_string(p) + " ranks");
    for (Buf b : {Buf::Input, Buf::Output, Buf::Scratch}) edges_[index(b)] = element_edges(info, b);
    ranks_.resize(static_cast<std::size_t>(p));
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (inputs[r].size() != edges_[0].back())
        throw InputError("interpret: rank " + std::to_string(r) + "'s input has " + std::to_string(inputs[r].size()) +
                         " elements, the plan needs " + std::to_string(edges_[0].back()));
      ranks_[r][0] = inputs[r];
      ranks_[r][1].assign(edges_[1].back(), 0);
      ranks_[r][2].assign(edges_[2].back(), 0);
    }
  }

  std::uint32_t send(int rank, const EngineOp& op) override {
    std::uint32_t id;
    if (free_.empty()) {
      id = static_cast<std::uint32_t>(payloads_.size());
      payloads_.emplace_back();
    } else {
      id = free_.back();
      free_.pop_back();
    }
    auto [src, n] = range(rank, op.src_buf(), op.src_chunk, op.count);
    payloads_[id].assign(src, src + n);
    return id;
  }

  void receive(int rank, const EngineOp& op, std::uint32_t payload) override {
    std::vector<std::int64_t>& data = payloads_[payload];
    if (op.type == OpType::RecvReduce) {
      auto [src, n] = range(rank, op.src_buf(), op.src_chunk, op.count);
      for (std::size_t i = 0; i < n; ++i) data[i] = apply(op_, src[i], data[i]);
    }
    std::int64_t* dst = range(rank, op.dst_buf(), op.dst_chunk, op.count).first;
    std::copy(data.begin(), data.end(), dst);
    free_.push_back(payload);
  }

  void local(int rank, const EngineOp& op) override {
    auto [src, n] = range(rank, op.src_buf(), op.src_chunk, op.count);
    tmp_.assign(src, src + n);  // the ranges may overlap
    std::int64_t* dst = range(rank, op.dst_buf(), op.dst_chunk, op.count).first;
    for (std::size_t i = 0; i < n; ++i) dst[i] = op.type == OpType::Reduce ? apply(op_, dst[i], tmp_[i]) : tmp_[i];
  }

  Buffers outputs() {
    Buffers out;
    out.reserve(ranks_.size());
    for (auto& bufs : ranks_) out.push_back(std::move(bufs[1]));
    return out;
  }

 private:
  static std::size_t index(Buf b) { return static_cast<std::size_t>(b); }

  // Element offsets of every chunk boundary of buffer b.
  static std::vector<std::size_t> element_edges(const PlanInfo& info, Buf b) {
    std::uint64_t bytes = buffer_bytes(info, b);
    std::uint32_t chunks = buffer_chunks(info, b);
    if (bytes % kElementBytes != 0)
      throw InputError("interpret: the " + std::string(to_string(b)) + " buffer's " + std::to_string(bytes) +
                       " bytes are not a whole number of 8-byte elements");
    std::vector<std::size_t> edges{0};
    for (std::uint32_t c = 1; c <= chunks; ++c) {
      std::uint64_t at = chunk_offset(info, b, c);
      if (at % kElementBytes != 0)
        throw InputError("interpret: " + std::string(to_string(b)) + " chunk " + std::to_string(c) + " starts at byte " +
                         std::to_string(at) + ", not on an 8-byte element");
      edges.push_back(at / kElementBytes);
    }
    if (chunks == 0) edges.push_back(bytes / kElementBytes);
    return edges;
  }

  std::pair<std::int64_t*, std::size_t> range(int rank, Buf b, std::uint32_t chunk, std::uint32_t count) {
    const std::vector<std::size_t>& e = edges_[index(b)];
    std::size_t lo = e[chunk], hi = e[std::size_t{chunk} + count];
    return {ranks_[static_cast<std::size_t>(rank)][index(b)].data() + lo, hi - lo};
  }

  RedOp op_;
  std::array<std::vector<std::size_t>, 3> edges_;
  std::vector<std::array<std::vector<std::int64_t>, 3>> ranks_;  // input, output, scratch
  std::vector<std::vector<std::int64_t>> payloads_;
  std::vector<std::uint32_t> free_;
  std::vector<std::int64_t> tmp_;
};

}  // namespace

std::string_view to_string(RedOp op) {
  switch (op) {
    case RedOp::Sum: return "sum";
    case RedOp::Prod: return "prod";
    case RedOp::Min: return "min";
    case RedOp::Max: return "max";
  }
  return "?";
}

std::int64_t apply(RedOp op, std::int64_t a, std::int64_t b) {
  auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  switch (op) {
    case RedOp::Sum: return static_cast<std::int64_t>(ua + ub);
    case RedOp::Prod: return static_cast<std::int64_t>(ua * ub);
    case RedOp::Min: return std::min(a, b);
    case RedOp::Max: return std::max(a, b);
  }
  return a;
}

Buffers run(const Plan& plan, RedOp op, const Buffers& inputs) {
  if (plan.nranks() < 1) throw InputError("interpret: the plan has " + std::to_string(plan.nranks()) + " ranks");
  Numeric machine(plan.info(), op, inputs);
  detail::execute(plan, machine, detail::per_chunk_store(plan.info(), ChunkStore::Auto));
  return machine.outputs();
}

}  // namespace collkit::plan::interp
