// coll-overlap run's executor (execute.h): two threads per rank, compute (the caller's) and
// communication, each taking its tasks in issue order and waiting for their dependencies. Issue
// order is a topological order (a task depends only on earlier ones), so the two never deadlock,
// and every rank issues the same collectives in the same order.

#include "collkit/overlap/execute.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "collkit/core/error.h"
#include "collkit/exec/backend.h"
#include "collkit/exec/pattern.h"
#include "collkit/plan/io.h"
#include "collkit/plan/planner.h"
#include "collkit/plan/verify.h"
#include "collkit/topo/subset.h"
#include "gemm.h"

namespace collkit::overlap {

std::string cannot_execute(const Layout& l, int ranks) {
  if (l.pp > 1) return "coll-overlap run executes one pipeline stage's schedule on every rank: --pp must be 1";
  if (l.gpus() != ranks)
    return "the layout needs " + std::to_string(l.gpus()) + " ranks (tp " + std::to_string(l.tp) + " x dp " + std::to_string(l.dp) +
           " x pp " + std::to_string(l.pp) + ") but the job has " + std::to_string(ranks) + " (mpirun -np)";
  return {};
}

namespace {

using Clock = std::chrono::steady_clock;
double since_us(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

enum class StepMode : std::uint8_t { Overlapped, ComputeOnly, CommOnly };

struct StepResult {
  std::vector<double> start, end;
  double step_us = 0;
  std::uint64_t checked = 0, wrong = 0;
};

// One collective of the schedule: its plan, backend (its own communicator, a duplicate of its
// group's) and input.
struct Comm {
  exec::World* group = nullptr;  // the rank's group of the task's kind (Impl::sub)
  std::unique_ptr<plan::Plan> plan;
  std::unique_ptr<exec::Backend> backend;
  exec::Job job;
  std::vector<std::byte> input, output;
};

using CommKey = std::tuple<int, Group, std::uint64_t>;  // collective, group, bytes

// The groups a step's collectives run in: every kind whose groups have more than one rank.
constexpr Group kRunGroups[] = {Group::Tp, Group::Ep, Group::Dp, Group::ExpertDp};

}  // namespace

struct Executor::Impl {
  exec::World& world;
  const Workload& w;
  const topo::Topology& topo;
  ExecOptions opt;
  // This rank's group of each kind that has more than one rank: a world of its own
  // (MPI_Comm_split), so that the TP groups' collectives and the DP groups' each run among their
  // own ranks, side by side. Before `comms`: destroyed after the backends that duplicated them.
  std::map<Group, std::unique_ptr<exec::World>> sub;
  std::map<Group, std::vector<std::vector<int>>> formed;  // every group of each kind, job ranks
  std::map<CommKey, Comm> comms;
  std::map<std::pair<Group, topo::Rank>, topo::Topology> groups;  // by kind and first rank
  std::unique_ptr<detail::GemmEngine> gemms;                       // operands sized to the largest shape seen

  Impl(exec::World& wo, const Workload& wl, const topo::Topology& t, const ExecOptions& o) : world(wo), w(wl), topo(t), opt(o) {}
  const char* backend_name() const { return opt.device == Device::Gpu ? "nccl" : "mpi"; }

  int group_size(Group g) const { return static_cast<int>(group_ranks(w.layout, g).size()); }
  bool is_comm(const Task& t) const { return t.stream != Stream::Compute; }
  // A collective of a one-rank group, or of nothing, moves no data: it completes at once.
  bool runs(const Task& t) const { return is_comm(t) ? group_size(t.group) > 1 && t.bytes > 0 : !t.op.name.empty(); }
  CommKey key(const Task& t) const { return {static_cast<int>(t.coll), t.group, t.bytes}; }

