#include "shell.h"

#include <editline/readline.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/size.h"
#include "collkit/plan/export.h"
#include "collkit/plan/io.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/show.h"
#include "collkit/topo/io.h"
#include "collkit/topo/show.h"
#include "collkit/topo/subset.h"
#include "collkit/topo/synth.h"
#include "progress.h"

namespace collkit::shell {

namespace {

using Args = std::vector<std::string>;

struct CommandHelp {
  const char* name;
  const char* usage;
  const char* what;
};

// The command table: help, completion and dispatch all read it.
const std::vector<CommandHelp>& commands() {
  static const std::vector<CommandHelp> table = {
      {"help", "help [COMMAND]", "this list, or one command's usage"},
      {"load", "load FILE", "load a topology file (collkit.topology/1); edits and questions start afresh"},
      {"synth", "synth NODE [NODES [FABRIC]]", "a synthetic cluster, as coll-topo synth: synth dgx-h100 16 fat-tree:rails=8,oversub=2"},
      {"show", "show [matrix [FIRST [COUNT]]]", "the topology's summary, or its rank-by-rank matrix"},
      {"plan", "plan COLL SIZE [ALGO] [channels=N] [pipeline=N] [root=R]",
       "a plan (ALGO default auto): predicted time, busbw, bound and gap; it becomes the current plan"},
      {"compare", "compare COLL SIZE [root=R]", "every algorithm side by side: predicted, busbw, bound, gap; * marks the best"},
      {"explain", "explain COLL SIZE [root=R]", "why auto chooses what it chooses: the candidates, their knobs and predictions"},
      {"sweep", "sweep COLL [MIN [MAX [FACTOR]]]", "the best algorithm per size (default 1K to 1G, x4)"},
      {"simulate", "simulate", "the current plan simulated: time, bound, busiest links, critical path"},
      {"fail", "fail link A B | fail vertex V", "what-if: a link or a vertex (and its links) fails; the ranks on it are gone"},
      {"scale", "scale link A B bw|lat F | scale type TYPE bw|lat F",
       "what-if: a link's (or every link of a type's) bandwidth or latency x F"},
      {"remove", "remove rank R", "what-if: rank R leaves the job (the others keep their order)"},
      {"add", "add hosts N", "what-if: N more hosts of the synthesised cluster's node (after synth only)"},
      {"edits", "edits", "the what-if edits in force, oldest first"},
      {"undo", "undo", "take back the last edit"},
      {"diff", "diff", "the questions asked so far, answered on the unedited and the edited topology"},
      {"save", "save plan FILE | save topo FILE", "write the current plan or the edited topology"},
      {"export", "export FILE [PROTO]", "the current plan as MSCCL XML (PROTO: Simple, LL128 or LL)"},
      {"run", "run", "the mpirun command line that replays the current plan (saved with save plan)"},
      {"quit", "quit", "leave the shell (also exit, or end of input)"},
  };
  return table;
}

const char* const kCollectives[] = {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce"};

Args split(const std::string& line) {
  Args out;
  std::istringstream in(line);
  for (std::string w; in >> w;) {
    if (w[0] == '#') break;  // a comment to the end of the line
    out.push_back(w);
  }
  return out;
}

[[noreturn]] void usage(const std::string& name) {
  for (const auto& c : commands())
    if (name == c.name) throw InputError(fmt::format("usage: {}", c.usage));
  throw InputError("unknown command");
}

plan::Collective parse_coll(const std::string& s) {
  auto c = plan::parse_collective(s);
  if (!c)
    throw InputError(
        fmt::format("unknown collective \"{}\" (expected allreduce, reducescatter, allgather, alltoall, broadcast or reduce)", s));
  return *c;
}

double parse_number(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || !(v > 0) || v > 1e12) throw InputError(fmt::format("{}: expected a number > 0, got \"{}\"", what, s));
  return v;
}

int parse_int(const std::string& s, const std::string& what, int lo, int hi) {
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < lo || v > hi)
    throw InputError(fmt::format("{}: expected a whole number from {} to {}, got \"{}\"", what, lo, hi, s));
  return static_cast<int>(v);
}

// key=value words after the positional ones.
struct Knobs {
  plan::AlgoOptions algo;
  int root = 0;
};
Knobs parse_knobs(const Args& words, std::size_t from, const std::string& cmd) {
  Knobs k;
  for (std::size_t i = from; i < words.size(); ++i) {
    auto eq = words[i].find('=');
    std::string key = words[i].substr(0, eq), value = eq == std::string::npos ? "" : words[i].substr(eq + 1);
    if (eq == std::string::npos) usage(cmd);
    if (key == "channels") k.algo.channels = parse_int(value, "channels", 1, 65535);
    else if (key == "pipeline") k.algo.pipeline = parse_int(value, "pipeline", 1, 1 << 20);
    else if (key == "root") k.root = parse_int(value, "root", 0, 1 << 24);
    else throw InputError(fmt::format("unknown setting \"{}\" (expected channels=, pipeline= or root=)", key));
  }
  return k;
}

topo::LinkId find_link(const topo::Topology& t, const std::string& a, const std::string& b) {
  topo::VertexId va = t.at(a), vb = t.at(b);
  for (const topo::Adjacent& adj : t.adjacent(va))
    if (adj.peer == vb) return adj.link;
  throw InputError(fmt::format("no link joins {} and {}", a, b));
}

// A copy of `t` without the links in `drop_links` and the vertices in `drop_vertices` (their ranks
// gone, the others renumbered in order). Refused when what is left is not connected.
topo::Topology without(const topo::Topology& t, const std::vector<topo::LinkId>& drop_links,
                       const std::vector<topo::VertexId>& drop_vertices) {
  topo::Topology out;
  out.name = t.name;
  out.source = t.source;
  out.notes = t.notes;
  out.calibration = t.calibration;
  std::vector<std::optional<topo::VertexId>> map(t.num_vertices());
  for (topo::VertexId v = 0; v < t.num_vertices(); ++v)
    if (std::find(drop_vertices.begin(), drop_vertices.end(), v) == drop_vertices.end()) map[v] = out.add_vertex(t.vertex(v));
  for (topo::LinkId l = 0; l < t.num_links(); ++l) {
    topo::Link link = t.link(l);
    if (std::find(drop_links.begin(), drop_links.end(), l) != drop_links.end() || !map[link.a] || !map[link.b]) continue;
    link.a = *map[link.a];
    link.b = *map[link.b];
    out.add_link(link);
  }
  for (topo::Rank r = 0; r < t.num_ranks(); ++r)
    if (map[t.rank_vertex(r)]) out.add_rank(*map[t.rank_vertex(r)]);
  if (out.num_ranks() == 0) throw InputError("no rank would be left");
  out.check_connected();
  return out;
}

std::string us(double v) { return fmt::format("{:.2f}", v); }

std::atomic<bool> g_interrupted{false};

void check_interrupt() {
  if (g_interrupted.exchange(false)) throw InputError("interrupted");
}

// The running command's progress line (on a terminal, after 2 s): execute() holds it, and
// progress_done() clears it before an answer is printed.
cli::Progress* g_progress = nullptr;
void progress_done() {
  if (g_progress) g_progress->clear();
}

}  // namespace

