// coll-overlap: computation-communication overlap schedules for TP, SP, FSDP, EP and DP, with
// timelines. Argument parsing and printing only; everything else is libs/overlap.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/size.h"
#include "collkit/exec/calibrate.h"
#include "collkit/overlap/calibration.h"
#include "collkit/overlap/execute.h"
#include "collkit/overlap/overlap.h"
#include "collkit/overlap/report.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/gpu.h"
#include "collkit/topo/io.h"
#include "collkit/topo/synth.h"
#include "subcommands.h"

namespace ov = collkit::overlap;
namespace topo = collkit::topo;

namespace {

struct Options {
  std::string topo;  // empty: dgx-h100, or under run/calibrate the job's own hosts
  int nodes = 1;
  std::string fabric;
  std::string model;
  ov::Layout layout;
  std::string mode = "train";
  std::string strategy = "auto";
  int tp_chunks = 0, bucket_mb = 0, prefetch_depth = 0, moe_chunks = 0;
  double contention = ov::kDefaultContention;
  double comm_scale = 1.0;
  ov::Efficiency eff;
  std::string json_out, trace_out;
  bool ops = false;
  int scale = 1;
  std::string calibration;  // --calibration FILE
  // run / calibrate
  int iters = 3;
  double timeout_s = 120;
  std::string trace_predicted, calibration_out;
  bool run_calibrate = false;
  bool predict_only = false;   // run --predict-only: the prediction run makes, without a job
  std::string schedules;       // run --predict-only --schedules FILE: the schedules a recorded run measured
  std::string device = "cpu";  // run/calibrate --device
};

// --topo: a collkit.topology/1 file, else a node preset placed --nodes times (coll-topo synth).
topo::Topology topology(const Options& o) {
  std::string name = o.topo.empty() ? "dgx-h100" : o.topo;
  if (std::filesystem::is_regular_file(name)) return topo::load(name);
  if (name.ends_with(".json")) throw collkit::InputError(name + ": no such file");
  return topo::synth({name, o.nodes, o.fabric});
}

// Everything a prediction needs, built once (the models keep pointers to the topology and the
// calibration, so it stays where it was made).
struct Prediction {
  ov::Model model;
  topo::Topology t;
  ov::Layout l;
  std::optional<ov::Calibration> cal;
  std::unique_ptr<ov::ComputeModel> cm;
  std::unique_ptr<ov::CommModel> comm;
  ov::Workload w;
  ov::Request req;
  ov::Report rep;
};

// `job`: run and calibrate, on the job's own hosts (--topo, else discovered) with this CPU's
// peak, and one communication stream as the executor has.
// `measured`: a calibration just measured (run --calibrate) instead of --calibration's file.
// run --predict-only predicts as run would on a job of the layout's ranks on this host, without
// one: the host discovered with that many ranks (or --topo), this CPU's peak shared by them, one
// communication stream; with --schedules, the rows are the schedules a recorded run measured
// (its knobs, evaluated by this model) instead of the ones this model would choose.
ov::Report recorded_schedules(const Options& o, Prediction& p);

std::unique_ptr<Prediction> predict(const Options& o, collkit::exec::World* job, const ov::Calibration* measured = nullptr) {
  if (o.model.empty()) throw collkit::InputError("give --model (one of configs/models/, or a collkit.model/1 file)");
  if (o.scale < 1) throw collkit::InputError("--scale must be a positive integer, got " + std::to_string(o.scale));
  auto p = std::make_unique<Prediction>();
  p->model = ov::scale_model(ov::load_model(o.model), o.scale);
  p->l = ov::scale_layout(o.layout, o.scale);
  p->l.mode = ov::parse_mode(o.mode);
  if (measured) p->cal = *measured;
  else if (!o.calibration.empty()) p->cal = ov::load_calibration(o.calibration);
  const bool as_run = job != nullptr || o.predict_only;
  if (as_run) {
    const int ranks = job ? job->size() : p->l.gpus();
    if (std::string why = ov::cannot_execute(p->l, ranks); !why.empty()) throw collkit::InputError(why);
    if (p->cal && p->cal->ranks != ranks)
      throw collkit::InputError(o.calibration + ": calibrated on " + std::to_string(p->cal->ranks) + " ranks, this " +
                                (job ? "job has " : "layout has ") + std::to_string(ranks));
  }
  if (job) {
    p->t = collkit::exec::job_topology(*job, o.topo, o.timeout_s);
  } else if (o.predict_only && o.topo.empty()) {
    topo::DiscoverOptions d;
    d.ranks_per_host = p->l.gpus();
    p->t = topo::discover_local(d);
  } else {
    p->t = topology(o);
  }
  ov::check_layout(p->l, p->model, p->t);
  topo::GpuPeak peak;
  if (o.predict_only && ov::parse_device(o.device) == ov::Device::Cpu) {
    peak = ov::host_peak(p->l.gpus(), 20);
  } else if (job && ov::parse_device(o.device) == ov::Device::Cpu) {
    int here = 0;
    for (const auto& h : job->hosts()) here += h == job->host();
    // No datasheet gives a CPU rank's memory bandwidth; 20 GB/s is one DDR4/DDR5 channel's order.
    // Rank 0's reading for all: the clock in /proc/cpuinfo may move, and ranks predicting from
    // different peaks would choose different knobs and call different collectives.
    peak = ov::host_peak(here, 20);
    std::string got = job->broadcast(fmt::format("{:a} {}", peak.tflops, peak.label), o.timeout_s);
    peak.tflops = std::strtod(got.c_str(), nullptr);
    peak.label = got.substr(got.find(' ') + 1);
  } else {
    peak = topo::gpu_peak(p->t, 0, p->l.dtype);
  }
  p->cm = std::make_unique<ov::ComputeModel>(peak, o.eff, ov::dtype_bytes(p->l.dtype));
  p->comm = std::make_unique<ov::CommModel>(p->t, p->l, o.comm_scale);
  if (p->cal) {
    p->cm->set_calibration(&*p->cal);
    p->comm->set_calibration(&*p->cal);
  }
  p->w = ov::build_workload(p->model, p->l);

  ov::Request& req = p->req;
  req.contention = p->cal ? p->cal->compute_slowdown : o.contention;
  req.comm_contention = p->cal ? p->cal->comm_slowdown : 0;
  req.one_comm_stream = as_run;
  req.strategies.clear();
  std::stringstream list(o.strategy);
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty()) req.strategies.push_back(item);
  if (req.strategies.empty()) throw collkit::InputError("--strategy is empty");
  auto fix = [&](const char* name, int v) {
    if (v > 0) req.fixed.push_back({name, v});
  };
  fix("tp-decompose", o.tp_chunks);
  fix("dp-bucket", o.bucket_mb);
  fix("fsdp-prefetch", o.prefetch_depth);
  fix("moe-pipeline", o.moe_chunks);
  p->rep = o.schedules.empty() ? ov::run(p->w, *p->cm, *p->comm, req) : recorded_schedules(o, *p);
  return p;
}

