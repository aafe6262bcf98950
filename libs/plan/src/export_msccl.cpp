// MSCCL XML export (REFERENCE 3.1). The format's rules, as the executor's parser
// (Azure/msccl-executor-nccl src/misc/msccl/msccl_parser.cc) enforces them:
//  - <tb> ids dense from 0; a tb has at most one send peer and one receive peer, and a
//    (channel, peer, direction) belongs to one tb (it maps to one NCCL connection);
//  - a step waits for at most one step of another tb (depid, deps); more go on nop steps before it;
//  - cnt < 72; at most 64 steps per tb in the default build; all 10 step attributes present;
//  - chan < MAXCHANNELS (32 in the NCCL the executor builds on, src/include/devcomm.h); a
//    dependency names its tb in 8 bits (mscclThreadBlock::dependentBid), so at most tb 127.
// A plan's (rank, channel) runs in program order; here its ops are dealt to tbs by peer, and
// an op whose predecessor sits in another tb depends on that predecessor's last step, so the
// order survives the split. Steps in one tb run in order, so same-tb dependencies are dropped.
// A plan with more channels than MSCCL has (synth's: one per tree arc) shares MSCCL channels
// among plan channels that no rank uses towards the same peer in the same direction: each plan
// channel keeps threadblocks of its own, and a (channel, peer, direction) still maps to one, as
// ForestColl's to_xml gives each tree its own threadblocks and spreads trees over channels.

#include <algorithm>
#include <map>
#include <numeric>
#include <pugixml.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "collkit/core/error.h"
#include "collkit/core/provenance_json.h"
#include "collkit/plan/export.h"
#include "collkit/plan/matched.h"

namespace collkit::plan {

namespace {

/// mscclThreadBlock::dependentBid is an int8_t.
constexpr int kMaxDepTb = 127;

struct Step {
  const char* type = "nop";
  Buf src = Buf::Input;
  std::int64_t srcoff = -1;
  Buf dst = Buf::Output;
  std::int64_t dstoff = -1;
  std::uint32_t cnt = 0;
  int depid = -1, deps = -1;
  bool hasdep = false;
};

struct Tb {
  int send = -1, recv = -1;
  int plan_chan = 0;  ///< the plan's channel its ops come from
  int chan = 0;       ///< the MSCCL channel it runs on
  std::vector<Step> steps;
};

struct StepRef {
  int tb = -1, step = -1;
};

const char* buf_name(Buf b) {
  switch (b) {
    case Buf::Input: return "i";
    case Buf::Output: return "o";
    case Buf::Scratch: return "s";
  }
  return "i";
}

const char* coll_name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "allreduce";
    case Collective::ReduceScatter: return "reducescatter";  // the executor's spelling (REFERENCE 3.1)
    case Collective::AllGather: return "allgather";
    case Collective::AlltoAll: return "alltoall";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
  }
  return "custom";
}

// Deals one rank's program to threadblocks.
class RankBuilder {
 public:
  RankBuilder(int rank, const MscclOptions& opt, const std::vector<int>& chan_of) : rank_(rank), opt_(opt), chan_of_(chan_of) {}

  void add(const std::vector<Op>& ops) {
    pos_.assign(ops.size(), StepRef{});
    for (std::size_t i = 0; i < ops.size(); ++i) place(ops, i);
  }

  std::vector<Tb>& tbs() { return tbs_; }

 private:
  int find(int chan, int Tb::*field, int peer) const {
    for (std::size_t t = 0; t < tbs_.size(); ++t)
      if (tbs_[t].plan_chan == chan && tbs_[t].*field == peer) return static_cast<int>(t);
    return -1;
  }

  // The tb for a peer in one direction: the one already holding it, else the channel's current
  // tb when that direction is free there, else any free one, else a new one.
  int tb_for(int chan, int Tb::*field, int peer) {
    int t = find(chan, field, peer);
    if (t < 0) {
      auto cur = last_tb_.find(chan);
      if (cur != last_tb_.end() && tbs_[static_cast<std::size_t>(cur->second)].*field == -1)
        t = cur->second;
      else
        t = find(chan, field, -1);
    }
    if (t < 0) t = new_tb(chan);
    tbs_[static_cast<std::size_t>(t)].*field = peer;
    return t;
  }

  int new_tb(int chan) {
    tbs_.push_back(Tb{});
    tbs_.back().plan_chan = chan;
    tbs_.back().chan = chan_of_[static_cast<std::size_t>(chan)];
    return static_cast<int>(tbs_.size()) - 1;
  }

