// coll-run: runs a plan (or plans on the fly) under mpirun on a backend, checks every element and
// compares with the backend's native collective, nccl-tests style. Argument parsing and printing
// only; everything else is libs/exec.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/size.h"
#include "collkit/exec/adapt.h"
#include "collkit/exec/autotune.h"
#include "collkit/exec/calibrate.h"
#include "collkit/exec/harness.h"
#include "collkit/plan/algorithm.h"
#include "collkit/plan/collective.h"
#include "collkit/plan/tuning.h"
#include "collkit/topo/io.h"
#include "subcommands.h"

namespace exec = collkit::exec;
namespace plan = collkit::plan;

namespace {

struct Flags {
  std::string plan_file, topo_file, backend = "mpi", json_out, csv_out;
  std::string colls = "allreduce", algos = "auto";
  std::string types = "float32", ops = "sum";
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes;
  std::uint64_t factor = 2;
  int iters = 20, warmup = 5, check = 1, root = 0, channels = 0, ranks = 0;
  double timeout_s = 60;
  bool no_baseline = false, no_discover = false;
  // calibrate
  std::string cal_topo, cal_out;
  bool quick = false;
  // faults (the main run and adapt)
  std::string inject;
  std::string probe_bytes = "1M";
  std::string detect = "iterations";
  int detect_iters = 12;
};

std::vector<plan::Collective> collectives(const std::string& s);
exec::RunOptions options(const Flags& f, const CLI::App& app);

// "coll-run: error: WHAT" in one write: lines of ranks that share a terminal (or mpirun's
// --tag-output) then never interleave within a line. Output still buffered goes first.
void say(const std::string& what) {
  std::cout << std::flush;
  std::cerr << "coll-run: error: " + what + "\n" << std::flush;
}

// An error every rank met alike: rank 0 prints it; the others wait (bounded) until it has, since a
// rank that exits non-zero first has mpirun end the job, rank 0 with it, before the line is out.
// Every rank has then said what it will say: the watchdog of in_job() stays silent (the launcher's
// SIGTERM that follows rank 0's exit is not news), and such a signal ends the rank with the code.
int agreed(const exec::World& world, double timeout_s, const std::string& what, int code) {
  if (world.rank() == 0) say(what);
  try {
    world.barrier_aside(std::min(timeout_s, 10.0), "waiting for rank 0 to print the error");
  } catch (const std::exception&) {  // rank 0 gone or the job ending: the code is what is left to give
  }
  exec::World::claim_line();
  exec::World::exit_on_stop(code);
  return code;
}

// Before MPI starts (a bad flag), the launcher's rank 0 prints; the others give it a moment first,
// as agreed() does.
int agreed_before_mpi(bool rank0, int code) {
  if (!rank0) std::this_thread::sleep_for(std::chrono::seconds(1));
  return code;
}

// "rank 1 on host h2" / "ranks 2 on host h2, 3 on host h2": the ranks a roll call did not hear.
std::string name_ranks(const std::vector<std::string>& hosts, const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    out += fmt::format("{}{} on host {}", i ? ", " : "", ranks[i], hosts[static_cast<std::size_t>(ranks[i])]);
  return out;
}

// "ranks 2 on host h2, 3 on host h2 are gone (their processes have exited), rank 1 on host h1 did
// not answer within 0.3 s (hung, stopped or unreachable)": the peers the liveness side channel
// (no MPI) found gone or silent, from its answers `seen` for `peers`; empty where all answered.
std::string gone_or_silent(const std::vector<std::string>& hosts, const std::vector<int>& peers, const std::vector<exec::Liveness>& seen) {
  std::vector<int> gone, silent;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    if (seen[i] == exec::Liveness::Gone) gone.push_back(peers[i]);
    if (seen[i] == exec::Liveness::Silent) silent.push_back(peers[i]);
  }
  std::string out;
  if (!gone.empty())
    out += fmt::format("{} {} gone ({} exited)", name_ranks(hosts, gone), gone.size() == 1 ? "is" : "are",
                       gone.size() == 1 ? "its process has" : "their processes have");
  if (!silent.empty())
    out +=
        fmt::format("{}{} did not answer within 0.3 s (hung, stopped or unreachable)", gone.empty() ? "" : ", ", name_ranks(hosts, silent));
  return out;
}