ov::Report recorded_schedules(const Options& o, Prediction& p) {
  return ov::evaluate_schedules(p.w, *p.cm, *p.comm, ov::load_schedules(o.schedules), p.req);
}

std::string ms(double us) { return fmt::format("{:.3f}", us / 1000.0); }
// Percent with one decimal; a rounding residue of the order of 1e-12 prints as 0, not -0.0.
std::string percent(double fraction) { return fmt::format("{:.1f}%", std::abs(fraction) < 5e-4 ? 0.0 : 100 * fraction); }

std::string knobs(const ov::StrategyResult& r) {
  std::string s;
  for (const auto& c : r.choices) {
    std::string knob;
    for (const auto& i : ov::strategies())
      if (i.name == c.strategy) knob = i.knob;
    s += fmt::format("{}{}:{}={}", s.empty() ? "" : " ", c.strategy, knob, c.knob);
  }
  return s.empty() ? "-" : s;
}

void print_table(const ov::Report& rep, std::ostream& out) {
  out << fmt::format("\n{:<34} {:>11} {:>10} {:>11} {:>8} {:>8} {:>11} {:>8}  {}\n", "strategy", "compute_ms", "comm_ms", "exposed_ms",
                     "overlap", "slowdn", "step_ms", "speedup", "knobs");
  for (const auto& r : rep.rows)
    out << fmt::format("{:<34} {:>11} {:>10} {:>11} {:>8} {:>8.3f} {:>11} {:>7.3f}x  {}\n", r.name, ms(r.stats.compute_alone_us),
                       ms(r.stats.comm_us), ms(std::abs(r.stats.exposed_comm_us) < 5e-4 ? 0.0 : r.stats.exposed_comm_us),
                       percent(r.overlap_ratio), r.slowdown, ms(r.step_us), r.speedup, knobs(r));
}