  void place(const std::vector<Op>& ops, std::size_t i) {
    const Op& op = ops[i];
    int chan = op.channel;
    if (op.peer == rank_ && op.type != OpType::Copy && op.type != OpType::Reduce)
      throw InputError("rank " + std::to_string(rank_) + " op " + std::to_string(i) + " sends to or receives from itself");
    int t = 0;
    switch (op.type) {
      case OpType::Send: t = tb_for(chan, &Tb::send, op.peer); break;
      case OpType::Recv:
      case OpType::RecvReduce: t = tb_for(chan, &Tb::recv, op.peer); break;
      default: {
        auto cur = last_tb_.find(chan);
        t = cur != last_tb_.end() ? cur->second : new_tb(chan);
      }
    }
    // Dependencies on other tbs: explicit deps, and program order on this channel.
    std::map<int, int> wait;  // tb -> latest step waited for
    auto need = [&](StepRef r) {
      if (r.tb < 0 || r.tb == t) return;
      int& s = wait.try_emplace(r.tb, -1).first->second;
      s = std::max(s, r.step);
    };
    for (std::size_t d = 0; d < op.num_deps(); ++d)
      if (op.deps[d] < i) need(pos_[op.deps[d]]);
    auto prev = last_op_.find(chan);
    if (prev != last_op_.end()) need(pos_[prev->second]);

    Tb& tb = tbs_[static_cast<std::size_t>(t)];
    std::vector<std::pair<int, int>> deps(wait.begin(), wait.end());
    for (std::size_t k = 0; k + 1 < deps.size(); ++k) {
      Step nop;
      nop.depid = deps[k].first;
      nop.deps = deps[k].second;
      tb.steps.push_back(nop);
    }
    const char* type = "s";
    switch (op.type) {
      case OpType::Send: type = "s"; break;
      case OpType::Recv: type = "r"; break;
      case OpType::RecvReduce: type = "rrc"; break;
      case OpType::Copy: type = "cpy"; break;
      case OpType::Reduce: type = "re"; break;
    }
    bool reads = op.type != OpType::Recv, writes = op.type != OpType::Send;
    auto max_count = static_cast<std::uint32_t>(std::max(opt_.max_count, 1));
    for (std::uint32_t done = 0; done < op.count || (op.count == 0 && done == 0);) {
      std::uint32_t n = std::min(max_count, op.count - done);
      Step s;
      s.type = type;
      if (reads) {
        s.src = op.src.buf;
        s.srcoff = op.src.chunk + done;
      }
      if (writes) {
        s.dst = op.dst.buf;
        s.dstoff = op.dst.chunk + done;
      }
      s.cnt = n;
      if (done == 0 && !deps.empty()) {
        s.depid = deps.back().first;
        s.deps = deps.back().second;
      }
      tb.steps.push_back(s);
      done += n;
      if (n == 0) break;
    }
    for (auto [dt, ds] : deps) tbs_[static_cast<std::size_t>(dt)].steps[static_cast<std::size_t>(ds)].hasdep = true;
    pos_[i] = StepRef{t, static_cast<int>(tbs_[static_cast<std::size_t>(t)].steps.size()) - 1};
    last_tb_[chan] = t;
    last_op_[chan] = i;
  }

  int rank_;
  const MscclOptions& opt_;
  const std::vector<int>& chan_of_;
  std::vector<Tb> tbs_;
  std::vector<StepRef> pos_;          // op index -> its last step
  std::map<int, int> last_tb_;        // channel -> tb of its latest op
  std::map<int, std::size_t> last_op_;  // channel -> its latest op
};

void check_chunk_sizes(const PlanInfo& info) {
  // MSCCL has one chunk size, nBytes / nchunksperloop, for all three buffers.
  auto in_b = buffer_bytes(info, Buf::Input), out_b = buffer_bytes(info, Buf::Output);
  auto in_c = info.in_chunks, out_c = info.out_chunks;
  auto size = [](std::uint64_t b, std::uint32_t c) { return std::to_string(c ? b / c : 0); };
  if (in_b * out_c != out_b * in_c)
    throw InputError("MSCCL needs one chunk size for all buffers: input chunks hold " + size(in_b, in_c) +
                     " bytes, output chunks " + size(out_b, out_c));
  if (info.scratch_chunks > 0 && info.scratch_bytes * out_c != out_b * info.scratch_chunks)
    throw InputError("MSCCL needs one chunk size for all buffers: scratch chunks hold " +
                     size(info.scratch_bytes, info.scratch_chunks) + " bytes, output chunks " + size(out_b, out_c));
}