  // Every rank joins its group of each kind (a collective call: every rank, the same order).
  void split() {
    const auto me = static_cast<topo::Rank>(world.rank());
    for (Group g : kRunGroups) {
      // A dense model has no expert parameters, so no expert-DP collective.
      if (group_size(g) < 2 || (g == Group::ExpertDp && !w.model.moe)) continue;
      std::vector<topo::Rank> mine = group_ranks(w.layout, g, me);
      auto at = std::find(mine.begin(), mine.end(), me);
      if (at == mine.end()) throw Error("rank " + std::to_string(me) + " is not in its own " + std::string(to_string(g)) + " group");
      // Colour: the group's first rank; key: the place in the group (plan rank i is group rank i).
      sub[g] = world.split(static_cast<int>(mine.front()), static_cast<int>(at - mine.begin()));
      // The groups as MPI formed them (each member's rank in the job, in group order), gathered
      // from every rank: what the report shows, and held against the layout's.
      std::string members;
      for (const std::string& r : sub[g]->allgather(std::to_string(world.rank()), opt.timeout_s)) members += r + " ";
      std::vector<std::vector<int>>& all = formed[g];
      std::set<std::string> seen;
      for (const std::string& text : world.allgather(members, opt.timeout_s)) {
        if (!seen.insert(text).second) continue;
        std::vector<int> ranks;
        for (std::size_t at0 = 0, end = 0; (end = text.find(' ', at0)) != std::string::npos; at0 = end + 1)
          ranks.push_back(std::stoi(text.substr(at0, end - at0)));
        all.push_back(std::move(ranks));
      }
      std::sort(all.begin(), all.end());
      std::vector<topo::Rank> laid(mine.begin(), mine.end());
      std::vector<int> got;
      for (const std::vector<int>& grp : all)
        if (std::find(grp.begin(), grp.end(), world.rank()) != grp.end()) got = grp;
      if (!std::equal(got.begin(), got.end(), laid.begin(), laid.end(),
                      [](int x, topo::Rank y) { return static_cast<topo::Rank>(x) == y; }))
        throw Error("rank " + std::to_string(me) + ": MPI_Comm_split formed a " + std::string(to_string(g)) +
                    " group other than the layout's");
    }
  }

  // Rank 0 plans (the auto plan on each group's ranks of the topology: groups of one kind may sit
  // differently, one inside a host and another across) and proves each plan; every rank gets the
  // text of its own group's. Every rank calls this for the same tasks in the same order.
  Comm& comm(const Task& t) {
    auto it = comms.find(key(t));
    if (it != comms.end()) return it->second;
    const int n = group_size(t.group);
    plan::Request req = plan::round_to_elements(plan::Request{t.coll, t.bytes, n, 0, 2}).req;
    // The groups of this kind, by first rank, in rank order.
    std::vector<std::vector<topo::Rank>> instances;
    std::set<topo::Rank> firsts;
    for (int r = 0; r < world.size(); ++r) {
      std::vector<topo::Rank> g = group_ranks(w.layout, t.group, static_cast<topo::Rank>(r));
      if (firsts.insert(g.front()).second) instances.push_back(std::move(g));
    }
    const topo::Rank my_first = group_ranks(w.layout, t.group, static_cast<topo::Rank>(world.rank())).front();
    std::string text;
    for (const std::vector<topo::Rank>& ranks : instances) {
      std::string one;
      if (world.rank() == 0) {
        try {
          auto sub_topo = groups.find({t.group, ranks.front()});
          if (sub_topo == groups.end()) sub_topo = groups.emplace(std::pair{t.group, ranks.front()}, topo::with_ranks(topo, ranks)).first;
          auto p = plan::plan_for("auto", req, &sub_topo->second);
          plan::VerifyResult v = plan::verify(*p);
          one = v.ok ? "ok" + plan::to_json(*p) : "error" + ("plan " + p->info().algorithm + " is wrong: " + v.error);
        } catch (const std::exception& e) {
          one = std::string("error") + e.what();
        }
      }
      one = world.broadcast(one, opt.timeout_s);
      if (one.starts_with("error")) throw Error(t.name + ": " + one.substr(5));
      if (ranks.front() == my_first) text = std::move(one);
    }
    auto group = sub.find(t.group);
    if (group == sub.end()) throw Error(t.name + ": no " + std::string(to_string(t.group)) + " group was formed for it");
    Comm cm;
    cm.group = group->second.get();
    cm.plan = plan::from_json(text.substr(2), "rank 0's plan");
    cm.job = exec::Job{cm.plan->info().req, exec::DataType::BFloat16, exec::RedOp::Sum};
    cm.backend = exec::make_backend({backend_name(), opt.timeout_s, 0}, *cm.group);
    exec::Setup s;
    s.plan = cm.plan.get();
    s.job = cm.job;
    s.timeout_s = opt.timeout_s;
    cm.backend->setup(s);
    cm.input.resize(exec::input_count(cm.job) * 2);
    cm.output.resize(exec::output_count(cm.job) * 2);
    exec::fill_input(cm.job, cm.group->rank(), cm.input.data());
    cm.backend->write_input(0, exec::Placement::OutOfPlace, cm.input);
    return comms.emplace(key(t), std::move(cm)).first->second;
  }