int run_overlap(const Options& o) {
  for (const std::string& out : {o.json_out, o.trace_out}) collkit::check_output_not_input(out, {o.topo, o.model, o.calibration});
  auto pred = predict(o, nullptr);
  // What a person reads goes to stdout, or to stderr when stdout carries JSON (--json - / --trace -).
  std::ostream& out = o.json_out == "-" || o.trace_out == "-" ? std::cerr : std::cout;
  const ov::Model& model = pred->model;
  const topo::Topology& t = pred->t;
  const ov::Layout& l = pred->l;
  ov::ComputeModel& cm = *pred->cm;
  ov::CommModel& comm = *pred->comm;
  const ov::Workload& w = pred->w;
  const ov::Report& rep = pred->rep;
  const double contention = pred->req.contention;

  const auto& pk = cm.peak();
  out << fmt::format("{}: {:.2f} B parameters, {} layers on this stage; {} on {} ({} ranks)\n", model.name,
                     static_cast<double>(ov::parameter_count(model)) / 1e9, w.stage_layers, ov::to_string(l.mode), t.name, t.num_ranks());
  out << fmt::format("layout: tp {}{} dp {} zero {} ep {} pp {}, {} micro-batch(es) of {} x {} tokens, {}; GPU {} ({} TFLOP/s, {} GB/s)\n",
                     l.tp, l.sp ? " (sp)" : "", l.dp, l.zero, l.ep, l.pp, l.microbatches, l.micro_batch, l.seq_len, l.dtype, pk.label,
                     pk.tflops, pk.mem_bw_gbps);
  // The collectives of the step at full size, as libs/plan planned and simulated them.
  out << "\ncollectives (rank 0's groups, best plan simulated on the topology):\n";
  out << fmt::format("  {:<10} {:<14} {:>10} {:>6} {:>10} {:>12}\n", "group", "collective", "size", "ranks", "plan", "time_us");
  std::set<std::tuple<int, int, std::uint64_t>> seen;
  for (const auto& s : w.segments)
    for (const auto& c : s.comm) {
      ov::CommEstimate e = comm.estimate(c.group, c.coll, c.bytes);
      if (!seen.insert({static_cast<int>(e.group), static_cast<int>(e.coll), e.bytes}).second) continue;
      out << fmt::format("  {:<10} {:<14} {:>10} {:>6} {:>10} {:>12.2f}\n", ov::to_string(e.group), collkit::plan::to_string(e.coll),
                         collkit::format_size_bytes(e.bytes), e.nranks, e.algorithm, e.time_us);
    }
  if (o.ops) {
    out << fmt::format("\nlayer 0, first micro-batch, each op alone:\n  {:<18} {:<8} {:<14} {:>12} {:>12} {:>10}  {}\n", "op", "pass",
                       "kind", "GFLOP", "MB", "time_us", "bound / group");
    for (const auto& c : ov::layer_costs(w, cm, comm, 0))
      out << fmt::format("  {:<18} {:<8} {:<14} {:>12} {:>12.2f} {:>10.2f}  {}\n", c.name, c.backward ? "bwd" : "fwd", c.kind,
                         c.comm ? "-" : fmt::format("{:.2f}", c.flops / 1e9), c.bytes / 1e6, c.time_us,
                         c.comm ? c.group : (c.memory_bound ? "memory" : "compute"));
  }
  print_table(rep, out);
  const auto& last = rep.rows.back();
  out << fmt::format("\ncontention {:.3f} (compute slowdown under concurrent communication): {} {:.3f}x, {:.3f}x without it\n", contention,
                     last.name, last.speedup, last.speedup_no_contention);
  if (l.pp > 1) out << fmt::format("pipeline bubble: {} ms per step (in step_ms)\n", ms(last.bubble_us));
  for (const auto& s : rep.skipped) out << "skipped " << s << "\n";
  for (const auto& n : w.notes) out << "note: " << n << "\n";

  ov::RunContext ctx{&w, &t, &cm, &comm, contention};
  if (!o.json_out.empty()) {
    collkit::write_file_atomic(o.json_out, ov::to_json(rep, ctx));
    collkit::app::wrote(o.json_out, "collkit.overlap/1");
  }
  if (!o.trace_out.empty()) {
    collkit::write_file_atomic(o.trace_out, ov::to_trace(last, ctx));
    collkit::app::wrote(o.trace_out, "Chrome trace events of " + last.name + "; open in ui.perfetto.dev");
  }
  return 0;
}

