#include "collkit/exec/harness.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <tuple>
#include <utility>

#include "collkit/core/error.h"
#include "collkit/core/size.h"
#include "planning.h"
#include "report.h"

namespace collkit::exec {

namespace {

using plan::Collective;

// The median of `v` (the mean of the middle two when even); 0 when empty.
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::uint64_t> sizes(const RunOptions& opt, const Planner& planner) {
  if (!opt.sizes_given && planner.file_plan_bytes() != 0) return {planner.file_plan_bytes()};
  if (opt.min_bytes == 0) throw InputError("-b: the smallest size must be at least 1 byte");
  if (opt.max_bytes < opt.min_bytes)
    throw InputError("-e " + format_size_bytes(opt.max_bytes) + " is smaller than -b " + format_size_bytes(opt.min_bytes));
  std::vector<std::uint64_t> out;
  if (opt.step_bytes > 0) {
    // nccl-tests' -i: b, b + i, b + 2i, ... up to e.
    constexpr std::uint64_t kMaxRows = 4096;
    if ((opt.max_bytes - opt.min_bytes) / opt.step_bytes >= kMaxRows)
      throw InputError("-i " + format_size_bytes(opt.step_bytes) + " from -b " + format_size_bytes(opt.min_bytes) + " to -e " +
                       format_size_bytes(opt.max_bytes) + " makes more than " + std::to_string(kMaxRows) +
                       " sizes; use a larger step or -f");
    for (std::uint64_t b = opt.min_bytes; b <= opt.max_bytes; b += opt.step_bytes) {
      out.push_back(b);
      if (opt.max_bytes - b < opt.step_bytes) break;
    }
    return out;
  }
  if (opt.factor < 2 && opt.min_bytes != opt.max_bytes) throw InputError("-f: the factor must be at least 2");
  for (std::uint64_t b = opt.min_bytes; b <= opt.max_bytes; b *= std::max<std::uint64_t>(opt.factor, 2)) {
    out.push_back(b);
    if (b > opt.max_bytes / std::max<std::uint64_t>(opt.factor, 2)) break;
  }
  return out;
}

// Every local rank's input of one row. Each placement writes it again before timing and before
// each checked run, so it is made once and kept, up to kKeptInputBytes; beyond that (many local
// ranks of the cuda backend at large sizes) it is made again each time rather than multiply host
// memory.
constexpr std::uint64_t kKeptInputBytes = 1ull << 30;

class Inputs {
 public:
  Inputs(const Backend& b, const Job& job) : job_(job), ranks_(b.local_ranks()) {
    std::uint64_t bytes = input_count(job) * size_of(job.type);
    if (bytes * ranks_.size() > kKeptInputBytes) return;
    for (int rank : ranks_) kept_.push_back(make(rank));
  }
  void write(Backend& b, Placement p) const {
    for (std::size_t l = 0; l < ranks_.size(); ++l) {
      if (kept_.empty()) b.write_input(l, p, make(ranks_[l]));
      else b.write_input(l, p, kept_[l]);
    }
  }

