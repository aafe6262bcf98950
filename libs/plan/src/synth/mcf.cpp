// The AlltoAll flow LP (mcf.h), by column generation on GLPK's simplex.
//
// Variables: lambda, and y(s, c, d) >= 0, the rate of commodity (s, d) relayed through c; the
// straight part is lambda - sum_c y(s, c, d). Rows:
//   pair (s, d):      sum_c y(s, c, d) - lambda <= 0                    (the straight part >= 0)
//   link direction e: n_e lambda + sum y(s, c, d) (a_e(s,c) + a_e(c,d) - a_e(s,d)) <= bw_e
// where a_e(u, v) is 1 when the route from u to v crosses e and n_e counts the routes that do.
// Maximise lambda. With every y(s, c, d) present this has p (p-1) (p-2) columns (250 k at 64
// ranks); most stay 0, so they enter only when priced: with the rows' duals pi, column y(s, c, d)
// has reduced cost P(s, d) - pi(s, d) - P(s, c) - P(c, d), P(u, v) the duals summed along the
// route u -> v, and enters when that is positive. When none is, the LP over every column is
// optimal too. Another straight path q of (s, d) (FlowPaths: through another NIC, or staged
// through host memory) is a column z(s, q, d) the same way: +1 on the pair's row, a_e(q) - a_e(s, d)
// on the links, reduced cost P(s, d) - pi(s, d) - P(q).

#include "synth/mcf.h"

#include <glpk.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <tuple>

#include "collkit/core/error.h"
#include "collkit/topo/routing.h"
#include "nic_route.h"