// Checks that every rank can compute on --device (ov::check_device): false, with `code` set, when
// one cannot; rank 0 has printed why, the others stay silent.
bool device_ready(collkit::exec::World& world, const Options& o, int& code) {
  try {
    ov::check_device(world, ov::parse_device(o.device), o.timeout_s);
    return true;
  } catch (const collkit::exec::AgreedError& e) {
    if (world.rank() == 0) std::cerr << "coll-overlap: error: " << e.what() << "\n";
    code = e.code();
    return false;
  }
}

ov::ExecOptions exec_options(const Options& o) {
  ov::ExecOptions eo;
  eo.iters = o.iters;
  eo.timeout_s = o.timeout_s;
  eo.device = ov::parse_device(o.device);
  return eo;
}


// predict() for a job: its input errors (the layout against the job's ranks, a flag, a file) come
// before any collective and every rank meets them alike, so rank 0 alone prints the line and the
// others exit with its code (four ranks' lines interleaved on mpirun's stderr otherwise).
// nullptr: this rank exits quietly with `code`.
std::unique_ptr<Prediction> predict_in_job(const Options& o, collkit::exec::World& world, int& code) {
  try {
    return predict(o, &world);
  } catch (const collkit::InputError& e) {
    if (world.rank() == 0) throw;
    code = collkit::exit_code_for(e);
    return nullptr;
  }
}

// Percent error of a prediction against a measurement.
std::string error_pct(double predicted, double measured) {
  return measured > 0 ? fmt::format("{:+.1f}%", 100 * (predicted / measured - 1)) : "-";
}