  void prepare(const std::vector<Task>& tasks) {
    std::size_t am = 1, bm = 1, cm = 1;
    for (const Task& t : tasks) {
      if (!runs(t)) continue;
      if (is_comm(t)) {
        comm(t);
        continue;
      }
      GemmShape s = exec_shape(t.op, t.fraction);
      am = std::max(am, static_cast<std::size_t>(s.m * s.k));
      bm = std::max(bm, static_cast<std::size_t>(s.k * s.n));
      cm = std::max(cm, static_cast<std::size_t>(s.m * s.n));
    }
    gemms->reserve(am, bm, cm);
  }

  void gemm(const GemmShape& s) { gemms->run(s); }

  // One run of a collective; with `check`, on a fresh input and every element of the output checked.
  std::uint64_t collective(Comm& cm, bool check) {
    if (check) cm.backend->write_input(0, exec::Placement::OutOfPlace, cm.input);
    cm.backend->run(exec::Subject::Plan, exec::Placement::OutOfPlace);
    cm.backend->synchronize();  // the nccl backend queues the run on its stream: the step times it done
    if (!check) return 0;
    cm.backend->read_output(0, exec::Placement::OutOfPlace, exec::Subject::Plan, cm.output);
    return exec::count_wrong(cm.job, cm.group->rank(), cm.output.data());
  }

  StepResult step(const std::vector<Task>& tasks, StepMode mode, bool check) {
    const std::size_t n = tasks.size();
    StepResult r;
    r.start.assign(n, 0);
    r.end.assign(n, 0);
    std::vector<std::atomic<int>> done(n);
    std::atomic<int> go{0};
    std::exception_ptr failed;
    Clock::time_point t0;
    std::vector<Comm*> comm_of(n, nullptr);
    for (std::size_t i = 0; i < n; ++i)
      if (is_comm(tasks[i]) && runs(tasks[i])) comm_of[i] = &comm(tasks[i]);

    auto side = [&](bool comm_side) {
      for (std::size_t i = 0; i < n; ++i) {
        const Task& t = tasks[i];
        if (is_comm(t) != comm_side) continue;
        for (int d : t.deps)
          while (done[static_cast<std::size_t>(d)].load(std::memory_order_acquire) == 0)
            done[static_cast<std::size_t>(d)].wait(0, std::memory_order_acquire);
        r.start[i] = since_us(t0);
        bool execute = runs(t) && !(mode == StepMode::ComputeOnly && comm_side) && !(mode == StepMode::CommOnly && !comm_side);
        if (execute && comm_side) {
          r.wrong += collective(*comm_of[i], check);
          r.checked += check ? 1 : 0;
        } else if (execute) {
          gemm(exec_shape(t.op, t.fraction));
        }
        r.end[i] = since_us(t0);
        done[i].store(1, std::memory_order_release);
        done[i].notify_all();
      }
    };
    std::thread comm_thread([&] {
      go.wait(0, std::memory_order_acquire);
      if (go.load(std::memory_order_acquire) == 2) return;  // the step was called off before it began
      try {
        side(true);
      } catch (...) {
        failed = std::current_exception();
        for (auto& d : done) {  // let the compute side finish; the error is raised after the join
          d.store(1, std::memory_order_release);
          d.notify_all();
        }
      }
    });
    try {
      world.barrier(opt.timeout_s, "the start of a step");
    } catch (...) {
      go.store(2), go.notify_all();
      comm_thread.join();
      throw;
    }
    t0 = Clock::now();
    go.store(1, std::memory_order_release);
    go.notify_all();
    side(false);
    comm_thread.join();
    if (failed) std::rethrow_exception(failed);
    for (double e : r.end) r.step_us = std::max(r.step_us, e);
    return r;
  }
};

Executor::Executor(exec::World& world, const Workload& w, const topo::Topology& topo, const ExecOptions& opt)
    : impl_(std::make_unique<Impl>(world, w, topo, opt)) {
  if (std::string why = cannot_execute(w.layout, world.size()); !why.empty()) throw InputError(why);
  if (opt.iters < 1) throw InputError("--iters must be at least 1, got " + std::to_string(opt.iters));
  impl_->split();
  impl_->gemms = opt.device == Device::Gpu ? detail::make_gpu_gemm(world.local_rank()) : detail::make_cpu_gemm();
}

void check_device(exec::World& world, Device device, double timeout_s) {
  // Every rank learns whether every rank can compute where asked before anything else: a rank
  // without a GPU stops the job with one line (rank 0's) instead of leaving the others waiting.
  std::string why;
  int code = 0;
  try {
    if (device == Device::Gpu) (void)detail::make_gpu_gemm(world.local_rank());
  } catch (const std::exception& e) {
    why = e.what();
    code = exit_code_for(e);
  }
  std::vector<std::string> all = world.allgather(why.empty() ? std::string() : std::to_string(code) + " " + why, timeout_s);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) {
      std::size_t space = all[r].find(' ');
      std::string text = all[r].substr(space + 1);
      throw exec::AgreedError(all.size() > 1 ? "rank " + std::to_string(r) + " (" + world.hosts()[r] + "): " + text : text,
                              std::stoi(all[r].substr(0, space)));
    }
}

Executor::~Executor() = default;

std::string Executor::describe() const {
  return impl_->gemms->describe() + "; collectives on libs/exec's " + impl_->backend_name() + " backend";
}

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device::Cpu;
  if (s == "gpu") return Device::Gpu;
  throw InputError("--device must be cpu or gpu, got '" + s + "'");
}