plan::SearchOptions interruptible_search() {
  plan::SearchOptions s;
  s.on_plan = [](int) {
    check_interrupt();
    if (g_progress) g_progress->tick();
  };
  return s;
}

namespace {

plan::SimOptions sim_options_on(topo::Topology& t, std::shared_ptr<topo::RouteCache>& routes,
                                std::shared_ptr<plan::sim::FoldCache>& folds) {
  if (!routes) routes = std::make_shared<topo::RouteCache>(t);
  if (!folds) folds = plan::fold_cache_for(routes);
  plan::SimOptions s;
  s.routes = routes;
  s.folds = folds;
  s.progress = [](std::size_t done, std::size_t total) {
    check_interrupt();
    if (g_progress) g_progress->ops_done(done, total);
  };
  return s;
}

}  // namespace

plan::SimOptions Session::sim_options() {
  topology();
  return sim_options_on(stack_.back().topology, stack_.back().routes, stack_.back().folds);
}

const plan::Evaluation& Session::evaluation(Edit& at, const plan::Request& req) {
  auto key = std::make_tuple(static_cast<int>(req.coll), req.bytes, req.root);
  auto it = at.answers.find(key);
  if (it != at.answers.end()) return *it->second;
  auto e = std::make_shared<const plan::Evaluation>(
      plan::evaluate(req, at.topology, {}, sim_options_on(at.topology, at.routes, at.folds), interruptible_search()));
  progress_done();
  return *at.answers.emplace(key, std::move(e)).first->second;
}