/// The MSCCL channel of each plan channel: the same one where the plan fits MSCCL's channels,
/// else the first one (greedily) on which no rank already has a threadblock towards the same peer
/// in the same direction. Throws when even that needs more than opt.max_channels.
std::vector<int> msccl_channels(const PlanInfo& info, const std::vector<std::vector<Op>>& programs, const MscclOptions& opt) {
  std::size_t channels = std::max<std::size_t>(info.channels, 1);
  for (const std::vector<Op>& prog : programs)
    for (const Op& o : prog) channels = std::max<std::size_t>(channels, std::size_t{o.channel} + 1);
  std::vector<int> chan_of(channels);
  std::iota(chan_of.begin(), chan_of.end(), 0);
  if (static_cast<int>(chan_of.size()) <= opt.max_channels) return chan_of;
  // Per plan channel, the (rank, peer, direction) it talks on.
  std::vector<std::set<std::tuple<int, int, bool>>> uses(chan_of.size());
  for (std::size_t r = 0; r < programs.size(); ++r)
    for (const Op& o : programs[r])
      if (o.type == OpType::Send || o.type == OpType::Recv || o.type == OpType::RecvReduce)
        uses[o.channel].insert({static_cast<int>(r), o.peer, o.type == OpType::Send});
  std::vector<std::set<std::tuple<int, int, bool>>> taken;
  for (std::size_t c = 0; c < uses.size(); ++c) {
    std::size_t m = 0;
    auto clash = [&](std::size_t to) {
      return std::any_of(uses[c].begin(), uses[c].end(), [&](const auto& u) { return taken[to].count(u) > 0; });
    };
    while (m < taken.size() && clash(m)) ++m;
    if (m == taken.size()) taken.emplace_back();
    taken[m].insert(uses[c].begin(), uses[c].end());
    chan_of[c] = static_cast<int>(m);
  }
  if (static_cast<int>(taken.size()) > opt.max_channels)
    throw InputError("the plan's " + std::to_string(chan_of.size()) + " channels need " + std::to_string(taken.size()) +
                     " MSCCL channels (those towards one peer cannot share one), MSCCL allows " + std::to_string(opt.max_channels) +
                     " (--max-channels for a runtime with more)");
  return chan_of;
}

}  // namespace

