// Byte shares of a ring plan's channels, and of one root's trees (ring_weights.h).
//
// Channel c moves its share at rate x_c through every hop of its ring at once (a ring's steps keep
// every hop busy), so a link direction crossed n_{c,e} times by ring c carries sum_c n_{c,e} x_c.
// The LP: maximise sum_c x_c subject to sum_c n_{c,e} x_c <= bw_e for every link direction e (and
// a vertex's local copies between ranks on it, as the simulator counts them); the collective then
// takes (its bytes) / sum_c x_c, every ring finishing together when shares are x_c / sum x. Equal
// shares reach C min_e bw_e / sum_c n_{c,e}. A Broadcast tree moves its share through every arc at
// once too, so the same LP weighs trees, their arcs as the hops.

#include "ring_weights.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>

#include "collkit/core/error.h"
#include "collkit/core/memo.h"
#include "collkit/topo/routing.h"
#include "collkit/topo/topology.h"

namespace collkit::plan::algo {

namespace {

struct LpDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

/// Per resource crossed (link direction, or 2 links + vertex for local copies): its bandwidth and
/// the crossings of each channel. Empty when some hop has no route.
struct Crossings {
  std::vector<double> bw;
  std::vector<std::vector<double>> per_channel;  // [resource][channel]
};

Crossings crossings(const topo::Topology& t, const std::vector<Hops>& hops) {
  Crossings out;
  const std::size_t C = hops.size();
  std::map<std::size_t, std::size_t> row;
  auto use = [&](std::size_t resource, double bw, std::size_t c) {
    auto [it, added] = row.emplace(resource, out.bw.size());
    if (added) {
      out.bw.push_back(bw);
      out.per_channel.emplace_back(C, 0.0);
    }
    out.per_channel[it->second][c] += 1;
  };
  topo::Router router(t);
  for (std::size_t c = 0; c < C; ++c) {
    for (auto [from, to] : hops[c]) {
      auto a = static_cast<topo::Rank>(from), b = static_cast<topo::Rank>(to);
      topo::Path path = router.route_ranks(a, b);
      if (!path.found) return {};
      for (const topo::Hop& h : path.hops) use(h.channel(), t.link(h.link).bw_gbps, c);
      topo::VertexId v = t.rank_vertex(a);
      if (path.hops.empty() && t.vertex(v).local_bw_gbps > 0) use(2 * t.num_links() + v, t.vertex(v).local_bw_gbps, c);
    }
  }
  return out;
}

/// The LP's rates x_c (empty if it is not solved or reaches no rate).
std::vector<double> best_rates(const Crossings& x, std::size_t C) {
  std::unique_ptr<glp_prob, LpDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MAX);
  const int rows = static_cast<int>(x.bw.size()), cols = static_cast<int>(C);
  glp_add_rows(lp.get(), rows);
  glp_add_cols(lp.get(), cols);
  for (int c = 1; c <= cols; ++c) {
    glp_set_col_bnds(lp.get(), c, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp.get(), c, 1.0);
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0.0};
  for (int r = 1; r <= rows; ++r) {
    glp_set_row_bnds(lp.get(), r, GLP_UP, 0.0, x.bw[static_cast<std::size_t>(r - 1)]);
    for (int c = 1; c <= cols; ++c)
      if (double n = x.per_channel[static_cast<std::size_t>(r - 1)][static_cast<std::size_t>(c - 1)]; n > 0) {
        ia.push_back(r);
        ja.push_back(c);
        ar.push_back(n);
      }
  }
  glp_load_matrix(lp.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  if (glp_simplex(lp.get(), &parm) != 0 || glp_get_status(lp.get()) != GLP_OPT) return {};
  // Of the rates that reach that sum, the most even (the least channel's rate the most it can
  // be): the sum alone leaves many optima, and the simplex's vertex can starve channels (16 rings
  // on 8 NICs: 8 of them got 1 unit of 1160) where spreading costs nothing.
  const double best = glp_get_obj_val(lp.get());
  const int least = glp_add_cols(lp.get(), 1);
  glp_set_col_bnds(lp.get(), least, GLP_LO, 0.0, 0.0);
  for (int c = 1; c <= cols; ++c) glp_set_obj_coef(lp.get(), c, 0.0);
  glp_set_obj_coef(lp.get(), least, 1.0);
  const int first = glp_add_rows(lp.get(), cols + 1);
  for (int c = 1; c <= cols; ++c) {  // x_c - least >= 0
    int ind[3] = {0, c, least};
    double val[3] = {0, 1.0, -1.0};
    glp_set_mat_row(lp.get(), first + c - 1, 2, ind, val);
    glp_set_row_bnds(lp.get(), first + c - 1, GLP_LO, 0.0, 0.0);
  }
  std::vector<int> ind(static_cast<std::size_t>(cols) + 1);
  std::vector<double> val(static_cast<std::size_t>(cols) + 1, 1.0);
  std::iota(ind.begin(), ind.end(), 0);
  glp_set_mat_row(lp.get(), first + cols, cols, ind.data(), val.data());  // sum x_c >= best, to rounding
  glp_set_row_bnds(lp.get(), first + cols, GLP_LO, best * (1 - 1e-9), 0.0);
  std::vector<double> rates(C);
  const bool even = glp_simplex(lp.get(), &parm) == 0 && glp_get_status(lp.get()) == GLP_OPT;
  for (int c = 1; c <= cols; ++c) rates[static_cast<std::size_t>(c - 1)] = glp_get_col_prim(lp.get(), c);
  if (!even) return {};
  return rates;
}

}  // namespace

std::vector<int> round_shares(const std::vector<double>& rates, int units) {
  const std::size_t C = rates.size();
  double total = std::accumulate(rates.begin(), rates.end(), 0.0);
  std::vector<int> w(C);
  int given = 0;
  for (std::size_t c = 0; c < C; ++c) given += w[c] = std::max(1, static_cast<int>(std::floor(units * rates[c] / total)));
  auto time_with = [&](std::size_t c, int n) { return rates[c] > 0 ? n / rates[c] : std::numeric_limits<double>::infinity(); };
  for (; given < units; ++given) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < C; ++c)
      if (time_with(c, w[c] + 1) < time_with(best, w[best] + 1)) best = c;
    ++w[best];
  }
  // The ones given to rate-0 channels can take the sum past `units`: take back from the slowest.
  for (; given > units; --given) {
    std::size_t worst = C;
    for (std::size_t c = 0; c < C; ++c)
      if (w[c] > 1 && (worst == C || time_with(c, w[c]) > time_with(worst, w[worst]))) worst = c;
    --w[worst];
  }
  return w;
}

