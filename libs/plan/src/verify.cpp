// Symbolic verification: the engine runs the plan on values {input chunk, set of ranks} instead
// of data. Every rank's input chunk i starts as {i, {rank}}; a copy or transfer moves a value, a
// reduction unites two values of the same input chunk whose rank sets are disjoint. Since the
// values say exactly which contributions a chunk holds, a plan that ends with the expected value
// in every output chunk computes its collective for any input and any reduction operator that is
// associative and commutative.

#include "collkit/plan/verify.h"

#include <vector>

#include "engine.h"
#include "rank_set.h"

namespace collkit::plan {

namespace {

using detail::EngineOp;
using detail::OpFault;
using detail::RankSets;

constexpr std::uint32_t kEmpty = 0xffffffffu;

struct Value {
  std::uint32_t chunk = kEmpty;  ///< input chunk index; kEmpty: nothing written yet
  std::uint32_t set = 0;         ///< RankSets id
};

class Symbolic final : public detail::Machine {
 public:
  explicit Symbolic(const PlanInfo& info)
      : info_(info), layout_(info), sets_(static_cast<std::uint32_t>(info.req.nranks)), reduces_(facts(info.req.coll).reduces) {
    cells_.resize(static_cast<std::size_t>(info.req.nranks));
    for (std::size_t r = 0; r < cells_.size(); ++r) {
      cells_[r].resize(layout_.cells());
      for (std::uint32_t c = 0; c < layout_.in; ++c) cells_[r][c] = {c, RankSets::singleton(static_cast<std::uint32_t>(r))};
    }
  }

  std::uint32_t send(int rank, const EngineOp& op) override {
    std::uint32_t id = take();
    std::vector<Value>& out = payloads_[id];
    const Value* src = cell(rank, op.src_buf(), op.src_chunk);
    for (std::uint32_t i = 0; i < op.count; ++i) out.push_back(read(src[i], op.src_buf(), op.src_chunk + i));
    return id;
  }

  void receive(int rank, const EngineOp& op, std::uint32_t payload) override {
    std::vector<Value>& in = payloads_[payload];
    if (op.type == OpType::RecvReduce) {
      const Value* src = cell(rank, op.src_buf(), op.src_chunk);
      for (std::uint32_t i = 0; i < op.count; ++i) {
        Value mine = read(src[i], op.src_buf(), op.src_chunk + i);
        in[i] = combine(mine, [&] { return detail::chunks_name(op.src_buf(), op.src_chunk + i, 1); }, in[i],
                        [] { return std::string("received"); });
      }
    }
    Value* dst = cell(rank, op.dst_buf(), op.dst_chunk);
    std::copy(in.begin(), in.end(), dst);
    in.clear();
    free_.push_back(payload);
  }

  void local(int rank, const EngineOp& op) override {
    const Value* src = cell(rank, op.src_buf(), op.src_chunk);
    Value* dst = cell(rank, op.dst_buf(), op.dst_chunk);
    tmp_.clear();
    for (std::uint32_t i = 0; i < op.count; ++i) {
      Value v = read(src[i], op.src_buf(), op.src_chunk + i);
      if (op.type == OpType::Reduce) {
        v = combine(read(dst[i], op.dst_buf(), op.dst_chunk + i), [&] { return detail::chunks_name(op.dst_buf(), op.dst_chunk + i, 1); },
                    v, [&] { return detail::chunks_name(op.src_buf(), op.src_chunk + i, 1); });
      }
      tmp_.push_back(v);
    }
    std::copy(tmp_.begin(), tmp_.end(), dst);  // after reading all: ranges may overlap
  }

  // The first output chunk, in rank order, that does not hold what the collective defines.
  std::string check_results() const {
    const Request& req = info_.req;
    auto p = static_cast<std::uint32_t>(req.nranks);
    std::uint32_t in = info_.in_chunks, out = info_.out_chunks;
    std::string layout = shape_error(p, in, out);
    if (!layout.empty()) return "plan: " + std::string(to_string(req.coll)) + " " + layout;
    for (std::uint32_t r = 0; r < p; ++r) {
      if (req.coll == Collective::Reduce && r != static_cast<std::uint32_t>(req.root)) continue;
      const Value* got = &cells_[r][layout_.base(Buf::Output)];
      for (std::uint32_t c = 0; c < out; ++c) {
        Value want = expected(r, c, p, in, out);
        if (got[c].chunk == want.chunk && sets_.equal(got[c].set, want.set)) continue;
        return "rank " + std::to_string(r) + " output chunk " + std::to_string(c) + ": holds " +
               (got[c].chunk == kEmpty ? "nothing" : format(got[c])) + " but should hold " + format(want);
      }
    }
    return {};
  }