 private:
  std::vector<std::byte> make(int rank) const {
    std::vector<std::byte> data(input_count(job_) * size_of(job_.type));
    fill_input(job_, rank, data.data());
    return data;
  }
  Job job_;
  std::vector<int> ranks_;
  std::vector<std::vector<std::byte>> kept_;
};

// One run of `who` on fresh inputs, every element checked: #wrong over all ranks.
std::uint64_t checked_run(Backend& b, World& world, const RunOptions& opt, const Job& job, const Inputs& inputs, Subject who,
                          Placement p) {
  inputs.write(b, p);
  b.run(who, p);
  b.synchronize();
  std::vector<int> locals = b.local_ranks();
  std::vector<std::byte> out(output_count(job) * size_of(job.type));
  std::uint64_t wrong = 0;
  for (std::size_t l = 0; l < locals.size(); ++l) {
    b.read_output(l, p, who, out);
    wrong += count_wrong(job, locals[l], out.data());
  }
  return world.sum(wrong, opt.timeout_s);
}

// The timed iterations come in up to this many blocks per subject. With the native collective
// measured too, the blocks alternate (plan, native, plan, ...): a machine whose speed drifts (four
// ranks time-sharing two cores, other jobs, clocks) slows both sides alike, and the ratio of plan to
// native stays paired instead of comparing two different moments.
constexpr int kTimedBlocks = 5;

// Times the plan in placement `p` and, when `native` is set, the native collective beside it:
// warm-up, the timed iterations in alternating blocks each after a barrier, then one checked run
// per subject. Times are the slowest rank's mean per iteration, as nccl-tests reports them.
std::pair<Timing, Timing> measure(Backend& b, World& world, const RunOptions& opt, const Job& job, const Inputs& inputs,
                                  Placement p, bool native) {
  std::vector<Subject> who{Subject::Plan};
  if (native) who.push_back(Subject::Native);
  inputs.write(b, p);
  for (Subject w : who) {
    for (int i = 0; i < opt.warmup; ++i) b.run(w, p);
    b.synchronize();
  }
  double seconds[2] = {0, 0};
  std::vector<double> block_seconds[2];  // per block, this rank's time per iteration
  int blocks = std::min(opt.iters, kTimedBlocks);
  for (int k = 0; k < blocks; ++k) {
    int iters = opt.iters / blocks + (k < opt.iters % blocks ? 1 : 0);
    for (std::size_t s = 0; s < who.size(); ++s) {
      world.barrier(opt.timeout_s, std::string("waiting for every rank before timing ") +
                                       (who[s] == Subject::Plan ? "the plan" : "the native collective"));
      double t0 = World::now();
      for (int i = 0; i < iters; ++i) b.run(who[s], p);
      b.synchronize();
      seconds[s] += World::now() - t0;
      if (iters > 0) block_seconds[s].push_back((World::now() - t0) / iters);
    }
  }
  Timing t[2];
  for (std::size_t s = 0; s < who.size(); ++s) {
    t[s].ran = true;
    t[s].time_us = world.max(seconds[s] / std::max(opt.iters, 1), opt.timeout_s) * 1e6;
    // Each block's slowest rank, then the median over the blocks.
    std::vector<double> slowest;
    for (double x : block_seconds[s]) slowest.push_back(world.max(x, opt.timeout_s) * 1e6);
    t[s].block_median_us = median_of(slowest);
    t[s].algbw_gbps = plan::algbw_gbps(job.req.bytes, t[s].time_us);
    t[s].busbw_gbps = t[s].algbw_gbps * plan::busbw_factor(job.req.coll, job.req.nranks);
    for (int c = 0; c < opt.check; ++c) {
      t[s].wrong += checked_run(b, world, opt, job, inputs, who[s], p);
      t[s].checked = true;
    }
  }
  return {t[0], t[1]};
}

// Hosts' ranks: how many of this job's processes share this one's memory.
int ranks_on_my_host(const std::vector<std::string>& hosts, const std::string& mine) {
  return static_cast<int>(std::count(hosts.begin(), hosts.end(), mine));
}

std::string gib(double bytes) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1ull << 30));
  return text;
}

void check_memory(Backend& b, World& world, const Setup& s, int sharing, double timeout_s) {
  std::uint64_t need = 0;  // saturating: "needs 0.0 GiB" was a wrapped product
  if (__builtin_mul_overflow(b.bytes_needed(s), static_cast<std::uint64_t>(std::max(sharing, 1)), &need)) need = UINT64_MAX;
  std::uint64_t have = b.memory_available();
  std::uint64_t short_ranks = world.sum(have != 0 && need > have ? 1 : 0, timeout_s);
  // As doubles: 2^64 - 1 rounds up to 2^64, which no uint64 holds.
  double worst = world.max(static_cast<double>(need), timeout_s);
  double least = -world.max(-static_cast<double>(have), timeout_s);
  if (short_ranks > 0)
    throw InputError("size " + format_size_bytes(s.job.req.bytes) + " does not fit: " + std::string(b.name()) +
                     " buffers need " + gib(worst) + " on a host, " + gib(least) + " available; lower -e");
}

}  // namespace

