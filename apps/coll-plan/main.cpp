// coll-plan: generate, verify, simulate, sweep, export and show collective plans.
// Argument parsing and printing only; everything else is libs/plan.

#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/memory.h"
#include "collkit/core/size.h"
#include "collkit/exec/fidelity.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/export.h"
#include "collkit/plan/io.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/show.h"
#include "collkit/plan/synth_info.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/io.h"
#include "progress.h"
#include "shell.h"
#include "subcommands.h"

namespace plan = collkit::plan;
namespace topo = collkit::topo;
namespace exec = collkit::exec;
using collkit::cli::Progress;

namespace {

struct Options {
  std::string topo_file;
  std::string coll = "allreduce";
  std::string size = "1M";
  std::string algo = "auto";
  int nranks = 0;
  int root = 0;
  int elem_bytes = 1;
  int channels = 0;
  int pipeline = 0;
  bool bidirectional = false;
  std::string inter;
  bool explicit_programs = false;
  std::string output;
  std::string plan_file;
  std::string model = "queue";
  double per_message_us = 0;
  bool no_fold = false;
  std::string min_size = "1K", max_size = "1G", factor = "4";
  std::string json_out;
  std::string format = "msccl-xml";
  std::string proto = "Simple";
  int max_steps = plan::MscclOptions{}.max_steps;
  int max_channels = plan::MscclOptions{}.max_channels;
  int first_rank = 0;
  int rank_count = 1;
  std::string max_memory;  // verify: "" = what the host has available
  std::string results_file;  // compare
  std::string measured = "mean";         // compare: coll-run's mean or block-median
  std::vector<std::string> shell_topos;  // shell
  bool strict = false;
  std::string history;
};

plan::Collective collective(const std::string& s) {
  auto c = plan::parse_collective(s);
  if (!c)
    throw collkit::InputError("unknown collective \"" + s +
                              "\" (expected allreduce, reducescatter, allgather, alltoall, broadcast or reduce)");
  return *c;
}

plan::SimOptions sim_options(const Options& o) {
  plan::SimOptions s;
  if (o.model == "queue") s.model = plan::LinkModel::Queue;
  else if (o.model == "maxmin") s.model = plan::LinkModel::MaxMin;
  else throw collkit::InputError("unknown link model \"" + o.model + "\" (expected queue or maxmin)");
  s.per_message_us = o.per_message_us;
  s.fold_symmetry = !o.no_fold;
  plan::check_options(s);
  return s;
}

plan::AlgoOptions algo_options(const Options& o) {
  plan::AlgoOptions a;
  a.channels = o.channels;
  a.pipeline = o.pipeline;
  a.bidirectional = o.bidirectional;
  a.inter = o.inter;
  return a;
}

std::string us(double v) { return fmt::format("{:.2f}", v); }

void print_prediction(const plan::PlanInfo& i, std::ostream& out) {
  if (i.predicted_us <= 0) return;
  double algbw = plan::algbw_gbps(i.req.bytes, i.predicted_us);
  out << fmt::format("predicted {} us  algbw {:.2f} GB/s  busbw {:.2f} GB/s", us(i.predicted_us), algbw,
                     algbw * plan::busbw_factor(i.req.coll, i.req.nranks));
  if (i.bound_us > 0) out << fmt::format("  bound {} us  gap {:.1f}%", us(i.bound_us), 100.0 * (i.predicted_us - i.bound_us) / i.bound_us);
  out << "\n";
}

// A synthesised AlltoAll's flow LP optimum (param lp_us) beside the time and the cut bound printed
// before it: the best any plan of sends over the topology's routes can do (beyond 64 ranks the
// straight routes' rate, which reaches the cut bound). Its parameters read (and checked) as
// synth-info reads them. `file`: the plan's, for the error a malformed parameter gives.
void print_flow_lp(const plan::Plan& p, double time_us, const std::string& file, std::ostream& out = std::cout) {
  if (!p.info().params.count("lp_us")) return;
  plan::SynthInfo s = collkit::naming_file(file, [&] { return plan::synth_info(p, nullptr, {}); });
  if (!(s.lp_us > 0)) return;
  out << fmt::format("  flow {}optimum {} us ({} GB/s per pair: {})  gap {:.1f}%\n", s.lp_by_routes ? "" : "LP ", us(s.lp_us),
                     s.lp_gbps > 0 ? p.info().params.at("lp_gbps") : "?",
                     s.lp_by_routes ? "the straight routes, at the cut bound" : "routes through any NIC, host paths, relays",
                     100.0 * (time_us - s.lp_us) / s.lp_us);
}

// AllReduce's bound for plans shaped as a ReduceScatter then an AllGather, beside the bound that
// holds for every plan (a tree can beat the former).
void print_rs_ag(const plan::Bound& b, std::ostream& out = std::cout) {
  if (b.rs_ag_us > 0) out << fmt::format("  RS+AG-shaped plans only: bound {} us (2 x reduce-scatter)\n", us(b.rs_ag_us));
}

int run_generate(const Options& o) {
  collkit::check_output_not_input(o.output, {o.topo_file});
  std::unique_ptr<topo::Topology> t;
  if (!o.topo_file.empty()) t = std::make_unique<topo::Topology>(topo::load(o.topo_file));
  int nranks = o.nranks > 0 ? o.nranks : (t ? static_cast<int>(t->num_ranks()) : 0);
  if (nranks == 0) throw collkit::InputError("give --topo or --nranks");
  auto elem = static_cast<std::uint32_t>(o.elem_bytes);
  plan::Rounded rounded = plan::round_to_elements({collective(o.coll), collkit::parse_size_bytes(o.size), nranks, o.root, elem});
  // On stderr, so that a plan written to stdout stays a clean file.
  if (!rounded.note.empty()) std::cerr << "coll-plan: " << rounded.note << "\n";
  const plan::Request& req = rounded.req;
  std::string why;
  std::unique_ptr<plan::Plan> p;
  {
    Progress progress("auto");
    plan::SimOptions so = sim_options(o);
    so.progress = progress.ops();
    p = plan::plan_for(o.algo, req, t.get(), algo_options(o), so, progress.search(), &why);
  }
  std::unique_ptr<plan::Plan> out = std::move(p);
  if (o.explicit_programs) out = std::make_unique<plan::ExplicitPlan>(plan::materialize(*out));
  // The summary on stdout, or on stderr when stdout carries the plan.
  const bool to_stdout = o.output.empty() || o.output == "-";
  std::ostream& said = to_stdout ? std::cerr : std::cout;
  if (to_stdout) std::cout << plan::to_json(*out) << std::flush;
  else plan::save(*out, o.output);
  said << fmt::format("{} {} of {} on {} ranks: {} channel(s){}\n", out->info().algorithm, plan::to_string(req.coll),
                      collkit::format_size_bytes(req.bytes), nranks, out->info().channels, plan::weights_note(out->info()));
  print_prediction(out->info(), said);
  if (out->info().predicted_us > 0) print_flow_lp(*out, out->info().predicted_us, to_stdout ? "-" : o.output, said);
  if (t && out->info().predicted_us > 0) print_rs_ag(plan::lower_bound(req, *t), said);
  if (!why.empty()) said << "  auto chose " << why << "\n";
  collkit::app::wrote(o.output, std::string(o.explicit_programs ? "explicit " : "") + "collkit.plan/1");
  return 0;
}

int run_verify(const Options& o) {
  auto p = plan::load(o.plan_file);
  plan::VerifyResult r;
  {
    Progress progress("verify");  // its line is cleared when it goes, before the result
    std::uint64_t limit = o.max_memory.empty() ? 0 : collkit::parse_size_bytes(o.max_memory);
    if (!o.max_memory.empty() && limit == 0) throw collkit::InputError("--max-memory must be more than 0 bytes");
    r = plan::verify(*p, plan::ChunkStore::Auto, progress.ops(), limit);
  }
  if (!r.ok) throw collkit::InputError(o.plan_file + ": plan is wrong: " + r.error);
  std::string how = r.congruent_channels == 0
                        ? ""
                        : fmt::format("; channel 0 executed, channels 1-{} checked op for op to be its images", r.congruent_channels);
  std::cout << fmt::format("{}: verified {} of {} on {} ranks ({} ops, {} transfers{})\n", o.plan_file, plan::to_string(p->info().req.coll),
                           collkit::format_size_bytes(p->info().req.bytes), p->nranks(), r.ops, r.transfers, how);
  return 0;
}

int run_simulate(const Options& o) {
  auto p = plan::load(o.plan_file);
  topo::Topology t = topo::load(o.topo_file);
  plan::SimResult r;
  {
    Progress progress("simulate");
    plan::SimOptions so = sim_options(o);
    so.progress = progress.ops();
    r = collkit::naming_file(o.plan_file, [&] { return plan::simulate(*p, t, so); });
  }
  plan::Bound b = plan::lower_bound(p->info().req, t);
  std::cout << fmt::format("{} {} of {} on {} ranks, topology {}\n", p->info().algorithm, plan::to_string(p->info().req.coll),
                           collkit::format_size_bytes(p->info().req.bytes), p->nranks(), t.name);
  std::string folded = r.folded > 1 ? fmt::format(", each simulated thread standing for {}", r.folded) : "";
  std::cout << fmt::format("  time {} us  algbw {:.2f} GB/s  busbw {:.2f} GB/s  ({} events{})\n", us(r.time_us), r.algbw_gbps, r.busbw_gbps,
                           r.events, folded);
  std::cout << fmt::format("  bound {} us (bandwidth {} us, latency {} us)  gap {:.1f}%\n", us(b.time_us()), us(b.bandwidth_us),
                           us(b.latency_us), plan::gap_percent(r.time_us, b));
  print_flow_lp(*p, r.time_us, o.plan_file);
  print_rs_ag(b);
  if (!b.witness.empty()) std::cout << "  bound witness: " << b.witness << "\n";
  if (!r.busiest.empty()) {
    std::cout << "  busiest links:\n";
    for (const auto& l : r.busiest) {
      const auto& link = t.link(l.link);
      const auto& a = t.vertex(l.forward ? link.a : link.b).id;
      const auto& z = t.vertex(l.forward ? link.b : link.a).id;
      std::cout << fmt::format("    {} -> {} ({} {:.4g} GB/s): {} bytes, busy {} us\n", a, z, topo::to_string(link.type), link.bw_gbps,
                               l.bytes, us(l.busy_us));
    }
  }
  if (!r.critical_path.empty()) {
    std::cout << "  critical path (last ops):\n";
    std::size_t from = r.critical_path.size() > 8 ? r.critical_path.size() - 8 : 0;
    for (std::size_t i = from; i < r.critical_path.size(); ++i) std::cout << "    " << r.critical_path[i] << "\n";
  }
  return 0;
}

int run_sweep(const Options& o) {
  collkit::check_output_not_input(o.json_out, {o.topo_file});
  topo::Topology t = topo::load(o.topo_file);
  int nranks = o.nranks > 0 ? o.nranks : static_cast<int>(t.num_ranks());
  auto coll = collective(o.coll);
  std::vector<plan::SweepRow> rows;
  {
    Progress progress("sweep");
    rows = plan::sweep(coll, nranks, o.root, collkit::parse_size_bytes(o.min_size), collkit::parse_size_bytes(o.max_size),
                       collkit::parse_size_bytes(o.factor), t, algo_options(o), sim_options(o), progress.search());
  }
  if (rows.empty()) throw collkit::InputError("sweep: no size in range");
  // Header: one time column per algorithm, then the winner and its gap to the bound.
  // With --json - the JSON alone goes to stdout, the table to stderr.
  std::ostream& out = o.json_out == "-" ? std::cerr : std::cout;
  const auto& first = rows.front().eval.candidates;
  std::string header = fmt::format("{:>12}", "size");
  for (const auto& c : first) header += fmt::format(" {:>12}", c.algorithm);
  header += fmt::format(" {:>10} {:>10} {:>10} {:>7}", "best", "busbw", "bound", "gap%");
  out << "# " << plan::to_string(coll) << " on " << nranks << " ranks of " << t.name << ": predicted time (us) per algorithm\n";
  out << header << "\n";
  for (const auto& row : rows) {
    std::string line = fmt::format("{:>12}", collkit::format_size_bytes(row.bytes));
    for (const auto& c : row.eval.candidates) line += c.applicable ? fmt::format(" {:>12.2f}", c.time_us) : fmt::format(" {:>12}", "-");
    if (row.eval.best >= 0) {
      const auto& b = row.eval.candidates[static_cast<std::size_t>(row.eval.best)];
      line += fmt::format(" {:>10} {:>10.2f} {:>10.2f} {:>7.1f}", b.algorithm, b.busbw_gbps, row.eval.bound.time_us(),
                          plan::gap_percent(b.time_us, row.eval.bound));
      if (!b.knobs.empty()) line += "  " + b.knobs;
    }
    out << line << "\n";
  }
  if (!o.json_out.empty()) {
    collkit::write_file_atomic(o.json_out, plan::tuning_table_json(rows, coll, nranks, t));
    collkit::app::wrote(o.json_out, "tuning table, collkit.tuning/1");
  }
  return 0;
}

int run_export(const Options& o) {
  collkit::check_output_not_input(o.output, {o.plan_file});
  auto p = plan::load(o.plan_file);
  if (o.format != "msccl-xml") throw collkit::InputError("unknown export format \"" + o.format + "\" (expected msccl-xml)");
  plan::MscclOptions mo;
  mo.proto = o.proto;
  mo.max_steps = o.max_steps;
  mo.max_channels = o.max_channels;
  std::string xml = collkit::naming_file(o.plan_file, [&] { return plan::to_msccl_xml(*p, mo); });
  for (plan::ChannelPath c : p->info().channel_paths)
    if (c != plan::ChannelPath::Route) {
      std::cerr << "note: the plan's channel_paths (sends staged through host memory) are dropped: MSCCL takes its own path\n";
      break;
    }
  if (o.output.empty() || o.output == "-") std::cout << xml;
  else collkit::write_file_atomic(o.output, xml);
  collkit::app::wrote(o.output, "MSCCL XML");
  return 0;
}

int run_show(const Options& o) {
  auto p = plan::load(o.plan_file);
  std::cout << collkit::naming_file(o.plan_file, [&] { return plan::describe_plan(*p, o.first_rank, o.rank_count); });
  return 0;
}

int run_synth_info(const Options& o) {
  auto p = plan::load(o.plan_file);
  std::optional<topo::Topology> t;
  if (!o.topo_file.empty()) t = topo::load(o.topo_file);
  plan::SynthInfo info = collkit::naming_file(o.plan_file, [&] { return plan::synth_info(*p, t ? &*t : nullptr, sim_options(o)); });
  std::cout << plan::describe_synth_info(info);
  return 0;
}

}  // namespace