int run_measured(const Options& o) {
  for (const std::string& out : {o.json_out, o.trace_out, o.trace_predicted, o.calibration_out})
    collkit::check_output_not_input(out, {o.topo, o.model, o.calibration});
  if (o.run_calibrate && !o.calibration.empty()) throw collkit::InputError("run: give --calibrate or --calibration FILE, not both");
  if (o.predict_only) {
    if (o.run_calibrate) throw collkit::InputError("run: --predict-only measures nothing: give --calibration FILE, not --calibrate");
    for (const std::string& flag : {o.trace_predicted, o.calibration_out})
      if (!flag.empty()) throw collkit::InputError("run: --predict-only writes --json and --trace only");
    return run_overlap(o);
  }
  if (!o.schedules.empty()) throw collkit::InputError("run: --schedules needs --predict-only");
  ov::ThreadedJob job;
  collkit::exec::World& world = job.world();
  if (int code = 0; !device_ready(world, o, code)) return code;
  int quiet = 0;
  auto pred = predict_in_job(o, world, quiet);
  if (!pred) return quiet;
  ov::Executor ex(world, pred->w, pred->t, exec_options(o));
  // --calibrate: measure the uncalibrated model's schedules first, then predict with that (the
  // executor keeps working on the first prediction's workload and topology: kept alive).
  std::unique_ptr<Prediction> uncalibrated;
  if (o.run_calibrate) {
    ov::Calibration cal = ex.calibrate(pred->rep.rows, ov::knob_schedules(pred->w, *pred->cm, *pred->comm, pred->req));
    if (!o.calibration_out.empty() && world.rank() == 0) {
      collkit::write_file_atomic(o.calibration_out, ov::to_json(cal));
      collkit::app::wrote(o.calibration_out, "collkit.overlap-calibration/1");
    }
    uncalibrated = std::move(pred);
    pred = predict(o, &world, &cal);
  }
  const ov::Report& rep = pred->rep;
  const bool root = world.rank() == 0;
  std::ostream& out =
      o.json_out == "-" || o.trace_out == "-" || o.trace_predicted == "-" || o.calibration_out == "-" ? std::cerr : std::cout;
  const auto& pk = pred->cm->peak();
  if (root) {
    out << fmt::format("{} (scale 1/{}): {} layers, hidden {}, ffn {}, {} x {} tokens; tp {}{} dp {} ep {} zero {} on {} ranks of {}\n",
                       pred->model.name, o.scale, pred->model.layers, pred->model.hidden, pred->model.ffn, pred->l.micro_batch,
                       pred->l.seq_len, pred->l.tp, pred->l.sp ? " (sp)" : "", pred->l.dp, pred->l.ep, pred->l.zero, world.size(),
                       pred->t.name);
    out << fmt::format(
        "model: {}; {}\n",
        pred->cal ? "calibrated by " + (o.run_calibrate ? std::string("this job (--calibrate)") : o.calibration) : "uncalibrated",
        pred->cal
            ? fmt::format(
                  "compute slowdown {:.3f}, communication slowdown {:.3f}, wait {:.0f} us a collective and {:.0f} us a further chunk, "
                  "samples at x{:.2f} (compute) and x{:.2f} (communication) to the serial step's level",
                  pred->cal->compute_slowdown, pred->cal->comm_slowdown, pred->cal->sync_us, pred->cal->chunk_sync_us,
                  pred->cal->compute_scale, pred->cal->comm_scale)
            : fmt::format("{} ({:.1f} GFLOP/s nominal), GEMM efficiency {}, contention {}, plans simulated on the topology", pk.label,
                          pk.tflops * 1e3, o.eff.gemm, o.contention));
    out << "executed with: " << ex.describe() << "\n";
    std::string split;
    for (const auto& [kind, list] : ex.groups()) {
      split += fmt::format("{}{}", split.empty() ? "" : "; ", ov::to_string(kind));
      for (const auto& g : list) split += fmt::format(" [{}]", fmt::join(g, ","));
    }
    if (!split.empty()) out << "groups (a communicator each): " << split << "\n";
    out << "\npredicted (one communication stream, as executed):";
    print_table(rep, out);
  }
  std::vector<ov::Measured> measured;
  for (const auto& row : rep.rows) measured.push_back(ex.run(row));
  if (!root) return 0;

  out << fmt::format("\nmeasured (rank 0, median of {} steps; compute and communication alone measured the same way):\n", o.iters);
  out << fmt::format("{:<34} {:>11} {:>10} {:>11} {:>8} {:>8} {:>11} {:>8} {:>11} {:>8}\n", "strategy", "compute_ms", "comm_ms",
                     "exposed_ms", "overlap", "slowdn", "step_ms", "speedup", "predicted", "error");
  std::uint64_t checked = 0, wrong = 0;
  int violations = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const ov::Measured& m = measured[i];
    const ov::StrategyResult& r = rep.rows[i];
    out << fmt::format("{:<34} {:>11} {:>10} {:>11} {:>8} {:>8.3f} {:>11} {:>7.3f}x {:>11} {:>8}\n", r.name, ms(m.compute_alone_us),
                       ms(m.comm_alone_us), ms(m.exposed_comm_us), percent(m.overlap_ratio), m.compute_slowdown, ms(m.step_us),
                       m.step_us > 0 ? measured[0].step_us / m.step_us : 0.0, ms(r.step_us), error_pct(r.step_us, m.step_us));
    checked += m.collectives_checked;
    wrong += m.wrong;
    violations += m.dependency_violations;
  }
  out << fmt::format("\ncollectives checked: {} runs over all ranks, {} wrong elements; tasks started before a dependency ended: {}\n",
                     checked, wrong, violations);
  ov::RunContext ctx{&pred->w, &pred->t, pred->cm.get(), pred->comm.get(), pred->req.contention};
  if (!o.json_out.empty()) {
    collkit::write_file_atomic(
        o.json_out,
        ov::measured_json(rep, ctx, measured, pred->cal ? &*pred->cal : nullptr,
                          o.run_calibrate ? (o.calibration_out.empty() ? "(this job)" : o.calibration_out) : o.calibration, ex.groups()));
    collkit::app::wrote(o.json_out, "collkit.overlap/1 with \"measured\"");
  }
  if (!o.trace_out.empty()) {
    collkit::write_file_atomic(o.trace_out, ov::measured_trace(rep.rows.back(), measured.back(), ctx));
    collkit::app::wrote(o.trace_out, "measured timeline of " + rep.rows.back().name);
  }
  if (!o.trace_predicted.empty()) {
    collkit::write_file_atomic(o.trace_predicted, ov::to_trace(rep.rows.back(), ctx));
    collkit::app::wrote(o.trace_predicted, "predicted timeline of " + rep.rows.back().name);
  }
  if (wrong > 0) throw collkit::Error(fmt::format("{} elements of the collectives' outputs were wrong", wrong));
  if (violations > 0) throw collkit::Error(fmt::format("{} tasks started before a dependency ended", violations));
  return 0;
}

