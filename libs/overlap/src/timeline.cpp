#include "collkit/overlap/timeline.h"

#include <algorithm>
#include <array>
#include <limits>

#include "collkit/core/error.h"

namespace collkit::overlap {

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::Tp: return "comm:tp";
    case Stream::Ep: return "comm:ep";
    case Stream::Dp: return "comm:dp";
    case Stream::DpReduce: return "comm:dp-reduce";
    case Stream::Pp: return "comm:pp";
  }
  return "?";
}

TimelineStats simulate(std::vector<Task>& tasks, double contention) { return simulate(tasks, Contention{contention, 0, false}); }

TimelineStats simulate(std::vector<Task>& tasks, const Contention& c) {
  const double contention = c.compute;
  if (contention < 0) throw InputError("contention must be >= 0, got " + std::to_string(contention));
  if (c.comm < 0) throw InputError("communication contention must be >= 0, got " + std::to_string(c.comm));
  std::array<std::vector<int>, kStreams> queue;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (!(t.work_us >= 0)) throw Error("timeline: task " + t.name + " has a negative duration");
    if (!(t.wait_us >= 0 && t.wait_us <= t.work_us)) throw Error("timeline: task " + t.name + " waits outside its duration");
    for (int d : t.deps)
      if (d < 0 || static_cast<std::size_t>(d) >= i) throw Error("timeline: task " + t.name + " depends on a task not before it");
    // One communication thread: every collective queues on the first communication stream.
    Stream s = c.one_comm_stream && t.stream != Stream::Compute ? Stream::Tp : t.stream;
    queue[static_cast<std::size_t>(s)].push_back(static_cast<int>(i));
  }
  std::vector<char> done(tasks.size(), 0);
  std::array<std::size_t, kStreams> head{};
  std::array<int, kStreams> running;
  running.fill(-1);
  std::array<double, kStreams> remaining{};
  std::size_t finished = 0;
  double now = 0;
  const double slow = 1.0 / (1.0 + contention);
  const double comm_slow = 1.0 / (1.0 + c.comm);

  while (finished < tasks.size()) {
    // Start what can start; tasks of zero length end at once, which may let others start.
    for (bool changed = true; changed;) {
      changed = false;
      for (int s = 0; s < kStreams; ++s) {
        if (running[s] >= 0 || head[s] >= queue[s].size()) continue;
        int id = queue[s][head[s]];
        Task& t = tasks[static_cast<std::size_t>(id)];
        if (!std::all_of(t.deps.begin(), t.deps.end(), [&](int d) { return done[static_cast<std::size_t>(d)] != 0; })) continue;
        ++head[s];
        t.start_us = now;
        changed = true;
        if (t.work_us <= 0) {
          t.end_us = now;
          done[static_cast<std::size_t>(id)] = 1;
          ++finished;
        } else {
          running[s] = id;
          remaining[s] = t.work_us;
        }
      }
    }
    if (finished == tasks.size()) break;
    bool comm_active = false;
    for (int s = 1; s < kStreams; ++s) comm_active = comm_active || running[s] >= 0;
    std::array<double, kStreams> rate{};
    for (int s = 0; s < kStreams; ++s) {
      if (running[s] < 0) continue;
      if (s == 0) {
        rate[s] = comm_active ? slow : 1.0;
        continue;
      }
      int share = tasks[static_cast<std::size_t>(running[s])].share, sharing = 0;
      for (int o = 1; o < kStreams; ++o)
        sharing += running[o] >= 0 && share >= 0 && tasks[static_cast<std::size_t>(running[o])].share == share;
      rate[s] = 1.0 / std::max(1, sharing) * (running[0] >= 0 ? comm_slow : 1.0);
    }
    double dt = std::numeric_limits<double>::infinity();
    for (int s = 0; s < kStreams; ++s)
      if (running[s] >= 0) dt = std::min(dt, remaining[s] / rate[s]);
    if (!(dt < std::numeric_limits<double>::infinity())) throw Error("timeline: no task can run (a dependency cycle)");
    now += dt;
    for (int s = 0; s < kStreams; ++s) {
      if (running[s] < 0) continue;
      remaining[s] -= dt * rate[s];
      Task& t = tasks[static_cast<std::size_t>(running[s])];
      if (remaining[s] <= 1e-9 * std::max(1.0, t.work_us)) {
        t.end_us = now;
        done[static_cast<std::size_t>(running[s])] = 1;
        ++finished;
        running[s] = -1;
      }
    }
  }

  TimelineStats st;
  for (const Task& t : tasks) {
    st.makespan_us = std::max(st.makespan_us, t.end_us);
    if (t.stream == Stream::Compute) {
      st.compute_alone_us += t.work_us;
      st.compute_actual_us += t.end_us - t.start_us;
    } else {
      st.comm_us += t.work_us - t.wait_us;
      st.comm_wait_us += t.wait_us;
    }
  }
  st.exposed_comm_us = st.makespan_us - st.compute_actual_us;
  return st;
}

}  // namespace collkit::overlap