const std::map<Group, std::vector<std::vector<int>>>& Executor::groups() const { return impl_->formed; }

namespace {

// Time when both a compute and a communication interval ran: the two lists are each disjoint
// (one thread each), so one merge pass.
double intersection(std::vector<std::pair<double, double>> x, std::vector<std::pair<double, double>> y) {
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  double total = 0;
  for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    double lo = std::max(x[i].first, y[j].first), hi = std::min(x[i].second, y[j].second);
    if (hi > lo) total += hi - lo;
    if (x[i].second < y[j].second) ++i;
    else ++j;
  }
  return total;
}

}  // namespace

Measured Executor::run(const StrategyResult& row) {
  Impl& im = *impl_;
  const std::vector<Task>& tasks = row.tasks;
  // Every rank predicts its schedule itself; ranks whose schedules differed would call different
  // collectives and wait for each other forever. What each calls, compared with rank 0's first.
  std::string mine = row.name;
  for (const Task& t : tasks)
    if (im.is_comm(t) && im.runs(t)) mine += " " + std::to_string(static_cast<int>(t.coll)) + ":" + std::to_string(t.bytes);
  const bool same = im.world.broadcast(mine, im.opt.timeout_s) == mine;
  if (im.world.sum(same ? 0 : 1, im.opt.timeout_s) != 0)
    throw Error("the ranks' schedules for " + row.name + " differ (each rank predicts its own): not run");
  im.prepare(tasks);
  Measured m;
  m.iters = im.opt.iters;
  m.warmup_iters = 1;
  StepResult checked = im.step(tasks, StepMode::Overlapped, true);
  std::vector<StepResult> over;
  std::vector<double> max_steps, compute_alone, comm_alone;
  auto sum = [&](const StepResult& r, bool comm_side) {
    double s = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (im.is_comm(tasks[i]) == comm_side) s += r.end[i] - r.start[i];
    return s;
  };
  for (int it = 0; it < im.opt.iters; ++it) {
    over.push_back(im.step(tasks, StepMode::Overlapped, false));
    max_steps.push_back(im.world.max(over.back().step_us, im.opt.timeout_s));
    compute_alone.push_back(sum(im.step(tasks, StepMode::ComputeOnly, false), false));
    comm_alone.push_back(sum(im.step(tasks, StepMode::CommOnly, false), true));
  }
  // The last timed run of each collective, checked too.
  std::uint64_t wrong = checked.wrong, count = checked.checked;
  for (auto& [k, cm] : im.comms) {
    cm.backend->read_output(0, exec::Placement::OutOfPlace, exec::Subject::Plan, cm.output);
    wrong += exec::count_wrong(cm.job, cm.group->rank(), cm.output.data());
    ++count;
  }
  m.wrong = im.world.sum(wrong, im.opt.timeout_s);
  m.collectives_checked = im.world.sum(count, im.opt.timeout_s);

  std::vector<std::size_t> order(over.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return over[x].step_us < over[y].step_us; });
  const std::size_t mid = order[order.size() / 2];
  const StepResult& r = over[mid];
  m.tasks = tasks;
  std::vector<std::pair<double, double>> comp, comm;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    Task& t = m.tasks[i];
    t.start_us = r.start[i];
    t.end_us = r.end[i];
    for (int d : t.deps)
      if (r.end[static_cast<std::size_t>(d)] > t.start_us) ++m.dependency_violations;
    if (t.end_us <= t.start_us) continue;
    if (im.is_comm(t)) {
      m.comm_actual_us += t.end_us - t.start_us;
      comm.emplace_back(t.start_us, t.end_us);
    } else {
      m.compute_actual_us += t.end_us - t.start_us;
      comp.emplace_back(t.start_us, t.end_us);
    }
  }
  m.step_us = r.step_us;
  m.step_min_us = over[order.front()].step_us;
  m.step_max_us = over[order.back()].step_us;
  m.step_max_rank_us = max_steps[mid];
  m.compute_alone_us = median(compute_alone);
  m.comm_alone_us = median(comm_alone);
  m.exposed_comm_us = std::max(0.0, m.step_us - m.compute_actual_us);
  m.hidden_comm_us = intersection(comp, comm);
  m.overlap_ratio = m.comm_actual_us > 0 ? m.hidden_comm_us / m.comm_actual_us : 0;
  m.compute_slowdown = m.compute_alone_us > 0 ? m.compute_actual_us / m.compute_alone_us : 1;
  return m;
}