int run_calibrate(const Options& o) {
  if (o.calibration_out.empty()) throw collkit::InputError("calibrate: give -o FILE for the calibration");
  collkit::check_output_not_input(o.calibration_out, {o.topo, o.model, o.calibration});
  ov::ThreadedJob job;
  collkit::exec::World& world = job.world();
  Options plain = o;
  plain.calibration.clear();  // measure what the schedules run, whatever an earlier file said
  if (int code = 0; !device_ready(world, o, code)) return code;
  int quiet = 0;
  auto pred = predict_in_job(plain, world, quiet);
  if (!pred) return quiet;
  ov::Executor ex(world, pred->w, pred->t, exec_options(o));
  ov::Calibration cal = ex.calibrate(pred->rep.rows, ov::knob_schedules(pred->w, *pred->cm, *pred->comm, pred->req));
  if (world.rank() != 0) return 0;
  std::ostream& out = o.calibration_out == "-" ? std::cerr : std::cout;
  out << fmt::format(
      "{}\n{} GEMM shapes, {} collectives; compute slowdown under communication {:.3f}, communication slowdown under compute {:.3f}; "
      "wait for the slowest rank {:.0f} us a collective, {:.0f} us a further chunk; samples at x{:.2f} (compute) and x{:.2f} "
      "(communication) to the serial step's level\n",
      cal.source, cal.gemms.size(), cal.collectives.size(), cal.compute_slowdown, cal.comm_slowdown, cal.sync_us, cal.chunk_sync_us,
      cal.compute_scale, cal.comm_scale);
  collkit::write_file_atomic(o.calibration_out, ov::to_json(cal));
  collkit::app::wrote(o.calibration_out, "collkit.overlap-calibration/1");
  return 0;
}