const topo::Topology& Session::topology() const {
  if (stack_.empty()) throw InputError("no topology: load FILE or synth NODE first");
  return stack_.back().topology;
}

void Session::set_base(topo::Topology t, std::optional<topo::SynthRequest> synth) {
  stack_.clear();
  stack_.push_back({"", std::move(t), nullptr, {}, nullptr});
  synth_ = std::move(synth);
  plan_.reset();
  plan_file_.clear();
  asked_.clear();
  const topo::Topology& now = topology();
  out_ << fmt::format("{}: {} ranks, {} vertices, {} links\n", now.name, now.num_ranks(), now.num_vertices(), now.num_links());
}

void Session::push(std::string what, topo::Topology t) {
  t.name = stack_.front().topology.name + " (edited)";
  stack_.push_back({std::move(what), std::move(t), nullptr, {}, nullptr});
  plan_.reset();  // made for the topology before the edit
  out_ << fmt::format("edit {}: {}; {} ranks\n", stack_.size() - 1, stack_.back().what, topology().num_ranks());
}

void Session::remember(const Question& q) {
  for (const Question& a : asked_)
    if (a.coll == q.coll && a.bytes == q.bytes && a.root == q.root) return;
  asked_.push_back(q);
  if (asked_.size() > 8) asked_.erase(asked_.begin());
}

bool Session::execute(const std::string& line) {
  Args w = split(line);
  if (w.empty()) return true;
  const std::string& c = w[0];
  if (c == "quit" || c == "exit") return false;
  cli::Progress progress(c);  // shown while a long command runs, cleared before its answer
  g_progress = &progress;
  struct Reset {
    ~Reset() { g_progress = nullptr; }
  } reset;
  if (c == "help") help(w);
  else if (c == "load") load(w);
  else if (c == "synth") synth(w);
  else if (c == "show") show(w);
  else if (c == "plan") plan(w);
  else if (c == "compare") compare(w, false);
  else if (c == "explain") compare(w, true);
  else if (c == "sweep") sweep(w);
  else if (c == "simulate") simulate(w);
  else if (c == "fail") fail(w);
  else if (c == "scale") scale(w);
  else if (c == "remove") remove(w);
  else if (c == "add") add(w);
  else if (c == "edits") edits(w);
  else if (c == "undo") undo(w);
  else if (c == "diff") diff(w);
  else if (c == "save") save(w);
  else if (c == "export") export_plan(w);
  else if (c == "run") run(w);
  else throw InputError(fmt::format("unknown command \"{}\" (help lists them)", c));
  return true;
}

void Session::help(const Args& a) {
  if (a.size() > 2) usage("help");
  for (const auto& c : commands())
    if (a.size() == 1 || a[1] == c.name) out_ << fmt::format("  {:<52} {}\n", c.usage, c.what);
  if (a.size() == 2 && std::none_of(commands().begin(), commands().end(), [&](const CommandHelp& c) { return a[1] == c.name; }))
    throw InputError(fmt::format("unknown command \"{}\" (help lists them)", a[1]));
}

void Session::load(const Args& a) {
  if (a.size() != 2) usage("load");
  set_base(topo::load(a[1]), std::nullopt);
}

void Session::synth(const Args& a) {
  if (a.size() < 2 || a.size() > 4) usage("synth");
  topo::SynthRequest r;
  r.node = a[1];
  if (a.size() > 2) r.nodes = parse_int(a[2], "NODES", 1, 1 << 16);
  if (a.size() > 3) r.fabric = a[3];
  set_base(topo::synth(r), r);
}

void Session::show(const Args& a) {
  const topo::Topology& t = topology();
  if (a.size() == 1) {
    out_ << topo::summary(t);
    return;
  }
  if (a[1] != "matrix" || a.size() > 4) usage("show");
  std::size_t first = a.size() > 2 ? static_cast<std::size_t>(parse_int(a[2], "FIRST", 0, static_cast<int>(t.num_ranks()) - 1)) : 0;
  std::size_t count = a.size() > 3 ? static_cast<std::size_t>(parse_int(a[3], "COUNT", 1, 1024)) : 16;
  out_ << topo::matrix(t, first, count);
}