// Every rank but this one.
std::vector<int> peers_of(const exec::World& world) {
  std::vector<int> peers;
  for (int r = 0; r < world.size(); ++r)
    if (r != world.rank()) peers.push_back(r);
  return peers;
}

// "; ranks 2 on host h2, 3 on host h2 did not answer within 0.3 s (gone: ...)": the ranks an MPI
// roll call did not hear, grouped by what the liveness side channel (World::presence(), no MPI)
// says of them: exited, silent there too, alive there (stuck in MPI), or not asked.
std::string silent_ranks(const exec::World& world, const std::vector<int>& silent, double grace) {
  std::vector<exec::Liveness> seen = world.presence(silent, std::min(grace, 0.1));
  std::string out;
  for (auto [state, one, many] :
       {std::tuple{exec::Liveness::Gone, "gone: its process has exited", "gone: their processes have exited"},
        std::tuple{exec::Liveness::Silent, "silent without MPI too: hung, stopped or unreachable",
                   "silent without MPI too: hung, stopped or unreachable"},
        std::tuple{exec::Liveness::Alive, "alive without MPI: stuck in an MPI call", "alive without MPI: stuck in MPI calls"},
        std::tuple{exec::Liveness::Unknown, "dead, hung or unreachable", "dead, hung or unreachable"}}) {
    std::vector<int> these;
    for (std::size_t i = 0; i < silent.size(); ++i)
      if (seen[i] == state) these.push_back(silent[i]);
    if (!these.empty())
      out += fmt::format("; {} did not answer within {:g} s ({})", name_ranks(world.hosts(), these), grace, these.size() == 1 ? one : many);
  }
  return out;
}