int run_compare(const Options& o) {
  std::optional<topo::Topology> t;
  if (!o.topo_file.empty()) t = topo::load(o.topo_file);
  if (o.measured != "mean" && o.measured != "block-median")
    throw collkit::InputError("unknown --measured \"" + o.measured + "\" (expected mean or block-median)");
  const bool block_median = o.measured == "block-median";
  exec::Fidelity f = exec::compare_results(o.results_file, collkit::read_file(o.results_file), t ? &*t : nullptr, sim_options(o),
                                           block_median ? exec::Measured::BlockMedian : exec::Measured::Mean);
  std::cout << fmt::format("# {}: measured out-of-place time ({}) vs {}; error = (predicted - measured) / measured\n", o.results_file,
                           block_median ? "median of the timed blocks" : "mean per iteration",
                           t ? "simulated on " + t->name : std::string("the prediction recorded with the run"));
  std::cout << fmt::format("# {:>13}  {:>10}  {:>9}  {:>10}  {:>13}  {:>14}  {:>8}\n", "collective", "algorithm", "type", "size",
                           "measured(us)", "predicted(us)", "error%");
  for (const exec::FidelityRow& r : f.rows)
    std::cout << fmt::format("  {:>13}  {:>10}  {:>9}  {:>10}  {:>13.2f}  {:>14.2f}  {:>+8.1f}\n", r.collective, r.algorithm, r.type,
                             collkit::format_size_bytes(r.bytes), r.measured_us, r.predicted_us, r.error_percent());
  const exec::FidelityRow& w = f.rows[f.worst_row];
  std::cout << fmt::format("# {} rows{}: median |error| {:.1f}%, worst {:.1f}% ({} {} {})\n", f.rows.size(),
                           f.skipped > 0 ? fmt::format(" ({} without a measurement or prediction left out)", f.skipped) : "",
                           f.median_abs_error_percent, f.worst_abs_error_percent, w.collective, w.algorithm,
                           collkit::format_size_bytes(w.bytes));
  return 0;
}