void Session::plan(const Args& a) {
  if (a.size() < 3) usage("plan");
  const topo::Topology& t = topology();
  bool has_algo = a.size() > 3 && a[3].find('=') == std::string::npos;
  std::string algo = has_algo ? a[3] : "auto";
  Knobs k = parse_knobs(a, has_algo ? 4 : 3, "plan");
  plan::Request req{parse_coll(a[1]), parse_size_bytes(a[2]), static_cast<int>(t.num_ranks()), k.root, 1};
  plan::Rounded r = plan::round_to_elements(req);
  if (!r.note.empty()) out_ << r.note << "\n";
  std::string why;
  plan_ = plan::plan_for(algo, r.req, &t, k.algo, sim_options(), interruptible_search(), &why);
  progress_done();
  plan_file_.clear();
  remember({r.req.coll, r.req.bytes, r.req.root});
  const plan::PlanInfo& i = plan_->info();
  double algbw = plan::algbw_gbps(i.req.bytes, i.predicted_us);
  out_ << fmt::format("{} {} of {} on {} ranks, {} channel(s){}: predicted {} us  busbw {:.2f} GB/s  bound {} us  gap {:.1f}%\n",
                      i.algorithm, plan::to_string(i.req.coll), format_size_bytes(i.req.bytes), i.req.nranks, i.channels,
                      plan::weights_note(i), us(i.predicted_us), algbw * plan::busbw_factor(i.req.coll, i.req.nranks), us(i.bound_us),
                      i.bound_us > 0 ? 100.0 * (i.predicted_us - i.bound_us) / i.bound_us : 0.0);
  if (!why.empty()) out_ << "  auto chose " << why << "\n";
}

void Session::compare(const Args& a, bool explain) {
  const std::string cmd = explain ? "explain" : "compare";
  if (a.size() < 3) usage(cmd);
  const topo::Topology& t = topology();
  Knobs k = parse_knobs(a, 3, cmd);
  plan::Request req{parse_coll(a[1]), parse_size_bytes(a[2]), static_cast<int>(t.num_ranks()), k.root, 1};
  plan::Rounded r = plan::round_to_elements(req);
  if (!r.note.empty()) out_ << r.note << "\n";
  const plan::Evaluation& e = evaluation(stack_.back(), r.req);
  remember({r.req.coll, r.req.bytes, r.req.root});
  out_ << fmt::format("# {} of {} on {} ranks of {}: bound {} us\n", plan::to_string(r.req.coll), format_size_bytes(r.req.bytes),
                      r.req.nranks, t.name, us(e.bound.time_us()));
  out_ << fmt::format("  {:<20} {:>14} {:>12} {:>8}{}\n", "algorithm", "predicted(us)", "busbw(GB/s)", "gap%",
                      explain ? "  knobs (plans tried)" : "");
  for (std::size_t i = 0; i < e.candidates.size(); ++i) {
    const plan::Candidate& c = e.candidates[i];
    std::string mark = static_cast<int>(i) == e.best ? "*" : " ";
    if (!c.applicable) {
      if (explain) out_ << fmt::format(" {}{:<20} {}\n", mark, c.algorithm, c.why_not);
      else out_ << fmt::format(" {}{:<20} {:>14}\n", mark, c.algorithm, "-");
      continue;
    }
    out_ << fmt::format(" {}{:<20} {:>14.2f} {:>12.2f} {:>8.1f}", mark, c.algorithm, c.time_us, c.busbw_gbps,
                        plan::gap_percent(c.time_us, e.bound));
    if (explain && !c.not_searched.empty()) out_ << fmt::format("  knobs not searched: {} ({})", c.not_searched, c.tried);
    else if (explain) out_ << fmt::format("  {} ({})", c.knobs.empty() ? "-" : c.knobs, c.tried);
    out_ << "\n";
  }
  if (explain) {
    out_ << "  " << e.why() << "\n";
    if (!e.bound.witness.empty()) out_ << "  bound witness: " << e.bound.witness << "\n";
  }
}