std::string to_msccl_xml(const Plan& plan, const MscclOptions& opt) {
  const PlanInfo& info = plan.info();
  check_chunk_sizes(info);
  int p = plan.nranks();
  // Through the one matched-plan pass, as verify reads it: an op's chunk range past its buffer
  // (once written out as is) or a count of 4294967295 (once split into steps without end) is
  // refused naming the op before any step is made.
  std::vector<std::vector<Op>> programs;
  MatchVisitor keep;
  keep.program = [&](int, std::uint32_t, const std::vector<Op>& ops) { programs.push_back(ops); };
  match_plan(plan, keep);
  std::vector<int> chan_of = msccl_channels(info, programs, opt);
  std::vector<std::vector<Tb>> gpus;
  int nchannels = 1;
  for (int r = 0; r < p; ++r) {
    RankBuilder b(r, opt, chan_of);
    b.add(programs[static_cast<std::size_t>(r)]);
    std::map<int, std::vector<int>> sends, recvs;
    for (std::size_t t = 0; t < b.tbs().size(); ++t) {
      const Tb& tb = b.tbs()[t];
      nchannels = std::max(nchannels, tb.chan + 1);
      if (static_cast<int>(tb.steps.size()) > opt.max_steps)
        throw InputError("rank " + std::to_string(r) + " threadblock " + std::to_string(t) + " needs " + std::to_string(tb.steps.size()) +
                         " steps, MSCCL allows " + std::to_string(opt.max_steps) +
                         " (--max-steps for a runtime built with a larger MSCCL_MAX_NUM_STEPS)");
      if (tb.send >= 0) sends[tb.chan].push_back(tb.send);
      if (tb.recv >= 0) recvs[tb.chan].push_back(tb.recv);
      for (const Step& st : tb.steps)
        if (st.depid > kMaxDepTb)
          throw InputError("rank " + std::to_string(r) + " threadblock " + std::to_string(t) + " depends on threadblock " +
                           std::to_string(st.depid) + ", MSCCL names at most " + std::to_string(kMaxDepTb) + " in a dependency");
    }
    // MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL: 32 send and 32 receive peers per channel.
    for (auto* m : {&sends, &recvs})
      for (const auto& [chan, peers] : *m)
        if (peers.size() > 32)
          throw InputError("rank " + std::to_string(r) + " channel " + std::to_string(chan) + " " +
                           (m == &sends ? "sends to " : "receives from ") + std::to_string(peers.size()) +
                           " peers, MSCCL allows 32");
    gpus.push_back(std::move(b.tbs()));
  }

  pugi::xml_document doc;
  // Where the file came from, as the JSON artifacts say it. An XML comment may not hold "--"
  // (command lines do): the second '-' of each pair is written as JSON's \u002d, which reads back
  // the same. MSCCL's parser skips comments (mscclXmlSkipComment).
  std::string made = provenance_json().dump();
  for (std::size_t at = 0; (at = made.find("--", at)) != std::string::npos; at += 7) made.replace(at + 1, 1, "\\u002d");
  doc.append_child(pugi::node_comment).set_value((" collkit provenance " + made + " ").c_str());
  // Paths are not part of MSCCL's format: the runtime sends every step over its own transport.
  if (std::any_of(info.channel_paths.begin(), info.channel_paths.end(), [](ChannelPath c) { return c != ChannelPath::Route; }))
    doc.append_child(pugi::node_comment)
        .set_value(" collkit: the plan's channel_paths (sends staged through host memory) are dropped: MSCCL takes its own path ");
  pugi::xml_node algo = doc.append_child("algo");
  std::string name = opt.name.empty() ? info.algorithm + "-" + std::string(to_string(info.req.coll)) + "-" + std::to_string(p) : opt.name;
  algo.append_attribute("name") = name.substr(0, 63).c_str();
  algo.append_attribute("proto") = opt.proto.c_str();
  algo.append_attribute("nchannels") = nchannels;
  algo.append_attribute("nchunksperloop") = std::max(info.in_chunks, info.out_chunks);
  algo.append_attribute("ngpus") = p;
  algo.append_attribute("coll") = coll_name(info.req.coll);
  // Our plans read input and write output as separate buffers.
  algo.append_attribute("inplace") = 0;
  algo.append_attribute("outofplace") = 1;
  algo.append_attribute("minBytes") = static_cast<unsigned long long>(opt.min_bytes);
  algo.append_attribute("maxBytes") = static_cast<unsigned long long>(opt.max_bytes);
  for (int r = 0; r < p; ++r) {
    pugi::xml_node gpu = algo.append_child("gpu");
    gpu.append_attribute("id") = r;
    gpu.append_attribute("i_chunks") = info.in_chunks;
    gpu.append_attribute("o_chunks") = info.out_chunks;
    gpu.append_attribute("s_chunks") = info.scratch_chunks;
    const auto& tbs = gpus[static_cast<std::size_t>(r)];
    for (std::size_t t = 0; t < tbs.size(); ++t) {
      pugi::xml_node tb = gpu.append_child("tb");
      tb.append_attribute("id") = static_cast<int>(t);
      tb.append_attribute("send") = tbs[t].send;
      tb.append_attribute("recv") = tbs[t].recv;
      tb.append_attribute("chan") = tbs[t].chan;
      for (std::size_t s = 0; s < tbs[t].steps.size(); ++s) {
        const Step& st = tbs[t].steps[s];
        pugi::xml_node step = tb.append_child("step");
        step.append_attribute("s") = static_cast<int>(s);
        step.append_attribute("type") = st.type;
        step.append_attribute("srcbuf") = buf_name(st.src);
        step.append_attribute("srcoff") = static_cast<long long>(st.srcoff);
        step.append_attribute("dstbuf") = buf_name(st.dst);
        step.append_attribute("dstoff") = static_cast<long long>(st.dstoff);
        step.append_attribute("cnt") = st.cnt;
        step.append_attribute("depid") = st.depid;
        step.append_attribute("deps") = st.deps;
        step.append_attribute("hasdep") = st.hasdep ? 1 : 0;
      }
    }
  }
  std::ostringstream text;
  doc.save(text, "  ", pugi::format_indent | pugi::format_no_declaration);
  return text.str();
}

}  // namespace collkit::plan