int run_shell(const Options& o) {
  std::string history = o.history;
  if (history.empty()) {
    const char* home = std::getenv("HOME");
    history = std::string(home && *home ? home : ".") + "/.coll-plan_history";
  }
  return collkit::shell::run_shell(o.shell_topos, o.strict, history);
}

int main(int argc, char** argv) {
  collkit::restart_on_huge_pages(argv);
  // Expanding a plan allocates and frees a program per rank (1.5 MB for a 1024-rank ring); glibc
  // would hand each back to the kernel and fault it in again, a sixth of verify's time. Keep them.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  CLI::App app{"coll-plan: topology-aware collective plans (collkit.plan/1): generate, verify, simulate, sweep, export, show", "coll-plan"};
  app.require_subcommand(1);
  Options o;
  auto add_algo_knobs = [&](CLI::App* s) {
    s->add_option("--channels", o.channels, "parallel channels (rings/trees); default: the algorithm's")->check(CLI::NonNegativeNumber);
    s->add_option("--pipeline", o.pipeline, "chunks per slice for pipelining; default: the algorithm's")->check(CLI::NonNegativeNumber);
    s->add_flag("--bidirectional", o.bidirectional, "ring: half the data each way");
    s->add_option(
        "--inter", o.inter,
        "hier: inter-host AllReduce algorithm (ring, rhd, rd, tree); default: ring up to 16 hosts, rhd beyond. "
        "synth: general (trees packed over the whole topology, at most 32 ranks) or symmetric (host 0's trees "
        "replicated on hosts alike; for Broadcast and Reduce, one root's trees by rails on hosts of one size) or torus (rank 0's trees "
        "translated on a torus of one GPU a host) "
        "or rails (AllGather, ReduceScatter, AllReduce: every rank's trees by rails on hosts of one size, at the LP's shares where "
        "links differ, up to 256 ranks); default: general up to 16 ranks, beyond symmetric where the hosts are alike (else general "
        "up to 32, rails beyond), torus beyond 32 on a torus");
  };
  auto add_sim_knobs = [&](CLI::App* s) {
    s->add_option("--model", o.model, "link sharing model: queue (fast) or maxmin (max-min fair)");
    s->add_option("--per-message-us", o.per_message_us, "software overhead per message")->check(CLI::NonNegativeNumber);
    s->add_flag("--no-fold", o.no_fold,
                "simulate every rank's threads, not one per orbit of the plan's symmetries (slower; a check of the folded result)");
  };

  auto* gen = app.add_subcommand("generate", "a plan for a collective, optionally for a topology (predicted and bounded)");
  gen->add_option("--topo", o.topo_file, "topology file (collkit.topology/1)");
  gen->add_option("--coll", o.coll, "allreduce | reducescatter | allgather | alltoall | broadcast | reduce");
  gen->add_option("--size", o.size, "bytes, nccl-tests' convention, K/M/G 1024-based (default 1M)");
  gen->add_option("--algo", o.algo, plan::algorithm_names(" | ") + " | auto (default; needs --topo)");
  gen->add_option("--nranks", o.nranks, "ranks (default: all of the topology's)")->check(CLI::PositiveNumber);
  gen->add_option("--root", o.root, "root rank of broadcast / reduce")->check(CLI::NonNegativeNumber);
  gen->add_option("--elem-bytes", o.elem_bytes, "bytes per element (the datatype's size): chunks split at whole elements (default 1)")
      ->check(CLI::Range(1, 65536));
  gen->add_flag("--explicit", o.explicit_programs, "write every rank's program instead of the compact form");
  gen->add_option("-o,--output", o.output, "plan file to write (default: stdout)");
  add_algo_knobs(gen);
  add_sim_knobs(gen);

  auto* ver = app.add_subcommand("verify", "prove a plan computes its collective for any input; non-zero exit with the reason");
  ver->add_option("plan", o.plan_file, "plan file")->required();
  ver->add_option("--max-memory", o.max_memory,
                  "refuse a plan whose execution would take more memory than this (K/M/G; default: what the host has available)");

  auto* sim =
      app.add_subcommand("simulate", "predict a plan's time on a topology: time, algbw, busbw, bound, busiest links, critical path");
  sim->add_option("plan", o.plan_file, "plan file")->required();
  sim->add_option("--topo", o.topo_file, "topology file")->required();
  add_sim_knobs(sim);

  auto* swp = app.add_subcommand("sweep", "every algorithm's predicted time per size, the winner and the gap to the bound");
  swp->add_option("--topo", o.topo_file, "topology file")->required();
  swp->add_option("--coll", o.coll, "collective");
  swp->add_option("--nranks", o.nranks, "ranks (default: all of the topology's)")->check(CLI::PositiveNumber);
  swp->add_option("--root", o.root, "root rank of broadcast / reduce")->check(CLI::NonNegativeNumber);
  swp->add_option("-b,--minbytes", o.min_size, "smallest size (default 1K)");
  swp->add_option("-e,--maxbytes", o.max_size, "largest size (default 1G)");
  swp->add_option("-f,--stepfactor", o.factor, "size multiplication factor (default 4)");
  swp->add_option("--json", o.json_out, "write the tuning table (collkit.tuning/1) to this file (\"-\": stdout, the table then on stderr)");
  add_algo_knobs(swp);
  add_sim_knobs(swp);

  auto* exp = app.add_subcommand("export", "write a plan in another runtime's format");
  exp->add_option("plan", o.plan_file, "plan file")->required();
  exp->add_option("--format", o.format, "msccl-xml (default)");
  exp->add_option("--proto", o.proto, "MSCCL protocol: Simple (default), LL128 or LL");
  exp->add_option(
         "--max-steps", o.max_steps,
         "steps per threadblock the MSCCL runtime takes: its MSCCL_MAX_NUM_STEPS (64 in msccl-executor-nccl, 256 in the first runtime)")
      ->check(CLI::Range(1, 1 << 20));
  exp->add_option("--max-channels", o.max_channels, "MSCCL channels the runtime takes: MAXCHANNELS of the NCCL it builds on")
      ->check(CLI::Range(1, 1 << 10));
  exp->add_option("-o,--output", o.output, "file to write (default: stdout)");

  auto* cmp = app.add_subcommand("compare", "the simulator's predictions against what coll-run measured: error per row, median and worst");
  cmp->add_option("--results", o.results_file, "coll-run's collkit.results/1 file (coll-run --json)")->required();
  cmp->add_option("--topo", o.topo_file, "simulate every row's plan on this topology (default: the prediction recorded with the run)");
  cmp->add_option("--measured", o.measured,
                  "mean (coll-run's time_us, default) or block-median (block_median_us: the median of the timed blocks, "
                  "what an undisturbed run takes)");

  add_sim_knobs(cmp);

  auto* show = app.add_subcommand("show", "a readable per-rank, per-step listing of a plan");
  show->add_option("plan", o.plan_file, "plan file")->required();
  show->add_option("--rank", o.first_rank, "first rank to list (default 0)")->check(CLI::NonNegativeNumber);
  show->add_option("--count", o.rank_count, "ranks to list (default 1)")->check(CLI::PositiveNumber);

  auto* shell = app.add_subcommand("shell", "the interactive planner: one session, what-if edits with undo; reads a script from stdin");
  shell->add_option("--topo", o.shell_topos, "topology files or node presets to start with (the last one stays loaded)");
  shell->add_flag("--strict", o.strict, "script mode: stop at the first failing command, with its exit code");
  shell->add_option("--history", o.history, "history file (default ~/.coll-plan_history)");
  auto* sinfo = app.add_subcommand("synth-info",
                                   "a synthesised plan's trees (k, depth, fan-out, chunks) or flow LP; with --topo its "
                                   "simulated time against the bound and the optimal rate");
  sinfo->add_option("plan", o.plan_file, "plan file (made by --algo synth)")->required();
  sinfo->add_option("--topo", o.topo_file, "simulate on this topology and compute the optimal rates");
  add_sim_knobs(sinfo);

  return collkit::app::run<Options>(app, argc, argv, o,
                                    {{gen, run_generate},
                                     {ver, run_verify},
                                     {sim, run_simulate},
                                     {swp, run_sweep},
                                     {exp, run_export},
                                     {show, run_show},
                                     {sinfo, run_synth_info},
                                     {cmp, run_compare},
                                     {shell, run_shell}});
}