void Session::sweep(const Args& a) {
  if (a.size() < 2 || a.size() > 5) usage("sweep");
  const topo::Topology& t = topology();
  plan::Collective coll = parse_coll(a[1]);
  std::uint64_t lo = parse_size_bytes(a.size() > 2 ? a[2] : "1K"), hi = parse_size_bytes(a.size() > 3 ? a[3] : "1G");
  std::uint64_t f = parse_size_bytes(a.size() > 4 ? a[4] : "4");
  if (f < 2) throw InputError("FACTOR: must be 2 or more");
  if (hi < lo) throw InputError("MAX is smaller than MIN");
  auto rows = plan::sweep(coll, static_cast<int>(t.num_ranks()), 0, lo, hi, f, t, {}, sim_options(), interruptible_search());
  progress_done();
  out_ << fmt::format("# {} on {} ranks of {}\n  {:>10} {:>10} {:>14} {:>12} {:>8}\n", plan::to_string(coll), t.num_ranks(), t.name, "size",
                      "best", "predicted(us)", "busbw(GB/s)", "gap%");
  for (const plan::SweepRow& row : rows) {
    if (row.eval.best < 0) continue;
    const plan::Candidate& b = row.eval.candidates[static_cast<std::size_t>(row.eval.best)];
    out_ << fmt::format("  {:>10} {:>10} {:>14.2f} {:>12.2f} {:>8.1f}\n", format_size_bytes(row.bytes), b.algorithm, b.time_us,
                        b.busbw_gbps, plan::gap_percent(b.time_us, row.eval.bound));
  }
}

void Session::simulate(const Args& a) {
  if (a.size() != 1) usage("simulate");
  if (!plan_) throw InputError("no current plan: plan COLL SIZE first");
  const topo::Topology& t = topology();
  plan::SimResult r = plan::simulate(*plan_, t, sim_options());
  progress_done();
  plan::Bound b = plan::lower_bound(plan_->info().req, t);
  out_ << fmt::format("time {} us  algbw {:.2f} GB/s  busbw {:.2f} GB/s  bound {} us  gap {:.1f}%\n", us(r.time_us), r.algbw_gbps,
                      r.busbw_gbps, us(b.time_us()), plan::gap_percent(r.time_us, b));
  for (const auto& l : r.busiest) {
    const topo::Link& link = t.link(l.link);
    out_ << fmt::format("  busy {} -> {} ({} {:.4g} GB/s): {} bytes, {} us\n", t.vertex(l.forward ? link.a : link.b).id,
                        t.vertex(l.forward ? link.b : link.a).id, topo::to_string(link.type), link.bw_gbps, l.bytes, us(l.busy_us));
  }
  std::size_t from = r.critical_path.size() > 4 ? r.critical_path.size() - 4 : 0;
  for (std::size_t i = from; i < r.critical_path.size(); ++i) out_ << "  critical: " << r.critical_path[i] << "\n";
}

void Session::fail(const Args& a) {
  const topo::Topology& t = topology();
  if (a.size() == 4 && a[1] == "link") {
    push(fmt::format("fail link {} {}", a[2], a[3]), without(t, {find_link(t, a[2], a[3])}, {}));
  } else if (a.size() == 3 && a[1] == "vertex") {
    topo::VertexId v = t.at(a[2]);
    std::size_t gone = t.ranks_at(v).size();
    push(fmt::format("fail vertex {} ({} rank(s) gone)", a[2], gone), without(t, {}, {v}));
  } else {
    usage("fail");
  }
}

void Session::scale(const Args& a) {
  const topo::Topology& t = topology();
  bool link = a.size() == 6 && a[1] == "link", type = a.size() == 5 && a[1] == "type";
  if (!link && !type) usage("scale");
  const std::string& what = a[a.size() - 2];
  if (what != "bw" && what != "lat") usage("scale");
  double f = parse_number(a.back(), "F");
  std::vector<topo::LinkId> ids;
  if (link) {
    ids.push_back(find_link(t, a[2], a[3]));
  } else {
    auto lt = topo::parse_link_type(a[2]);
    if (!lt) throw InputError(fmt::format("unknown link type \"{}\"", a[2]));
    for (topo::LinkId l = 0; l < t.num_links(); ++l)
      if (t.link(l).type == *lt) ids.push_back(l);
    if (ids.empty()) throw InputError(fmt::format("the topology has no {} link", a[2]));
  }
  topo::Topology edited = t;
  for (topo::LinkId l : ids) {
    if (what == "bw") edited.mutable_link(l).bw_gbps *= f;
    else edited.mutable_link(l).latency_us *= f;
  }
  std::string target = link ? fmt::format("link {} {}", a[2], a[3]) : fmt::format("{} {} links", ids.size(), a[2]);
  push(fmt::format("scale {} {} x{:g}", target, what == "bw" ? "bandwidth" : "latency", f), std::move(edited));
}