// Runs `body(world)` on every rank of the job. Errors every rank meets alike (bad input, an
// unsupported request) are printed once, by rank 0, and every rank exits with the code. A rank
// that gives up on its peers (a wait without progress past --timeout; the launcher ending the job
// with SIGTERM because a rank died) calls the roll (every such rank does: survivors of one fault
// hear each other) and prints one line: what it waited on and the ranks that did not answer, with
// their hosts. After a timeout the rank then ends the job (MPI_Abort, bounded: a launcher out of
// reach does not keep it alive: 1 s); ended by the launcher, it exits. Every survivor has exited
// within --timeout plus about 1.5 s of a fault (docs/errors.md). A rank whose launcher is gone
// (mpirun killed) says so and exits: no orphans.
template <class Body>
int in_job(double timeout_s, Body&& body) {
  exec::World world;
  world.watch_launcher();
  const std::string me = fmt::format("rank {} on host {}", world.rank(), world.host());
  // The line and, where the roll found silent ranks, who they are: one write, so that the lines of
  // ranks sharing a terminal do not interleave.
  // Then a second round among those that answered: Open MPI's launcher kills every rank left as
  // soon as one exits after its SIGTERM, so none exits before all have printed (bounded).
  auto report = [&](const std::string& what, double grace) {
    std::string line = what;
    std::vector<int> silent;
    if (world.size() > 1) {
      silent = world.roll_call(grace);
      if (!silent.empty()) line += silent_ranks(world, silent, grace);
    }
    if (!exec::World::claim_line()) {  // the watchdog below speaks for this rank and ends it
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return;
    }
    say(line);
    if (world.size() > 1) world.roll_call(grace, 1, silent);
  };
  // Open MPI's TCP transport can keep a call to a dead peer from returning (on the testbed, a rank
  // on the other host hung posting its roll call to it until the launcher's SIGKILL): at the
  // launcher's SIGTERM this watchdog asks every peer over the liveness side channel (no MPI: the
  // ranks that exited refuse at once, those still here answer), and 0.45 s after the signal, if
  // the rank has not printed its line, prints one naming the ranks that are gone and exits 0.4 s
  // later (the other ranks' watchdogs print meanwhile: the first exit has Open MPI SIGKILL the
  // rest), before the SIGKILL that follows SIGTERM by a second.
  if (world.size() > 1) {
    std::thread([probe = world.presence_probe(), hosts = world.hosts(), peers = peers_of(world), me,
                 code = collkit::exit_code_for(exec::JobStopped("", false))] {
      while (!exec::World::stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      auto signalled = std::chrono::steady_clock::now();
      std::vector<exec::Liveness> seen = probe(peers, 0.3);
      std::string who = "no roll call: an MPI call did not return (a peer is gone)";
      if (std::none_of(seen.begin(), seen.end(), [](exec::Liveness l) { return l == exec::Liveness::Unknown; })) {
        std::string found = gone_or_silent(hosts, peers, seen);
        who = "an MPI call did not return; without MPI, " + (found.empty() ? std::string("every other rank answered") : found);
      }
      std::this_thread::sleep_until(signalled + std::chrono::milliseconds(450));
      if (!exec::World::claim_line()) return;
      std::signal(SIGPIPE, SIG_IGN);
      std::cerr << "coll-run: error: " + me + ": stopped by the launcher's signal; " + who + "\n" << std::flush;
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      std::_Exit(code);
    }).detach();
  }
  try {
    return body(world);
  } catch (const collkit::InputError& e) {
    return agreed(world, timeout_s, e.what(), collkit::exit_code_for(e));
  } catch (const collkit::UnsupportedError& e) {
    return agreed(world, timeout_s, e.what(), collkit::exit_code_for(e));
  } catch (const exec::AgreedError& e) {
    return agreed(world, timeout_s, e.what(), e.code());
  } catch (const exec::JobStopped& e) {
    std::signal(SIGPIPE, SIG_IGN);  // mpirun gone: its pipe may be too; the exit is what matters
    // The launcher kills what is left a second after its SIGTERM (Open MPI's odls_base_sigkill_timeout),
    // or as soon as one rank has exited: the roll is short.
    auto stopped = std::chrono::steady_clock::now();
    if (e.launcher_gone()) {
      if (exec::World::claim_line()) say(me + ": " + e.what());
    } else {
      report(me + ": " + e.what(), 0.3);
      // Not before a rank stuck in MPI has had its watchdog's line out (0.45 s after the signal):
      // this exit has Open MPI SIGKILL it.
      std::this_thread::sleep_until(stopped + std::chrono::milliseconds(550));
    }
    std::_Exit(collkit::exit_code_for(e));
  } catch (const collkit::TimeoutError& e) {
    // "rank 0: no progress ..." (every wait's message) becomes "rank 0 on host h1: no progress ...".
    std::string what = e.what(), mine = fmt::format("rank {}: ", world.rank());
    if (what.rfind(mine, 0) == 0) what.erase(0, mine.size());
    report(me + ": " + what, std::min(timeout_s, 0.5));
    exec::World::exit_on_stop(collkit::exit_code_for(e));
    // A moment more for the other survivors (the roll's second round already waited for those
    // that answered); a launcher already ending the job ends this rank with its code.
    if (world.size() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    world.abort(collkit::exit_code_for(e), 1.0);
  } catch (const collkit::SystemError& e) {
    // An MPI call that failed outright (not hung) because a peer died: Open MPI's TCP transport
    // answers a send to a closed socket with MPI_ERR_INTERN. MPI may be broken for good here, so
    // the peers are asked over the liveness side channel alone, and the line names those gone.
    std::string line = e.what();
    if (world.size() > 1 && line.rfind("MPI_", 0) == 0) {
      std::vector<int> peers = peers_of(world);
      std::string found = gone_or_silent(world.hosts(), peers, world.presence(peers, 0.3));
      line = me + ": " + line + (found.empty() ? "" : "; without MPI, " + found);
    }
    if (exec::World::claim_line()) say(line);
    world.abort(collkit::exit_code_for(e));
  } catch (const std::exception& e) {
    say(e.what());
    world.abort(collkit::exit_code_for(e));
  }
}

// coll-run adapt: inject (or not: the network as it is), find, re-plan, measure (rank 0 prints).
int run_adapt(const Flags& f, const CLI::App& sub) {
  if (!(f.timeout_s > 0)) throw collkit::InputError("--timeout: must be more than 0 seconds");
  return in_job(f.timeout_s, [&](exec::World& world) {
    exec::AdaptOptions opt;
    if (!f.inject.empty()) opt.injection = exec::parse_injection(f.inject, world.size());
    auto colls = collectives(f.colls);
    if (colls.size() != 1) throw collkit::InputError("adapt: one collective at a time");
    opt.coll = colls[0];
    std::uint64_t lo = collkit::parse_size_bytes(sub.count("-b") ? f.min_bytes : "1M");
    std::uint64_t hi = collkit::parse_size_bytes(sub.count("-e") ? f.max_bytes : "16M");
    if (hi < lo) throw collkit::InputError("-e is smaller than -b");
    if (f.factor < 2) throw collkit::InputError("-f: the factor must be 2 or more");
    for (std::uint64_t b = lo; b <= hi; b *= f.factor) {
      opt.sizes.push_back(b);
      if (b > hi / f.factor) break;
    }
    opt.iters = f.iters;
    opt.warmup = f.warmup;
    opt.timeout_s = f.timeout_s;
    opt.probe_bytes = collkit::parse_size_bytes(f.probe_bytes);
    if (opt.probe_bytes == 0 || opt.probe_bytes > (64u << 20)) throw collkit::InputError("--probe-bytes: 1 byte to 64M");
    if (f.detect != "iterations" && f.detect != "probe")
      throw collkit::InputError("--detect: expected iterations or probe, got \"" + f.detect + "\"");
    opt.probe = f.detect == "probe";
    opt.online_iters = f.detect_iters;
    exec::BackendOptions bo;
    bo.timeout_s = f.timeout_s;
    auto backend = exec::make_backend(bo, world);
    exec::adapt_run(opt, *backend, world, std::cout);
    return 0;
  });
}

// coll-run autotune: `auto` beside every applicable algorithm per size, measured; the fastest kept
// as a tuning table (rank 0 prints and writes).
int run_autotune(const Flags& f, const CLI::App& sub) {
  exec::RunOptions opt = options(f, sub);
  if (opt.collectives.size() != 1) throw collkit::InputError("autotune: one collective at a time");
  opt.algorithms = {"auto", "all"};
  opt.baseline = false;
  if (!sub.count("-c")) opt.check = false;  // tuning times candidates; -c 1 checks them too
  if (!sub.count("-n")) opt.iters = 5;
  if (!sub.count("-w")) opt.warmup = 3;
  if (!sub.count("-b") && !sub.count("-e")) {
    opt.min_bytes = 1 << 10;
    opt.max_bytes = 64 << 20;
    opt.factor = 4;
    opt.sizes_given = true;
  }
  return in_job(f.timeout_s, [&](exec::World& world) {
    exec::BackendOptions bo;
    bo.timeout_s = opt.timeout_s;
    auto backend = exec::make_backend(bo, world);
    std::ostringstream tables;  // the harness's nccl-tests tables: kept out of the summary
    exec::Results res = exec::run(opt, *backend, world, tables);
    if (world.rank() != 0) return 0;
    std::vector<exec::TunedSize> tuned = exec::tune_from(res);
    std::ostream& out = f.json_out == "-" ? std::cerr : std::cout;  // --json -: the JSON alone on stdout
    out << fmt::format("# autotune: {} on {} ranks, {} iterations per candidate; gain = the model's choice / the best measured\n",
                       plan::to_string(opt.collectives[0]), res.nranks, opt.iters);
    out << fmt::format("# {:>10}  {:>16}  {:>10}  {:>16}  {:>10}  {:>6}\n", "size", "model's choice", "time(us)", "best measured",
                       "time(us)", "gain");
    for (const exec::TunedSize& t : tuned)
      out << fmt::format("  {:>10}  {:>16}  {:>10.1f}  {:>16}  {:>10.1f}  {:>6.2f}\n", collkit::format_size_bytes(t.bytes), t.model_choice,
                         t.model_choice_us, t.best, t.best_us, t.gain());
    if (!f.json_out.empty()) {
      plan::TuningTable table = exec::tuning_table(tuned, opt.collectives[0], res.nranks, res.topology);
      table.iters = res.iters;
      table.warmup_iters = res.warmup_iters;
      collkit::write_file_atomic(f.json_out, plan::write_tuning_table(table));
      collkit::app::wrote(f.json_out, "tuning table, collkit.tuning/1");
    }
    return 0;
  });
}

// coll-run calibrate: measure, fit, write the calibrated topology (rank 0), print the fit.
int run_calibrate(const Flags& f) {
  if (!(f.timeout_s > 0)) throw collkit::InputError("--timeout: must be more than 0 seconds");
  return in_job(f.timeout_s, [&](exec::World& world) {
    collkit::topo::Topology t = exec::job_topology(world, f.cal_topo, f.timeout_s);
    exec::CalibrateOptions opt;
    opt.quick = f.quick;
    opt.timeout_s = f.timeout_s;
    exec::Measurements m = exec::measure(world, t, opt);
    if (world.rank() == 0) {
      std::string report;
      collkit::topo::Topology calibrated = exec::apply_calibration(t, m, &report);
      std::cerr << "# " << m.source << "\n" << report;
      if (f.cal_out.empty()) std::cout << collkit::topo::to_json(calibrated);
      else collkit::write_file_atomic(f.cal_out, collkit::topo::to_json(calibrated));
      collkit::app::wrote(f.cal_out, "calibrated topology, collkit.topology/1");
    }
    return 0;
  });
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (;;) {
    std::size_t c = s.find(',', at);
    out.push_back(s.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) return out;
    at = c + 1;
  }
}

std::vector<plan::Collective> collectives(const std::string& s) {
  if (s == "all")
    return {plan::Collective::AllReduce, plan::Collective::ReduceScatter, plan::Collective::AllGather,
            plan::Collective::AlltoAll,  plan::Collective::Broadcast,     plan::Collective::Reduce};
  std::vector<plan::Collective> out;
  for (const std::string& name : split(s)) {
    auto c = plan::parse_collective(name);
    if (!c)
      throw collkit::InputError("unknown collective \"" + name +
                                "\" (expected allreduce, reducescatter, allgather, alltoall, broadcast, reduce or all)");
    out.push_back(*c);
  }
  return out;
}

exec::RunOptions options(const Flags& f, const CLI::App& app) {
  exec::RunOptions o;
  o.plan_file = f.plan_file;
  o.topo_file = f.topo_file;
  o.discover = !f.no_discover;
  o.collectives = collectives(f.colls);
  o.algorithms = split(f.algos);
  o.types = exec::parse_datatypes(f.types);
  o.ops = exec::parse_redops(f.ops);
  o.min_bytes = collkit::parse_size_bytes(f.min_bytes);
  o.max_bytes = collkit::parse_size_bytes(f.max_bytes);
  o.sizes_given = app.count("-b") > 0 || app.count("-e") > 0;
  o.factor = f.factor;
  if (!f.step_bytes.empty()) {
    if (app.count("-f") > 0) throw collkit::InputError("-i and -f both set the step between sizes: give one");
    o.step_bytes = collkit::parse_size_bytes(f.step_bytes);
    if (o.step_bytes == 0) throw collkit::InputError("-i: the step must be at least 1 byte");
  }
  o.iters = f.iters;
  o.warmup = f.warmup;
  if (f.check < 0) throw collkit::InputError("-c: expected checked runs >= 0 (0: no check), got " + std::to_string(f.check));
  o.check = f.check;
  o.root = f.root;
  o.channels = f.channels;
  o.baseline = !f.no_baseline;
  o.timeout_s = f.timeout_s;
  if (!(f.timeout_s > 0)) throw collkit::InputError("--timeout: must be more than 0 seconds");
  if (!f.plan_file.empty() && (app.count("--coll") > 0 || app.count("--algo") > 0))
    throw collkit::InputError("--plan runs the plan file's collective and algorithm: drop --coll and --algo");
  collkit::check_output_not_input(f.json_out, {f.plan_file, f.topo_file});
  collkit::check_output_not_input(f.csv_out, {f.plan_file, f.topo_file});
  if (!f.csv_out.empty() && f.csv_out == f.json_out) throw collkit::InputError("--csv and --json name the same file " + f.csv_out);
  return o;
}

// Before MPI starts, only the launcher's rank 0 prints (a bad flag would print once per rank).
bool launcher_rank0() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* s = std::getenv(v); s && *s) return std::string(s) == "0";
  return true;
}

