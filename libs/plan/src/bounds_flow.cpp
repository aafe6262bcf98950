// AlltoAll's flow bound (docs/plan.md, "Lower bounds"): the maximum concurrent flow over every
// link of the topology, any vertex forwarding (as the cuts allow: a plan may relay through a
// rank, and the bound does not ask which paths a plan's routes take). Every ordered pair of ranks
// ships its piece at the same rate lambda at once; no plan can do better, since whatever it sends
// over time is such a flow on average, so piece / lambda* bounds its time. It is never below the
// cut bounds (a cut's pairs must cross its links at lambda each) and is above them where pieces
// must take several hops: on DGX-1's hybrid cube-mesh three of a GPU's seven peers are two NVLinks
// away, which no cut sees.
//
// The LP, with the flows aggregated by source (exact for a concurrent flow: a source's flow to all
// its destinations decomposes into one per destination): variables lambda and f(s, e) >= 0, the
// flow from rank s's vertex on link direction e; rows
//   vertex v, source s:  out(s, v) - in(s, v) - c(s, v) lambda = 0,
//                        c = p - 1 at s's vertex, -1 at another rank's vertex, 0 elsewhere,
//   link direction e:    sum_s f(s, e) <= bw(e).
// Maximise lambda. GLPK's simplex; p (2 L) columns, so it is computed only up to kFlowColumns.

#include <glpk.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bounds_internal.h"
#include "collkit/core/error.h"

namespace collkit::plan::bounds {

namespace {

/// Flow columns (ranks x link directions) the LP is solved with at most. GLPK's primal simplex
/// (the dual and the interior point were slower or failed here) took 0.3-0.5 s on 4 x dgx-h100,
/// mi300x or dgx1-v100 (10-17 k columns), 2.4 s on the 4x4x2 torus of 32 hosts (21.5 k), where
/// the bound doubles (the cuts' 33022 us, the flow's 64425), and 8.7 s on 8 x dgx-h100 (50 k),
/// where it moves nothing: 64 ranks and more stay with the cuts.
constexpr std::size_t kFlowColumns = 24000;

struct LpDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

double solve_flow(const topo::Topology& t, int p) {
  auto P = static_cast<std::size_t>(p);
  std::size_t V = t.num_vertices(), L = t.num_links();
  std::vector<double> w = rank_weights(t, p);
  for (double x : w)
    if (x > 1) return 0;  // ranks sharing a vertex copy through it: not a flow over links
  for (const topo::Link& l : t.links())
    if (!(l.bw_gbps > 0)) return 0;  // a link of unknown bandwidth bounds nothing
  if (P * 2 * L > kFlowColumns) return 0;
  std::unique_ptr<glp_prob, LpDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MAX);
  // Rows: (s, v) conservation, s V + v + 1; then link directions, P V + e + 1.
  glp_add_rows(lp.get(), static_cast<int>(P * V + 2 * L));
  for (std::size_t r = 0; r < P * V; ++r) glp_set_row_bnds(lp.get(), static_cast<int>(r + 1), GLP_FX, 0, 0);
  for (std::size_t e = 0; e < 2 * L; ++e)
    glp_set_row_bnds(lp.get(), static_cast<int>(P * V + e + 1), GLP_UP, 0, t.link(static_cast<topo::LinkId>(e / 2)).bw_gbps);
  // Columns: lambda (1), then f(s, e) at 2 + s (2 L) + e.
  glp_add_cols(lp.get(), static_cast<int>(1 + P * 2 * L));
  glp_set_col_bnds(lp.get(), 1, GLP_LO, 0, 0);
  glp_set_obj_coef(lp.get(), 1, 1);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  auto put = [&](std::size_t row, std::size_t col, double v) {
    ia.push_back(static_cast<int>(row));
    ja.push_back(static_cast<int>(col));
    ar.push_back(v);
  };
  for (std::size_t s = 0; s < P; ++s) {
    topo::VertexId src = t.rank_vertex(static_cast<topo::Rank>(s));
    for (int r = 0; r < p; ++r) {
      topo::VertexId v = t.rank_vertex(static_cast<topo::Rank>(r));
      put(s * V + v + 1, 1, v == src ? -(static_cast<double>(p) - 1) : 1.0);
    }
    for (std::size_t e = 0; e < 2 * L; ++e) {
      const topo::Link& l = t.link(static_cast<topo::LinkId>(e / 2));
      topo::VertexId from = e % 2 == 0 ? l.a : l.b, to = e % 2 == 0 ? l.b : l.a;
      std::size_t col = 2 + s * 2 * L + e;
      glp_set_col_bnds(lp.get(), static_cast<int>(col), GLP_LO, 0, 0);
      put(s * V + from + 1, col, 1);
      put(s * V + to + 1, col, -1);
      put(P * V + e + 1, col, 1);
    }
  }
  glp_load_matrix(lp.get(), static_cast<int>(ia.size() - 1), ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  int rc = glp_simplex(lp.get(), &parm);
  if (rc != 0 || glp_get_status(lp.get()) != GLP_OPT)
    throw Error("lower bound: the AlltoAll flow LP was not solved (glp_simplex returned " + std::to_string(rc) + ", status " +
                std::to_string(glp_get_status(lp.get())) + ")");
  return glp_get_obj_val(lp.get());
}

}  // namespace

double concurrent_flow_gbps(const topo::Topology& t, int p, std::uint64_t fp) {
  // GLPK is not shared between threads: one solve at a time, each (topology, p) once.
  static std::mutex mu;
  static std::map<std::pair<std::uint64_t, int>, double> memo;
  std::lock_guard lock(mu);
  auto key = std::make_pair(fp, p);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  return memo.emplace(key, solve_flow(t, p)).first->second;
}

}  // namespace collkit::plan::bounds