void Session::remove(const Args& a) {
  if (a.size() != 3 || a[1] != "rank") usage("remove");
  const topo::Topology& t = topology();
  if (t.num_ranks() < 2) throw InputError("the last rank cannot be removed");
  int gone = parse_int(a[2], "R", 0, static_cast<int>(t.num_ranks()) - 1);
  std::vector<topo::Rank> keep;
  for (topo::Rank r = 0; r < t.num_ranks(); ++r)
    if (static_cast<int>(r) != gone) keep.push_back(r);
  topo::Topology edited = topo::with_ranks(t, keep);
  push(fmt::format("remove rank {} (ranks after it move down one)", gone), std::move(edited));
}

void Session::add(const Args& a) {
  if (a.size() != 3 || a[1] != "hosts") usage("add");
  if (!synth_) throw InputError("add hosts: only a cluster made with synth can grow (this one was loaded)");
  if (stack_.size() > 1) throw InputError("add hosts: undo the other edits first (hosts are added to the synthesised cluster)");
  int n = parse_int(a[2], "N", 1, 1 << 16);
  topo::SynthRequest r = *synth_;
  r.nodes += n;
  topo::Topology grown = topo::synth(r);
  // The grown cluster is the new base (diff compares against it); the questions asked stay.
  synth_ = r;
  stack_.clear();
  stack_.push_back({"", std::move(grown), nullptr, {}, nullptr});
  plan_.reset();
  out_ << fmt::format("added {} host(s): {}, {} ranks (the new base for diff and undo)\n", n, topology().name, topology().num_ranks());
}

void Session::edits(const Args& a) {
  if (a.size() != 1) usage("edits");
  topology();
  if (stack_.size() == 1) out_ << "no edits: " << stack_.front().topology.name << " as loaded\n";
  for (std::size_t i = 1; i < stack_.size(); ++i) out_ << fmt::format("  {}. {}\n", i, stack_[i].what);
}

void Session::undo(const Args& a) {
  if (a.size() != 1) usage("undo");
  topology();
  if (stack_.size() == 1) throw InputError("nothing to undo");
  out_ << "undone: " << stack_.back().what << "\n";
  stack_.pop_back();
  plan_.reset();
}

void Session::diff(const Args& a) {
  if (a.size() != 1) usage("diff");
  topology();
  if (stack_.size() == 1) throw InputError("no edits: nothing to compare (fail, scale, remove first)");
  if (asked_.empty()) throw InputError("no questions asked yet: plan or compare COLL SIZE first");
  out_ << fmt::format("# best plan before and after {} edit(s)\n  {:<14} {:>10} {:>10} {:>14} {:>10} {:>14} {:>9}\n", stack_.size() - 1,
                      "collective", "size", "before", "time(us)", "after", "time(us)", "change");
  for (const Question& q : asked_) {
    auto best = [&](Edit& at) -> const plan::Candidate& {
      const topo::Topology& t = at.topology;
      plan::Request req{q.coll, q.bytes, static_cast<int>(t.num_ranks()), std::min(q.root, static_cast<int>(t.num_ranks()) - 1), 1};
      const plan::Evaluation& e = evaluation(at, plan::round_to_elements(req).req);
      if (e.best < 0) throw InputError("no algorithm applies");
      return e.candidates[static_cast<std::size_t>(e.best)];
    };
    const plan::Candidate &b = best(stack_.front()), &c = best(stack_.back());
    out_ << fmt::format("  {:<14} {:>10} {:>10} {:>14.2f} {:>10} {:>14.2f} {:>+8.1f}%\n", plan::to_string(q.coll),
                        format_size_bytes(q.bytes), b.algorithm, b.time_us, c.algorithm, c.time_us,
                        100.0 * (c.time_us - b.time_us) / b.time_us);
  }
}