Calibration Executor::calibrate(const std::vector<StrategyResult>& rows, const std::vector<StrategyResult>& more) {
  Impl& im = *impl_;
  exec::World& world = im.world;
  const double to = im.opt.timeout_s;
  Calibration cal;
  cal.ranks = world.size();
  std::set<GemmShape> shapes;
  std::map<GemmShape, double> weight;  // the last row's compute time per shape, by the model
  for (const auto* list : {&rows, &more})
    for (const StrategyResult& row : *list) {
      im.prepare(row.tasks);
      for (const Task& t : row.tasks)
        if (!im.is_comm(t) && im.runs(t)) {
          shapes.insert(exec_shape(t.op, t.fraction));
          if (&row == &rows.back()) weight[exec_shape(t.op, t.fraction)] += t.work_us;
        }
    }
  // Each GEMM shape (one product: repetitions scale it) with every rank computing at once, as in
  // a step. The shapes take turns, round after round, so that each meets the same share of
  // whatever else the host runs (measured one after another, the same shape once came out at
  // 46 and 142 GFLOP/s on this loaded host); each keeps its median call.
  std::map<GemmShape, std::vector<double>> gemm_calls;
  for (GemmShape s : shapes) {
    s.reps = 1;
    gemm_calls[s];
  }
  double round_us = 0;
  for (auto& [s, v] : gemm_calls) {
    auto t0 = Clock::now();
    im.gemm(s);
    round_us += since_us(t0);
  }
  // About 0.3 s in all, 5 to 30 rounds, the same number on every rank.
  const int rounds = static_cast<int>(world.max(std::clamp(std::ceil(300000.0 / std::max(round_us, 1.0)), 5.0, 30.0), to));
  world.barrier(to, "GEMM calibration");
  for (int r = 0; r < rounds; ++r)
    for (auto& [s, v] : gemm_calls) {
      auto t0 = Clock::now();
      im.gemm(s);
      v.push_back(since_us(t0));
    }
  std::map<GemmShape, double> gemm_us;
  for (const GemmShape& s : shapes) {
    GemmShape one = s;
    one.reps = 1;
    gemm_us[s] = median(gemm_calls[one]) * s.reps;
  }
  for (const auto& [s, v] : gemm_calls) cal.gemms.push_back({s, median(v)});
  // The GEMM the last schedule spends most time in (the model's figures) stands for compute below.
  std::optional<GemmShape> main_gemm;
  if (!weight.empty())
    main_gemm = std::max_element(weight.begin(), weight.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
  // Each collective alone, back to back (REFERENCE Part C 1.2's T_comm). Timing each right after
  // a GEMM instead, so that the ranks arrive as unevenly as in a step, was tried: on this loaded
  // 2-core host it charged every collective the descheduling of a peer during its GEMM, and
  // predicted the serial step at 2.7x its measured time.
  // They take turns round after round too, as the GEMMs do.
  std::map<CommKey, double> comm_us;
  std::map<CommKey, std::vector<double>> runs_of;
  world.barrier(to, "collective calibration");
  double comm_round_us = 0;
  for (auto& [k, cm] : im.comms) {
    auto t0 = Clock::now();
    im.collective(cm, false);
    comm_round_us += since_us(t0);
  }
  const int comm_rounds = static_cast<int>(world.max(std::clamp(std::ceil(100000.0 / std::max(comm_round_us, 1.0)), 5.0, 50.0), to));
  for (int r = 0; r < comm_rounds; ++r)
    for (auto& [k, cm] : im.comms) {
      auto t0 = Clock::now();
      im.collective(cm, false);
      runs_of[k].push_back(since_us(t0));
    }
  // One sample per collective, group kind and size: a TP and a DP AllGather of one size on
  // TP 2 x DP 2 run on different communicators and ranks, and the model asks for each by group.
  for (auto& [k, v] : runs_of) {
    comm_us[k] = median(v);
    cal.collectives.push_back(
        {static_cast<plan::Collective>(std::get<0>(k)), im.group_size(std::get<1>(k)), std::get<2>(k), comm_us[k], std::get<1>(k)});
  }
  // Both at once: the collective that moves the most bytes back to back on the communication
  // thread while the compute thread runs the GEMM the schedule spends most time in, until the
  // collectives are done. The GEMM calls that ended before then, and every collective, against
  // their times alone.
  if (!im.comms.empty() && main_gemm) {
    auto big = std::max_element(im.comms.begin(), im.comms.end(),
                                [](const auto& x, const auto& y) { return std::get<2>(x.first) < std::get<2>(y.first); });
    const GemmShape s = *main_gemm;
    const double alone_comm = comm_us[big->first], alone_gemm = gemm_us[s];
    // About 50 ms of collectives alone, and at least 10 GEMM calls' worth; at most 50 runs, since
    // beside compute on a loaded host one can take a hundred times longer.
    int runs = static_cast<int>(world.max(std::clamp(std::ceil(std::max(50000.0, 10 * alone_gemm) / alone_comm), 5.0, 50.0), to));
    // Three windows, the median of each figure: one window alone swung from 0 to 8x.
    std::vector<double> compute_slow, comm_slow;
    for (int window = 0; window < 3; ++window) {
      std::atomic<int> go{0}, finished{0};
      std::exception_ptr failed;
      double comm_total = 0;
      std::thread t([&] {
        go.wait(0);
        if (go.load() == 2) return;  // called off before it began
        try {
          auto c0 = Clock::now();
          for (int i = 0; i < runs; ++i) im.collective(big->second, false);
          comm_total = since_us(c0);
        } catch (...) {
          failed = std::current_exception();
        }
        finished.store(1);
      });
      try {
        world.barrier(to, "contention calibration");
      } catch (...) {
        go.store(2), go.notify_all();
        t.join();
        throw;
      }
      go.store(1);
      go.notify_all();
      std::vector<double> calls;
      while (finished.load() == 0) {
        auto g0 = Clock::now();
        im.gemm(s);
        double us = since_us(g0);
        if (finished.load() == 0) calls.push_back(us);
      }
      t.join();
      if (failed) std::rethrow_exception(failed);
      compute_slow.push_back(calls.empty() ? 0.0 : std::max(0.0, median(calls) / alone_gemm - 1));
      comm_slow.push_back(std::max(0.0, comm_total / runs / alone_comm - 1));
    }
    cal.compute_slowdown = median(compute_slow);
    cal.comm_slowdown = median(comm_slow);
  }
  // The serial schedule as a step runs it, and the one that cuts its collectives into the most
  // chunks, each run kLevelRuns times in turn; every figure below is the median over those runs
  // (on this shared host one run of the same schedule measured its further chunks at 0.57 ms each
  // where the two runs of it around measured 1.0 and 1.2).
  if (!rows.empty()) {
    auto collectives = [&](const StrategyResult& row) {
      int n = 0;
      for (const Task& t : row.tasks) n += im.is_comm(t) && im.runs(t);
      return n;
    };
    auto further = [&](const StrategyResult& row) {
      int k = 0;
      for (const Task& t : row.tasks) k += im.is_comm(t) && im.runs(t) && t.chunk > 0;
      return k;
    };
    const int n = collectives(rows.front());
    // Every rank picks the same row (rank 0's schedules).
    const StrategyResult* chunked = nullptr;
    for (const StrategyResult& row : rows)
      if (further(row) > (chunked ? further(*chunked) : 0)) chunked = &row;
    // The serial schedule's compute and collectives from the samples just taken, at their own level.
    double compute_samples = 0, comm_samples = 0;
    for (const Task& t : rows.front().tasks) {
      if (!im.runs(t)) continue;
      if (!im.is_comm(t)) {
        if (auto g = cal.gemm_us(exec_shape(t.op, t.fraction))) compute_samples += *g;
      } else if (auto c = cal.comm_us(t.coll, t.group, im.group_size(t.group), t.bytes)) {
        comm_samples += *c;
      }
    }
    std::vector<double> compute_level, comm_level, sync, chunk;
    constexpr int kLevelRuns = 3;
    for (int r = 0; r < kLevelRuns; ++r) {
      Measured serial = run(rows.front());
      // The level of the samples in a step (Calibration::compute_scale, comm_scale).
      compute_level.push_back(level(serial.compute_alone_us, compute_samples));
      comm_level.push_back(level(serial.comm_alone_us, comm_samples));
      // What its collectives cost beyond compute and collectives alone (each waits for the slowest
      // rank to arrive, and for the thread hand-offs), per collective: the model charges a serial
      // step its compute alone, its collectives alone and this, so that it predicts the serial
      // step as measured. (Taken against the compute durations in the step instead, as before,
      // it charged twice what ranks outnumbering the cores compute faster while others wait.)
      const double excess = serial.step_us - serial.compute_alone_us - serial.comm_alone_us;
      if (n > 0) sync.push_back(std::max(0.0, excess) / n);
      // The chunked row: what its step costs beyond compute and communication alone, past what its
      // whole collectives (and first chunks) cost at the serial step's rate, per further chunk, is
      // what each further meeting of the ranks costs (chunk_sync_us).
      if (chunked && n > 0) {
        Measured m = run(*chunked);
        chunk.push_back(chunk_sync(excess, n, m.step_us - m.compute_alone_us - m.comm_alone_us, collectives(*chunked) - further(*chunked),
                                   further(*chunked)));
      }
    }
    cal.compute_scale = median(compute_level);
    cal.comm_scale = median(comm_level);
    cal.sync_us = median(sync);
    cal.chunk_sync_us = median(chunk);
  }
  // Rank 0's figures are every rank's: each rank predicts with them, and ranks that predicted
  // from figures of their own would choose different knobs and call different collectives.
  cal.source = world.host() + ": " + std::to_string(world.size()) + " ranks, " + world.mpi_version() +
               ", OpenBLAS sgemm, mpi backend (bfloat16 sum)";
  return parse_calibration(world.broadcast(to_json(cal), to), "rank 0's calibration");
}

}  // namespace collkit::overlap