namespace collkit::plan::synth {

namespace {

/// A reduced cost below this is taken as 0 (duals are rates' shadow prices, about 1 / ranks).
constexpr double kPriceTolerance = 1e-9;
/// Columns added per round at most: the most attractive first, so that each solve stays small.
constexpr std::size_t kColumnsPerRound = 4096;

struct LpDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

void solve(glp_prob* lp) {
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  int rc = glp_simplex(lp, &parm);
  if (rc != 0 || glp_get_status(lp) != GLP_OPT)
    throw Error("synth: the AlltoAll flow LP was not solved (glp_simplex returned " + std::to_string(rc) + ", status " +
                std::to_string(glp_get_status(lp)) + ")");
}

}  // namespace

ConcurrentFlow max_concurrent_flow(const topo::Topology& t, int p, const FlowPaths& also) {
  auto P = static_cast<std::size_t>(p);
  // Each ordered pair's route as the LP rows of the link directions it crosses.
  topo::Router router(t);
  std::vector<int> row_of(2 * t.num_links() + t.num_vertices(), 0);
  std::vector<double> capacity;
  std::vector<std::vector<int>> route(P * P);
  std::vector<double> crossing;  // n_e
  auto row_for = [&](std::size_t resource, double bw) {
    int& row = row_of[resource];
    if (row == 0) {
      capacity.push_back(bw);
      crossing.push_back(0);
      row = static_cast<int>(capacity.size());
    }
    return row;
  };
  for (int a = 0; a < p; ++a)
    for (int b = 0; b < p; ++b) {
      if (a == b) continue;
      topo::Path path = router.route_ranks(static_cast<topo::Rank>(a), static_cast<topo::Rank>(b));
      if (!path.found)
        throw InputError("synth: no route from rank " + std::to_string(a) + " to rank " + std::to_string(b) + " for the AlltoAll flow LP");
      auto use = [&](std::size_t resource, double bw) {
        int row = row_for(resource, bw);
        crossing[static_cast<std::size_t>(row - 1)] += 1;
        route[P * static_cast<std::size_t>(a) + static_cast<std::size_t>(b)].push_back(row);
      };
      for (const topo::Hop& h : path.hops) use(h.channel(), t.link(h.link).bw_gbps);
      // Two ranks on one vertex copy through its local bandwidth, one resource as the simulator
      // has it; free when unknown (0).
      topo::VertexId v = t.rank_vertex(static_cast<topo::Rank>(a));
      if (path.hops.empty() && t.vertex(v).local_bw_gbps > 0) use(2 * t.num_links() + v, t.vertex(v).local_bw_gbps);
    }
  // The other straight paths (FlowPaths), each as the rows it crosses; one that crosses what the
  // route does is left out.
  struct Other {
    int s, d;
    std::vector<int> rows;
  };
  std::vector<Other> others;
  if (also.every_nic || also.host_paths) {
    topo::RouteCache cache(t);
    sim::NicRoutes nics(t, cache);
    sim::HostRoutes host(t);
    for (int a = 0; a < p; ++a)
      for (int b = 0; b < p; ++b) {
        topo::VertexId va = t.rank_vertex(static_cast<topo::Rank>(a)), vb = t.rank_vertex(static_cast<topo::Rank>(b));
        if (a == b || va == vb) continue;
        std::vector<int> own = route[P * static_cast<std::size_t>(a) + static_cast<std::size_t>(b)];
        std::sort(own.begin(), own.end());
        auto offer = [&](const topo::Path& path) {
          if (!path.found || path.hops.empty()) return;
          Other o{a, b, {}};
          for (const topo::Hop& h : path.hops) o.rows.push_back(row_for(h.channel(), t.link(h.link).bw_gbps));
          std::sort(o.rows.begin(), o.rows.end());
          if (o.rows != own) others.push_back(std::move(o));
        };
        bool same_host = !t.vertex(va).host.empty() && t.vertex(va).host == t.vertex(vb).host;
        if (also.host_paths && same_host) offer(host.route(va, vb));
        if (also.every_nic && !same_host)
          for (int n = 0; nics.nic_of(va, n) && nics.nic_of(vb, n); ++n) offer(nics.route(va, vb, n));
      }
  }
  int links = static_cast<int>(capacity.size());
  ConcurrentFlow out;
  if (links == 0) {  // nothing limits the rate: every pair shares a vertex of unknown copy speed
    out.rate_gbps = std::numeric_limits<double>::infinity();
    return out;
  }
  auto pair_row = [&](int s, int d) { return links + 1 + s * (p - 1) + (d < s ? d : d - 1); };

  std::unique_ptr<glp_prob, LpDeleter> owner(glp_create_prob());
  glp_prob* lp = owner.get();
  glp_set_obj_dir(lp, GLP_MAX);
  int rows = links + p * (p - 1);
  glp_add_rows(lp, rows);
  for (int e = 1; e <= links; ++e) glp_set_row_bnds(lp, e, GLP_UP, 0.0, capacity[static_cast<std::size_t>(e - 1)]);
  for (int r = links + 1; r <= rows; ++r) glp_set_row_bnds(lp, r, GLP_UP, 0.0, 0.0);
  // Column 1: lambda.
  std::vector<int> ind(1, 0);
  std::vector<double> val(1, 0.0);
  glp_add_cols(lp, 1);
  glp_set_col_bnds(lp, 1, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(lp, 1, 1.0);
  for (int e = 1; e <= links; ++e) {
    if (crossing[static_cast<std::size_t>(e - 1)] == 0) continue;  // crossed by other paths alone
    ind.push_back(e);
    val.push_back(crossing[static_cast<std::size_t>(e - 1)]);
  }
  for (int r = links + 1; r <= rows; ++r) {
    ind.push_back(r);
    val.push_back(-1.0);
  }
  glp_set_mat_col(lp, 1, static_cast<int>(ind.size()) - 1, ind.data(), val.data());

  struct Column {
    int s, c, d;
    int other = -1;  ///< >= 0: others[other], a straight path (c unused)
  };
  std::vector<Column> columns;
  std::vector<char> present(P * P * P, 0);
  std::vector<double> coef(static_cast<std::size_t>(rows) + 1, 0.0);
  auto add_column = [&](const Column& col) {
    auto at = [&](int u, int v) -> const std::vector<int>& { return route[P * static_cast<std::size_t>(u) + static_cast<std::size_t>(v)]; };
    static const std::vector<int> none;
    const std::vector<int>& first = col.other >= 0 ? others[static_cast<std::size_t>(col.other)].rows : at(col.s, col.c);
    const std::vector<int>& second = col.other >= 0 ? none : at(col.c, col.d);
    for (int e : first) coef[static_cast<std::size_t>(e)] += 1;
    for (int e : second) coef[static_cast<std::size_t>(e)] += 1;
    for (int e : at(col.s, col.d)) coef[static_cast<std::size_t>(e)] -= 1;
    ind.assign(1, 0);
    val.assign(1, 0.0);
    auto collect = [&](const std::vector<int>& rs) {
      for (int e : rs)
        if (coef[static_cast<std::size_t>(e)] != 0) {
          ind.push_back(e);
          val.push_back(coef[static_cast<std::size_t>(e)]);
          coef[static_cast<std::size_t>(e)] = 0;
        }
    };
    collect(first);
    collect(second);
    collect(at(col.s, col.d));
    ind.push_back(pair_row(col.s, col.d));
    val.push_back(1.0);
    int j = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, j, GLP_LO, 0.0, 0.0);
    glp_set_mat_col(lp, j, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
    columns.push_back(col);
  };

  std::vector<double> price(P * P, 0.0);  // P(u, v): the link duals summed along the route
  struct Offer {
    double gain;
    Column col;
  };
  std::vector<Offer> offers;
  std::vector<char> other_in(others.size(), 0);
  for (;;) {
    solve(lp);
    ++out.rounds;
    for (std::size_t u = 0; u < P; ++u)
      for (std::size_t v = 0; v < P; ++v) {
        double sum = 0;
        for (int e : route[P * u + v]) sum += glp_get_row_dual(lp, e);
        price[P * u + v] = sum;
      }
    offers.clear();
    for (int s = 0; s < p; ++s)
      for (int d = 0; d < p; ++d) {
        if (s == d) continue;
        auto S = static_cast<std::size_t>(s), D = static_cast<std::size_t>(d);
        double base = price[P * S + D] - glp_get_row_dual(lp, pair_row(s, d));
        for (int c = 0; c < p; ++c) {
          auto C = static_cast<std::size_t>(c);
          if (c == s || c == d || present[(S * P + C) * P + D]) continue;
          double gain = base - price[P * S + C] - price[P * C + D];
          if (gain > kPriceTolerance) offers.push_back({gain, {s, c, d}});
        }
      }
    for (std::size_t q = 0; q < others.size(); ++q) {
      if (other_in[q]) continue;
      const Other& o = others[q];
      double gain = price[P * static_cast<std::size_t>(o.s) + static_cast<std::size_t>(o.d)] - glp_get_row_dual(lp, pair_row(o.s, o.d));
      for (int e : o.rows) gain -= glp_get_row_dual(lp, e);
      if (gain > kPriceTolerance) offers.push_back({gain, {o.s, -1, o.d, static_cast<int>(q)}});
    }
    if (offers.empty()) break;
    if (offers.size() > kColumnsPerRound) {
      std::nth_element(offers.begin(), offers.begin() + kColumnsPerRound, offers.end(),
                       [](const Offer& x, const Offer& y) { return x.gain > y.gain; });
      offers.resize(kColumnsPerRound);
    }
    for (const Offer& o : offers) {
      if (o.col.other >= 0) other_in[static_cast<std::size_t>(o.col.other)] = 1;
      else present[(static_cast<std::size_t>(o.col.s) * P + static_cast<std::size_t>(o.col.c)) * P + static_cast<std::size_t>(o.col.d)] = 1;
      add_column(o.col);
    }
  }
  out.rate_gbps = glp_get_col_prim(lp, 1);
  // Among the flows at (nearly) that rate, the one relaying least: straight sends pay one
  // route's latency and no forwarding.
  glp_set_col_bnds(lp, 1, GLP_LO, out.rate_gbps * (1 - 1e-7), 0.0);
  glp_set_obj_coef(lp, 1, 0.0);
  for (std::size_t j = 0; j < columns.size(); ++j)
    if (columns[j].other < 0) glp_set_obj_coef(lp, static_cast<int>(j) + 2, -1.0);
  solve(lp);
  ++out.rounds;
  double lambda = glp_get_col_prim(lp, 1);
  for (std::size_t j = 0; j < columns.size(); ++j) {
    double y = glp_get_col_prim(lp, static_cast<int>(j) + 2);
    if (columns[j].other < 0 && y > lambda * 1e-9) out.relays.push_back({columns[j].s, columns[j].c, columns[j].d, y / lambda});
  }
  std::sort(out.relays.begin(), out.relays.end(),
            [](const Relay& x, const Relay& y) { return std::tie(x.src, x.dst, x.via) < std::tie(y.src, y.dst, y.via); });
  out.rows = rows;
  out.paths = static_cast<int>(others.size());
  out.columns = static_cast<int>(columns.size()) + 1;
  return out;
}

}  // namespace collkit::plan::synth