int run_models(const Options&) {
  std::cout << fmt::format("{:<16} {:>8} {:>14} {:>14} {:>7}\n", "model", "layers", "params", "published", "diff");
  for (const auto& name : ov::list_models()) {
    ov::Model m = ov::load_model(name);
    double p = static_cast<double>(ov::parameter_count(m));
    std::cout << fmt::format("{:<16} {:>8} {:>13.2f}B {:>13.2f}B {:>6.2f}%\n", m.name, m.layers, p / 1e9, m.published_params / 1e9,
                             100 * (p - m.published_params) / m.published_params);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coll-overlap: computation-communication overlap schedules (TP, SP, FSDP, EP, DP) with timelines", "coll-overlap"};
  app.require_subcommand(0, 1);
  Options o;
  app.fallthrough();  // the layout flags work after `run` and `calibrate` too
  app.add_option("--topo", o.topo, "topology file (collkit.topology/1) or node preset (default dgx-h100; run/calibrate: the job's hosts)");
  app.add_option("--nodes", o.nodes, "hosts of the preset (default 1)")->check(CLI::PositiveNumber);
  app.add_option("--fabric", o.fabric, "fabric joining the preset's hosts (coll-topo synth; default a rail-optimised fat-tree)");
  app.add_option("--model", o.model, "configs/models/ name (llama3-70b, ...) or a collkit.model/1 file");
  app.add_option("--tp", o.layout.tp, "tensor-parallel degree (default 1)");
  app.add_flag("--sp", o.layout.sp, "sequence parallelism: TP AllReduce becomes AllGather + ReduceScatter");
  app.add_option("--dp", o.layout.dp, "data-parallel degree (default 1)");
  app.add_option("--zero", o.layout.zero, "ZeRO stage: 0 DDP, 1|2 sharded optimizer, 3 FSDP (default 0)");
  app.add_option("--ep", o.layout.ep, "expert-parallel degree, divides --dp (default 1)");
  app.add_option("--pp", o.layout.pp, "pipeline stages (default 1)");
  app.add_option("--microbatches", o.layout.microbatches, "micro-batches per step (default 1)");
  app.add_option("--micro-batch", o.layout.micro_batch, "sequences per micro-batch (default 1)");
  app.add_option("--seq-len", o.layout.seq_len, "tokens per sequence; decode: the context length (default 4096)");
  app.add_option("--dtype", o.layout.dtype, "bf16 | fp16 | fp8 (default bf16)");
  app.add_option("--order", o.layout.order, "rank placement, innermost first (default tp,dp,pp: TP inside a host)");
  app.add_option("--mode", o.mode, "train | prefill | decode (default train)");
  app.add_option("--strategy", o.strategy, "none | dp-bucket | fsdp-prefetch | tp-decompose | moe-pipeline | auto, comma-separated to combine (default auto)");
  app.add_option("--tp-chunks", o.tp_chunks, "tp-decompose: chunks per GEMM (default: searched)")->check(CLI::PositiveNumber);
  app.add_option("--bucket-mb", o.bucket_mb, "dp-bucket: bucket size in MiB (default: searched)")->check(CLI::PositiveNumber);
  app.add_option("--prefetch-depth", o.prefetch_depth, "fsdp-prefetch: layers gathered ahead (default: searched)")->check(CLI::PositiveNumber);
  app.add_option("--moe-chunks", o.moe_chunks, "moe-pipeline: token chunks per MoE layer (default: searched)")->check(CLI::PositiveNumber);
  app.add_option("--contention", o.contention, "compute slowdown while communication runs (default 0.189, arXiv 2507.03114)")->check(CLI::NonNegativeNumber);
  app.add_option("--comm-scale", o.comm_scale, "multiply every collective's time (0 = free communication; default 1)")->check(CLI::NonNegativeNumber);
  app.add_option("--eff-gemm", o.eff.gemm, "GEMM efficiency, fraction of peak (default 0.70)");
  app.add_option("--eff-attn", o.eff.attention, "attention efficiency (default 0.55)");
  app.add_option("--eff-mem", o.eff.memory, "memory-bandwidth efficiency (default 0.80)");
  app.add_option("--kernel-us", o.eff.kernel_us, "fixed cost per kernel (default 2 us)")->check(CLI::NonNegativeNumber);
  app.add_flag("--ops", o.ops, "print layer 0's ops: FLOPs, bytes, roofline time, what bounds them, the collectives");
  app.add_option("--json", o.json_out, "write collkit.overlap/1 (\"-\" for stdout)");
  app.add_option("--trace", o.trace_out, "write the chosen schedule as Chrome trace-event JSON (Perfetto)");
  app.add_option("--scale", o.scale, "divide hidden size, head width, FFN, vocabulary, layers and sequence by this (default 1)");
  app.add_option("--calibration", o.calibration,
                 "collkit.overlap-calibration/1 from coll-overlap calibrate: measured GEMM and collective times and contention replace the "
                 "model's constants");
  auto* models = app.add_subcommand("models", "list configs/models/ with their parameter counts against the published ones");
  auto* run = app.add_subcommand("run",
                                 "under mpirun: execute each strategy's schedule (OpenBLAS or cuBLAS GEMMs, collectives through "
                                 "libs/exec's mpi or nccl backend on a communication thread) and print the measurement beside the "
                                 "prediction");
  run->add_option("--iters", o.iters, "timed steps per strategy and mode (default 3)")->check(CLI::PositiveNumber);
  run->add_option("--device", o.device,
                  "cpu: OpenBLAS GEMMs, the mpi backend (default); gpu: cuBLAS GEMMs on each rank's GPU, the nccl backend");
  run->add_option("--timeout", o.timeout_s, "seconds a collective may make no progress (default 120)")->check(CLI::PositiveNumber);
  run->add_flag("--calibrate", o.run_calibrate, "measure a calibration in this job first (as coll-overlap calibrate) and predict with it");
  run->add_option("--calibration-out", o.calibration_out, "with --calibrate: also write the calibration to this file");
  run->add_flag(
      "--predict-only", o.predict_only,
      "run nothing, no mpirun: print and write (--json) the prediction run would make on a job of the layout's ranks on this host "
      "(with --calibration FILE: that calibration's)");
  run->add_option(
      "--schedules", o.schedules,
      "with --predict-only: predict the schedules (rows and knobs) of this collkit.overlap/1 file, e.g. a run's --json, instead "
      "of choosing them: re-predicts a recorded run's measurements with this model");
  run->add_option("--trace-predicted", o.trace_predicted,
                  "write the predicted timeline of the last strategy (--trace gets the measured one)");
  auto* calibrate = app.add_subcommand("calibrate",
                                       "under mpirun: measure the schedules' GEMM shapes and collectives, and the slowdown of each while "
                                       "the other runs; write a calibration file");
  calibrate->add_option("-o,--output", o.calibration_out, "the calibration file to write (\"-\" for stdout)")->required();
  calibrate->add_option("--timeout", o.timeout_s, "seconds a collective may make no progress (default 120)")->check(CLI::PositiveNumber);
  calibrate->add_option("--device", o.device, "cpu (default) or gpu, as for run");
  return collkit::app::run<Options>(app, argc, argv, o, {{models, run_models}, {run, run_measured}, {calibrate, run_calibrate}},
                                    run_overlap);
}