Results run(const RunOptions& opt, Backend& backend, World& world, std::ostream& out) {
  Results res;
  res.backend = std::string(backend.name());
  res.library_version = backend.library_version();
  res.nranks = backend.nranks();
  res.hosts = world.hosts();
  res.iters = opt.iters;
  res.warmup_iters = opt.warmup;
  int sharing = ranks_on_my_host(res.hosts, world.host());
  bool root = world.rank() == 0;
  if (opt.iters < 1) throw InputError("-n: at least 1 iteration");
  if (opt.warmup < 0) throw InputError("-w: warm-up iterations cannot be negative");

  Planner planner(opt, backend.nranks(), world);
  res.topology = planner.topology_name();
  std::vector<std::uint64_t> size_list = sizes(opt, planner);
  std::vector<Collective> colls = planner.collectives();
  for (DataType t : opt.types)
    for (Collective c : colls) {
      Job probe{{c, 0, backend.nranks(), opt.root}, t, RedOp::Sum};
      if (std::string why = backend.cannot_run(probe); !why.empty()) throw UnsupportedError(why);
    }
  if (opt.root < 0 || opt.root >= backend.nranks())
    throw InputError("-r " + std::to_string(opt.root) + ": the root must be a rank, 0 to " + std::to_string(backend.nranks() - 1));
  if (root) print_preamble(out, res, opt);

  for (Collective coll : colls) {
    bool reduces = plan::facts(coll).reduces;
    for (const std::string& algo : planner.algorithms(coll))
      for (DataType type : opt.types)
        for (RedOp op : reduces ? opt.ops : std::vector<RedOp>{RedOp::Sum}) {
          Table table;
          table.coll = coll;
          table.algorithm = algo;
          table.type = type;
          table.op = op;
          table.native_name = backend.native_name(coll);
          if (root) print_table_head(out, table, reduces);
          // The largest size is planned first: a size that cannot fit is refused before any data moves.
          PlannedSize largest = planner.plan(coll, algo, type, op, size_list.back(), opt.root);
          if (largest.plan)
            check_memory(backend, world, Setup{largest.plan.get(), largest.job, largest.in_place, opt.timeout_s}, sharing,
                         opt.timeout_s);
          for (std::size_t k = 0; k < size_list.size(); ++k) {
            PlannedSize ps = k + 1 == size_list.size() ? std::move(largest)
                                                       : planner.plan(coll, algo, type, op, size_list[k], opt.root);
            if (!ps.plan) {
              table.notes.push_back(ps.skipped);
              if (root) out << "# " << ps.skipped << "\n" << std::flush;
              continue;
            }
            Row row;
            row.coll = coll;
            row.algorithm = ps.plan->info().algorithm;
            row.type = type;
            row.op = op;
            row.root = plan::facts(coll).has_root ? opt.root : -1;
            row.bytes = ps.job.req.bytes;
            row.count = ps.job.count();
            row.in_place_note = ps.in_place_note;
            row.predicted_us = ps.predicted_us;
            row.bound_us = ps.bound_us;
            row.plan_json = ps.plan_json;
            Setup s{ps.plan.get(), ps.job, ps.in_place, opt.timeout_s};
            backend.setup(s);
            if (opt.baseline) row.native_note = backend.native_cannot_run(ps.job);
            bool native = opt.baseline && row.native_note.empty();
            Inputs inputs(backend, ps.job);
            std::tie(row.out_of_place, row.native_out_of_place) =
                measure(backend, world, opt, ps.job, inputs, Placement::OutOfPlace, native);
            std::tie(row.in_place, row.native_in_place) =
                measure(backend, world, opt, ps.job, inputs, Placement::InPlace, native);
            res.total_wrong += row.out_of_place.wrong + row.in_place.wrong;
            if (root) print_row(out, row);
            table.rows.push_back(std::move(row));
            if (root && opt.on_row) {
              Results so_far = res;
              so_far.tables.push_back(table);
              so_far.complete = false;
              opt.on_row(so_far);
            }
          }
          if (root) print_table_tail(out, table, opt.baseline);
          res.tables.push_back(std::move(table));
        }
  }
  return res;
}

}  // namespace collkit::exec