void Session::save(const Args& a) {
  if (a.size() != 3 || (a[1] != "plan" && a[1] != "topo")) usage("save");
  if (a[1] == "topo") {
    // The file says which what-ifs made it (its provenance is the shell's command line alone).
    topo::Topology t = topology();
    for (std::size_t i = 1; i < stack_.size(); ++i) t.notes.push_back("coll-plan shell what-if: " + stack_[i].what);
    topo::save(t, a[2]);
    out_ << "wrote " << a[2] << "\n";
    return;
  }
  if (!plan_) throw InputError("no current plan: plan COLL SIZE first");
  plan::save(*plan_, a[2]);
  plan_file_ = a[2];
  out_ << "wrote " << a[2] << "\n";
}

void Session::export_plan(const Args& a) {
  if (a.size() < 2 || a.size() > 3) usage("export");
  if (!plan_) throw InputError("no current plan: plan COLL SIZE first");
  plan::MscclOptions mo;
  if (a.size() == 3) mo.proto = a[2];
  write_file_atomic(a[1], plan::to_msccl_xml(*plan_, mo));
  out_ << "wrote " << a[1] << "\n";
}

void Session::run(const Args& a) {
  if (a.size() != 1) usage("run");
  if (!plan_) throw InputError("no current plan: plan COLL SIZE first");
  if (plan_file_.empty()) throw InputError("the current plan is not saved: save plan FILE first");
  const plan::PlanInfo& i = plan_->info();
  out_ << fmt::format("mpirun -np {} coll-run --plan {} -b {} -e {}\n", i.req.nranks, plan_file_, i.req.bytes, i.req.bytes);
}

std::vector<std::string> Session::completions(const Args& before, const std::string& word) const {
  std::vector<std::string> pool;
  auto vertices = [&] {
    if (stack_.empty()) return;
    for (const topo::Vertex& v : topology().vertices()) pool.push_back(v.id);
  };
  // A link's far end: the vertices linked to its first end (all of them if that is not a vertex).
  auto far_ends = [&](const std::string& first) {
    if (stack_.empty()) return;
    const topo::Topology& t = topology();
    std::optional<topo::VertexId> a = t.find(first);
    if (!a) return vertices();
    for (const topo::Adjacent& adj : t.adjacent(*a)) pool.push_back(t.vertex(adj.peer).id);
  };
  if (before.empty()) {
    for (const auto& c : commands()) pool.push_back(c.name);
    pool.push_back("exit");
  } else {
    const std::string& c = before[0];
    std::size_t at = before.size();  // the index of the word being completed
    if (c == "help" && at == 1) {
      for (const auto& h : commands()) pool.push_back(h.name);
    } else if ((c == "plan" || c == "compare" || c == "explain" || c == "sweep") && at == 1) {
      pool.assign(std::begin(kCollectives), std::end(kCollectives));
    } else if (c == "plan" && at == 3) {
      pool.push_back("auto");
      for (const plan::Algorithm* al : plan::algorithms()) pool.emplace_back(al->name());
    } else if (c == "synth" && at == 1) {
      pool = topo::list_node_presets();
    } else if (c == "synth" && at == 3) {
      pool = {"single-switch", "fat-tree:rails=", "torus:dims="};
    } else if (c == "fail" && at == 1) {
      pool = {"link", "vertex"};
    } else if (c == "fail" && at == 3 && before[1] == "link") {
      far_ends(before[2]);
    } else if (c == "fail" && at >= 2) {
      vertices();
    } else if (c == "scale" && at == 1) {
      pool = {"link", "type"};
    } else if (c == "scale" && before.size() >= 2 && before[1] == "link" && at == 2) {
      vertices();
    } else if (c == "scale" && before.size() >= 3 && before[1] == "link" && at == 3) {
      far_ends(before[2]);
    } else if (c == "scale" &&
               ((before.size() >= 2 && before[1] == "link" && at == 4) || (before.size() >= 2 && before[1] == "type" && at == 3))) {
      pool = {"bw", "lat"};
    } else if (c == "scale" && at == 2) {
      for (topo::LinkType lt : {topo::LinkType::NvLink, topo::LinkType::Pcie, topo::LinkType::Xgmi, topo::LinkType::C2c,
                                topo::LinkType::Smp, topo::LinkType::InfiniBand, topo::LinkType::Ethernet})
        pool.emplace_back(topo::to_string(lt));
    } else if (c == "remove" && at == 1) {
      pool = {"rank"};
    } else if (c == "add" && at == 1) {
      pool = {"hosts"};
    } else if (c == "save" && at == 1) {
      pool = {"plan", "topo"};
    } else if (c == "show" && at == 1) {
      pool = {"matrix"};
    }
  }
  std::vector<std::string> out;
  for (const std::string& p : pool)
    if (p.compare(0, word.size(), word) == 0) out.push_back(p);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

Session* g_session = nullptr;  // libedit's completion callbacks take no context

char* next_match(const char* text, int state) {
  static std::vector<std::string> matches;
  static std::size_t next = 0;
  if (state == 0) {
    std::string line(rl_line_buffer, static_cast<std::size_t>(std::max(0, rl_point)));
    std::string word = text;
    Args before = split(line.substr(0, line.size() - word.size()));
    matches = g_session->completions(before, word);
    next = 0;
  }
  if (next >= matches.size()) return nullptr;
  return strdup(matches[next++].c_str());
}

// Ctrl-C at the prompt: the terminal sends SIGINT (ISIG is on in libedit's editing mode too) and
// libedit would read on. Its readline() binds keys only to inserting them, so the read it asked
// for returns what drops the line instead: ^E ^U (end of line, kill to its start) and Enter.
std::atomic<bool> g_dropped{false};

int read_key(FILE* in) {
  static const char drop[] = {'\x05', '\x15', '\n'};
  static std::size_t pending = sizeof drop;
  if (pending < sizeof drop) return drop[pending++];
  int fd = in ? fileno(in) : STDIN_FILENO;
  unsigned char c = 0;
  for (;;) {
    // The signal may go to another thread (the planner's), so the read is not relied on to be
    // interrupted: the flag is looked at every 100 ms.
    if (g_interrupted.exchange(false)) break;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    ssize_t n = ready > 0 ? ::read(fd, &c, 1) : -1;
    if (n == 1 && c != 3) return c;
    if (n == 1) break;  // ^C as a key
    if (n < 0 && errno == EINTR) continue;
    return EOF;
  }
  g_dropped = true;
  pending = 1;
  return drop[0];
}

char** complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;  // no file names when nothing matches
  return rl_completion_matches(text, next_match);
}

}  // namespace