// coll-run itself: the nccl-tests-style benchmark of plans beside the native collective.
int run_benchmark(const Flags& f, const CLI::App& app) {
  exec::RunOptions opt = options(f, app);
  return in_job(f.timeout_s, [&](exec::World& world) {
    exec::BackendOptions bo;
    bo.name = f.backend;
    bo.timeout_s = opt.timeout_s;
    bo.ranks = f.ranks;
    auto backend = exec::make_backend(bo, world);
    if (!f.inject.empty()) backend->inject(exec::parse_injection(f.inject, world.size()));
    // --json - or --csv -: that alone on stdout, the tables on stderr.
    const bool json_stdout = f.json_out == "-" || f.csv_out == "-";
    if (!f.json_out.empty() && f.json_out != "-") {
      // An unwritable path fails now, on every rank alike, not after the whole benchmark; then
      // every row is kept as it is measured, so a run stopped by a failed peer still leaves what it
      // finished.
      std::string cannot;
      if (world.rank() == 0) {
        try {
          exec::Results nothing_yet;
          nothing_yet.complete = false;
          nothing_yet.iters = opt.iters;
          nothing_yet.warmup_iters = opt.warmup;
          collkit::write_file_atomic(f.json_out, exec::to_json(nothing_yet));
        } catch (const collkit::Error& e) {
          cannot = e.what();
        }
      }
      cannot = world.broadcast(cannot, opt.timeout_s);
      if (!cannot.empty()) throw collkit::InputError("--json: " + cannot);
    }
    if (world.rank() == 0 && !f.json_out.empty() && f.json_out != "-") {
      // At most once a second: a matrix of hundreds of tables would otherwise rewrite the file per row.
      opt.on_row = [&, last = 0.0](const exec::Results& so_far) mutable {
        if (exec::World::now() - last < 1.0) return;
        collkit::write_file_atomic(f.json_out, exec::to_json(so_far));
        last = exec::World::now();
      };
    }
    exec::Results res = exec::run(opt, *backend, world, json_stdout ? std::cerr : std::cout);
    if (world.rank() == 0 && !f.json_out.empty()) {
      collkit::write_file_atomic(f.json_out, exec::to_json(res));
      collkit::app::wrote(f.json_out, "collkit.results/1");
    }
    if (world.rank() == 0 && !f.csv_out.empty()) {
      collkit::write_file_atomic(f.csv_out, exec::to_csv(res));
      collkit::app::wrote(f.csv_out, "CSV");
    }
    if (res.total_wrong > 0) {
      return agreed(world, opt.timeout_s, std::to_string(res.total_wrong) + " wrong elements", 1);
    }
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coll-run: run a collective plan under mpirun, check it and compare it with the native collective", "coll-run"};
  Flags f;
  app.add_option("--plan", f.plan_file, "collkit.plan/1 file to run (default: plan on the fly with --coll/--algo)");
  app.add_option("--coll", f.colls, "collective(s) to plan: allreduce, reducescatter, allgather, alltoall, broadcast, reduce, all (comma list)");
  app.add_option("--algo", f.algos, "algorithm(s): " + collkit::plan::algorithm_names(", ") + ", auto, all (comma list)");
  app.add_option("--topo", f.topo_file, "topology to plan on and predict with (default: discover the job's hosts)");
  app.add_flag("--no-discover", f.no_discover, "without --topo, plan with no topology instead of discovering one");
  app.add_option("--backend", f.backend, "mpi, nccl, cuda or rdma");
  app.add_option("--ranks", f.ranks, "cuda backend: plan ranks to run in this one process (default: one per visible GPU)");
  app.add_option("--channels", f.channels, "channels for generated plans (0: the algorithm's default)");
  app.add_option("-b,--minbytes", f.min_bytes, "smallest size (K/M/G, 1024-based)");
  app.add_option("-e,--maxbytes", f.max_bytes, "largest size");
  app.add_option("-f,--stepfactor", f.factor, "multiply the size by this between rows");
  app.add_option("-i,--stepbytes", f.step_bytes, "add this many bytes between rows instead (K/M/G; not with -f)");
  app.add_option("-n,--iters", f.iters, "timed iterations per size");
  app.add_option("-w,--warmup_iters", f.warmup, "untimed iterations before timing");
  app.add_option("-c,--check", f.check, "checked runs per size, each on fresh inputs, every element checked (0: none)");
  app.add_option("-o,--op", f.ops, "reduction: sum, prod, min, max, avg, all (comma list)");
  app.add_option("-d,--datatype", f.types, "float32, float16, bfloat16, float64, int32, int8, uint8, all (comma list)");
  app.add_option("-r,--root", f.root, "root of broadcast and reduce");
  app.add_option("-J,--json", f.json_out, "write collkit.results/1 here (-J as in nccl-tests; \"-\": stdout, the tables then on stderr)");
  app.add_option("-F,--csv", f.csv_out, "write the rows as CSV here (\"-\": stdout, the tables then on stderr)");
  app.add_option("-T,--timeout", f.timeout_s, "seconds without progress before a rank gives up");
  app.add_flag("--no-baseline", f.no_baseline, "do not run the backend's native collective");
  app.add_option("--inject", f.inject,
                 "slow the plans' messages: slow-link=A-B:xF, slow-rank=R:xF (comma list; the native collective is not slowed)");
  auto* adp = app.add_subcommand("adapt",
                                 "inject faults (--inject), or take the network as it is, find slow links and ranks from the "
                                 "collective's own iterations (or a probe), re-plan around them (a ring order, the straggler plan); "
                                 "healthy, degraded and adapted times per size");
  adp->add_option("--inject", f.inject,
                  "the faults: slow-link=A-B:xF, slow-rank=R:xF (comma list); none: adapt to the links as they are (a slow link "
                  "of the real network)");
  adp->add_option("--coll", f.colls, "allreduce (default), allgather or reducescatter");
  adp->add_option("-b,--minbytes", f.min_bytes, "smallest size (default 1M)");
  adp->add_option("-e,--maxbytes", f.max_bytes, "largest size (default 16M)");
  adp->add_option("-f,--stepfactor", f.factor, "multiply the size by this between rows (default 2)");
  adp->add_option("-n,--iters", f.iters, "timed iterations per measurement (default 20)");
  adp->add_option("-w,--warmup_iters", f.warmup, "untimed iterations before each (default 5)");
  adp->add_option("--detect", f.detect,
                  "iterations (default): find the faults from the degraded ring's own iterations at every size, sends timed "
                  "per peer; probe: once, each pair in turn, before the sizes");
  adp->add_option("--detect-iters", f.detect_iters, "iterations of the detection run per size (default 12)");
  adp->add_option("--probe-bytes", f.probe_bytes, "bytes each pair exchanges in the probe (default 1M)");
  adp->add_option("--timeout", f.timeout_s, "seconds without progress before a rank gives up (default 60)");
  auto* tune = app.add_subcommand("autotune",
                                  "measure the model's auto choice beside every applicable algorithm per size; keep the fastest "
                                  "as a tuning table (collkit.tuning/1) and say what it gains");
  tune->add_option("--coll", f.colls, "the collective (default allreduce)");
  tune->add_option("--topo", f.topo_file, "topology to plan on (default: discover the job's hosts)");
  tune->add_option("-b,--minbytes", f.min_bytes, "smallest size (default 1K)");
  tune->add_option("-e,--maxbytes", f.max_bytes, "largest size (default 64M)");
  tune->add_option("-f,--stepfactor", f.factor, "multiply the size by this between rows (default 4 without -b/-e)");
  tune->add_option("-n,--iters", f.iters, "timed iterations per candidate (default 5)");
  tune->add_option("-w,--warmup_iters", f.warmup, "untimed iterations before each (default 3)");
  tune->add_option("-c,--check", f.check, "check every candidate's elements (1) or not (0, the default)");
  tune->add_option("-o,--output", f.json_out, "the tuning table to write");
  tune->add_option("--timeout", f.timeout_s, "seconds without progress before a rank gives up (default 60)");
  auto* cal = app.add_subcommand("calibrate",
                                 "measure message times per class of rank pairs, copy and reduction rates; fit the simulator's model "
                                 "and write the calibrated topology (docs/adapt.md)");
  cal->add_option("--topo", f.cal_topo, "topology of the job's ranks (default: discover the job's hosts)");
  cal->add_flag("--quick", f.quick, "3 sizes, 5 repetitions: seconds instead of a minute");
  cal->add_option("-o,--output", f.cal_out, "calibrated topology to write (default: stdout)");
  cal->add_option("--timeout", f.timeout_s, "seconds without progress before a rank gives up (default 60)");
  collkit::app::add_version(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (launcher_rank0()) return app.exit(e);
    return e.get_exit_code() == 0 ? 0 : agreed_before_mpi(false, e.get_exit_code());
  }

  // Before MPI starts, a bad flag is printed once, by the launcher's rank 0.
  auto start = [&](auto&& run) -> int {
    try {
      collkit::set_provenance(app.get_name(), argc, argv);  // before anything is written
      return run();
    } catch (const std::exception& e) {
      if (launcher_rank0()) say(e.what());
      return agreed_before_mpi(launcher_rank0(), collkit::exit_code_for(e));
    }
  };
  if (*tune) return start([&] { return run_autotune(f, *tune); });
  if (*adp) return start([&] { return run_adapt(f, *adp); });
  if (*cal) return start([&] { return run_calibrate(f); });
  return start([&] { return run_benchmark(f, app); });
}