std::vector<double> weighted_rates(const topo::Topology& t, const std::vector<Hops>& hops) {
  const std::size_t C = hops.size();
  if (C < 2) return {};
  Crossings x = crossings(t, hops);
  if (x.bw.empty()) return {};
  // Equal shares: every channel at the rate the most loaded resource allows.
  double equal = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < x.bw.size(); ++r) {
    double n = std::accumulate(x.per_channel[r].begin(), x.per_channel[r].end(), 0.0);
    if (n > 0 && x.bw[r] > 0) equal = std::min(equal, x.bw[r] / n);
  }
  if (!std::isfinite(equal) || equal <= 0) return {};
  std::vector<double> rates = best_rates(x, C);
  double best = std::accumulate(rates.begin(), rates.end(), 0.0);
  if (rates.empty() || !(best > 0) || static_cast<double>(C) * equal >= (1 - kWeightGain) * best) return {};
  return rates;
}

namespace {

std::vector<int> weights_of(const topo::Topology& t, const std::vector<std::vector<int>>& orders, bool chain, int units) {
  const std::size_t C = orders.size();
  if (C < 2 || units < 2 * static_cast<int>(C) || orders.front().size() < 2) return {};
  std::vector<Hops> hops(C);
  for (std::size_t c = 0; c < C; ++c) {
    const std::vector<int>& order = orders[c];
    const std::size_t p = order.size();
    for (std::size_t q = 0; q < (chain ? p - 1 : p); ++q) hops[c].emplace_back(order[q], order[(q + 1) % p]);
  }
  std::vector<double> rates = weighted_rates(t, hops);
  if (rates.empty()) return {};
  // Of the sums from units / 2 to units, the one whose slowest channel (its units over its rate,
  // over the sum) is fastest; the largest of equals. Few units round coarsely: a 1024-rank ring
  // gets 16 for 8 channels, where 3,3,1,1,2,2,2,2 of 16 leave the slowest at 3 / 16 of a slice
  // per unit rate and 2,2,1,1,2,2,2,2 of 14 at 1 / 7, the LP's own.
  auto time_of = [&](const std::vector<int>& w, int u) {
    double slowest = 0;
    for (std::size_t c = 0; c < C; ++c)
      slowest = std::max(slowest, rates[c] > 0 ? w[c] / rates[c] : std::numeric_limits<double>::infinity());
    return slowest / u;
  };
  std::vector<int> best = round_shares(rates, units);
  double best_time = time_of(best, units);
  for (int u = units - 1; u >= std::max(static_cast<int>(C), units / 2); --u) {
    std::vector<int> w = round_shares(rates, u);
    if (double time = time_of(w, u); time < best_time * (1 - 1e-9)) {
      best_time = time;
      best = std::move(w);
    }
  }
  return best;
}

}  // namespace

int weight_units(int channels, int ranks, std::uint64_t per_unit, std::uint64_t bytes) {
  if (channels < 2 || ranks < 2 || per_unit < 1) return 0;
  std::uint64_t units =
      std::min(kMaxWeightedChunks / (static_cast<std::uint64_t>(ranks) * per_unit), bytes / (per_unit * kMinWeightedChunk));
  std::uint64_t per = std::min<std::uint64_t>(64, units / static_cast<std::uint64_t>(channels));
  return per < 2 ? 0 : static_cast<int>(per) * channels;
}

std::vector<int> channel_weights(const topo::Topology& t, const std::vector<std::vector<int>>& orders, bool chain, int units) {
  // Keyed by the topology, the orders' hash and the units: auto lays a ring out at each knob value.
  std::uint64_t h = 0xcbf29ce484222325ull ^ orders.size();
  for (const std::vector<int>& o : orders)
    for (int r : o) h = (h ^ static_cast<std::uint64_t>(r)) * 0x100000001b3ull;
  using Key = std::tuple<std::uint64_t, std::uint64_t, bool, int>;
  static Memo<Key, std::vector<int>> memo;
  return memo.get({t.fingerprint(), h, chain, units}, [&] { return weights_of(t, orders, chain, units); });
}

}  // namespace collkit::plan::algo