 private:
  Value* cell(int rank, Buf b, std::uint32_t chunk) {
    return &cells_[static_cast<std::size_t>(rank)][layout_.base(b) + chunk];
  }

  std::uint32_t take() {
    if (free_.empty()) {
      payloads_.emplace_back();
      return static_cast<std::uint32_t>(payloads_.size() - 1);
    }
    std::uint32_t id = free_.back();
    free_.pop_back();
    return id;
  }

  static Value read(Value v, Buf b, std::uint32_t chunk) {
    if (v.chunk == kEmpty) throw OpFault{"reads " + detail::chunks_name(b, chunk, 1) + ", which holds nothing yet"};
    return v;
  }

  std::string format(Value v) const { return "{chunk " + std::to_string(v.chunk) + " from " + sets_.format(v.set) + "}"; }

  // a (+) b, where a is `a_name()` ("output chunk 3") and b `b_name()` ("received"); the names
  // are built only for a message.
  template <class AName, class BName>
  Value combine(Value a, AName a_name, Value b, BName b_name) {
    auto what = [&] { return "adds " + format(b) + " (" + b_name() + ") to " + format(a) + " (" + a_name() + ")"; };
    if (!reduces_) throw OpFault{what() + ", but " + std::string(to_string(info_.req.coll)) + " does not reduce"};
    if (a.chunk != b.chunk) throw OpFault{what() + ": different input chunks"};
    Value v{a.chunk, 0};
    std::uint32_t dup = 0;
    if (!sets_.unite(a.set, b.set, &v.set, &dup)) throw OpFault{what() + ": counts rank " + std::to_string(dup) + " twice"};
    return v;
  }

  // Checks the chunk counts the expected results below rely on.
  std::string shape_error(std::uint32_t p, std::uint32_t in, std::uint32_t out) const {
    auto got = [&] { return "got in_chunks " + std::to_string(in) + ", out_chunks " + std::to_string(out); };
    switch (info_.req.coll) {
      case Collective::AllReduce:
      case Collective::Broadcast:
      case Collective::Reduce:
        if (in != out) return "needs in_chunks = out_chunks, " + got();
        break;
      case Collective::ReduceScatter:
        if (std::uint64_t{out} * p != in) return "needs in_chunks = " + std::to_string(p) + " x out_chunks, " + got();
        break;
      case Collective::AllGather:
        if (std::uint64_t{in} * p != out) return "needs out_chunks = " + std::to_string(p) + " x in_chunks, " + got();
        break;
      case Collective::AlltoAll:
        if (in != out || in % p != 0) return "needs in_chunks = out_chunks, a multiple of " + std::to_string(p) + ", " + got();
        break;
    }
    return {};
  }

  // What rank r's output chunk c holds when the collective is done (docs/plan.md).
  Value expected(std::uint32_t r, std::uint32_t c, std::uint32_t p, std::uint32_t in, std::uint32_t out) const {
    auto one = [](std::uint32_t rank) { return RankSets::singleton(rank); };
    switch (info_.req.coll) {
      case Collective::AllReduce:
      case Collective::Reduce: return {c, sets_.all()};
      case Collective::ReduceScatter: return {r * out + c, sets_.all()};
      case Collective::AllGather: return {c % in, one(c / in)};
      case Collective::AlltoAll: {
        std::uint32_t m = in / p;
        return {r * m + c % m, one(c / m)};
      }
      case Collective::Broadcast: return {c, one(static_cast<std::uint32_t>(info_.req.root))};
    }
    return {};
  }

  const PlanInfo& info_;
  detail::Layout layout_;
  RankSets sets_;
  bool reduces_;
  std::vector<std::vector<Value>> cells_;  // per rank: input, output, scratch chunks
  std::vector<std::vector<Value>> payloads_;
  std::vector<std::uint32_t> free_;
  std::vector<Value> tmp_;
};

}  // namespace

VerifyResult verify(const Plan& plan) {
  VerifyResult result;
  try {
    if (plan.nranks() < 1) {
      result.error = "plan: " + std::to_string(plan.nranks()) + " ranks";
      return result;
    }
    Symbolic machine(plan.info());
    detail::EngineStats stats = detail::execute(plan, machine);
    result.ops = stats.ops;
    result.transfers = stats.transfers;
    result.error = machine.check_results();
  } catch (const detail::PlanFault& e) {
    result.error = e.what();
  }
  result.ok = result.error.empty();
  return result;
}

}  // namespace collkit::plan