int run_shell(const std::vector<std::string>& topo_files, bool strict, const std::string& history_file) {
  bool tty = isatty(STDIN_FILENO) != 0;
  Session s(std::cout);
  int first_error = 0, failures = 0, line_no = 0;
  auto one = [&](const std::string& line) -> bool {
    ++line_no;
    try {
      return s.execute(line);
    } catch (const std::exception& e) {
      ++failures;
      if (first_error == 0) first_error = exit_code_for(e);
      std::cout << std::flush;
      if (tty) std::cerr << "error: " << e.what() << "\n";
      else std::cerr << fmt::format("coll-plan shell: line {}: {}\n", line_no, e.what());
      return tty || !strict;
    }
  };
  for (const std::string& f : topo_files)
    if (!one((f.find('/') == std::string::npos && f.find('.') == std::string::npos ? "synth " : "load ") + f)) return first_error;
  if (!tty) {
    for (std::string line; std::getline(std::cin, line);)
      if (!one(line)) return first_error;
    return failures == 0 ? 0 : (strict ? first_error : 1);
  }
  g_session = &s;
  rl_attempted_completion_function = complete;
  // Ctrl-C: the handler only sets the flag; a command stops at its next check
  // (interruptible_search), and at the prompt read_key drops the line.
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_interrupted = true; };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  rl_catch_signals = 0;
  rl_getc_function = read_key;
  rl_initialize();
  rl_parse_and_bind("bind ^R em-inc-search-prev");  // readline's reverse search (libedit binds ^R to redisplay)
  if (!history_file.empty()) read_history(history_file.c_str());
  std::cout << "coll-plan shell: help lists the commands; Tab completes; history in " << history_file << "\n";
  for (;;) {
    char* raw = readline("coll-plan> ");
    if (!raw) break;                  // Ctrl-D
    if (g_dropped.exchange(false)) {  // Ctrl-C: the line was dropped, a new prompt
      std::free(raw);
      continue;
    }
    g_interrupted = false;
    std::string line = raw;
    std::free(raw);
    if (split(line).empty()) continue;
    add_history(line.c_str());
    if (!history_file.empty()) write_history(history_file.c_str());
    if (!one(line)) break;
  }
  std::cout << "\n";
  g_session = nullptr;
  return 0;
}

}  // namespace collkit::shell
