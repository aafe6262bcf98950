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
  constexpr std::size_t kNoRow = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> row(2 * t.num_links() + t.num_vertices(), kNoRow);  // resource -> its row
  auto use = [&](std::size_t resource, double bw, std::size_t c) {
    if (row[resource] == kNoRow) {
      row[resource] = out.bw.size();
      out.bw.push_back(bw);
      out.per_channel.emplace_back(C, 0.0);
    }
    out.per_channel[row[resource]][c] += 1;
  };
  // Each pair routed once (every root's trees cross the same pairs many times over).
  topo::Router router(t);
  std::map<std::pair<int, int>, topo::Path> routes;
  for (std::size_t c = 0; c < C; ++c) {
    for (auto [from, to] : hops[c]) {
      auto [it, added] = routes.try_emplace({from, to});
      if (added) it->second = router.route_ranks(static_cast<topo::Rank>(from), static_cast<topo::Rank>(to));
      const topo::Path& path = it->second;
      if (!path.found) return {};
      for (const topo::Hop& h : path.hops) use(h.channel(), t.link(h.link).bw_gbps, c);
      topo::VertexId v = t.rank_vertex(static_cast<topo::Rank>(from));
      if (path.hops.empty() && t.vertex(v).local_bw_gbps > 0) use(2 * t.num_links() + v, t.vertex(v).local_bw_gbps, c);
    }
  }
  return out;
}

/// An LP with a column per channel (1 .. C, x_c >= 0) and a row per resource (sum_c n_{c,e} x_c <=
/// bw_e), no objective yet.
std::unique_ptr<glp_prob, LpDeleter> resource_lp(const Crossings& x, std::size_t C) {
  std::unique_ptr<glp_prob, LpDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MAX);
  const int rows = static_cast<int>(x.bw.size()), cols = static_cast<int>(C);
  glp_add_rows(lp.get(), rows);
  glp_add_cols(lp.get(), cols);
  for (int c = 1; c <= cols; ++c) glp_set_col_bnds(lp.get(), c, GLP_LO, 0.0, 0.0);
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
  return lp;
}

bool solved(glp_prob* lp) {
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  return glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT;
}

/// After an optimum, held in place by the caller (a row or a bound): of the solutions within
/// rounding of it, the most even. The least channel's rate (a new column) is maximised with every
/// x_c at least it. The simplex's vertex alone can starve channels (16 rings on 8
/// NICs: 8 of them got 1 unit of 1160) where spreading costs nothing.
std::vector<double> most_even(glp_prob* lp, int cols, bool least_most = false) {
  auto primal = [&] {
    std::vector<double> rates(static_cast<std::size_t>(cols));
    for (int c = 1; c <= cols; ++c) rates[static_cast<std::size_t>(c - 1)] = glp_get_col_prim(lp, c);
    return rates;
  };
  // Each stage refines the one before; where the simplex does not solve a stage (numerical
  // trouble at a degenerate optimum: 4 x mi300x's every rank's trees), the stage before stands.
  const std::vector<double> optimum = primal();
  const int least = glp_add_cols(lp, 1);
  glp_set_col_bnds(lp, least, GLP_LO, 0.0, 0.0);
  for (int c = 1; c < least; ++c) glp_set_obj_coef(lp, c, 0.0);
  glp_set_obj_coef(lp, least, 1.0);
  const int first = glp_add_rows(lp, cols);
  for (int c = 1; c <= cols; ++c) {  // x_c - least >= 0
    int ind[3] = {0, c, least};
    double val[3] = {0, 1.0, -1.0};
    glp_set_mat_row(lp, first + c - 1, 2, ind, val);
    glp_set_row_bnds(lp, first + c - 1, GLP_LO, 0.0, 0.0);
  }
  if (!solved(lp)) return optimum;
  if (least_most) {
    // Then, at that least, the greatest channel's rate the least it can be: the rest of the sum
    // spread too, not left on a few channels at the simplex's vertex.
    const std::vector<double> evened = primal();
    glp_set_col_bnds(lp, least, GLP_LO, glp_get_obj_val(lp) * (1 - 1e-7), 0.0);
    glp_set_obj_coef(lp, least, 0.0);
    const int most = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, most, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, most, -1.0);
    const int below = glp_add_rows(lp, cols);
    for (int c = 1; c <= cols; ++c) {  // most - x_c >= 0
      int ind[3] = {0, c, most};
      double val[3] = {0, -1.0, 1.0};
      glp_set_mat_row(lp, below + c - 1, 2, ind, val);
      glp_set_row_bnds(lp, below + c - 1, GLP_LO, 0.0, 0.0);
    }
    if (!solved(lp)) return evened;
  }
  return primal();
}

/// Every channel at one rate, the most the busiest resource allows (0 if none is crossed).
double equal_rate(const Crossings& x) {
  double equal = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < x.bw.size(); ++r) {
    double n = std::accumulate(x.per_channel[r].begin(), x.per_channel[r].end(), 0.0);
    if (n > 0 && x.bw[r] > 0) equal = std::min(equal, x.bw[r] / n);
  }
  return std::isfinite(equal) ? equal : 0.0;
}

/// The LP's rates x_c (empty if it is not solved or reaches no rate).
std::vector<double> best_rates(const Crossings& x, std::size_t C) {
  std::unique_ptr<glp_prob, LpDeleter> lp = resource_lp(x, C);
  const int cols = static_cast<int>(C);
  for (int c = 1; c <= cols; ++c) glp_set_obj_coef(lp.get(), c, 1.0);
  if (!solved(lp.get())) return {};
  // Of the rates that reach that sum, the most even.
  const double best = glp_get_obj_val(lp.get());
  std::vector<int> ind(static_cast<std::size_t>(cols) + 1);
  std::vector<double> val(static_cast<std::size_t>(cols) + 1, 1.0);
  std::iota(ind.begin(), ind.end(), 0);
  const int sum = glp_add_rows(lp.get(), 1);
  glp_set_mat_row(lp.get(), sum, cols, ind.data(), val.data());  // sum x_c >= best, to rounding
  glp_set_row_bnds(lp.get(), sum, GLP_LO, best * (1 - 1e-9), 0.0);
  return most_even(lp.get(), cols);
}

/// grouped_rates' LP over the columns of x: y_q and the least group's sum s (column Q + 1);
/// maximise s subject to each group's sum_q coef[g][q] y_q - s >= 0, then the most even at that s
/// (the least rate the most it can be, then the greatest the least).
/// The rates and s; empty rates if not solved.
std::pair<std::vector<double>, double> best_grouped_rates(const Crossings& x, const std::vector<std::vector<double>>& coef) {
  const std::size_t Q = coef.empty() ? 0 : coef.front().size();
  const int cols = static_cast<int>(Q);
  std::unique_ptr<glp_prob, LpDeleter> lp = resource_lp(x, Q);
  const int s = glp_add_cols(lp.get(), 1);
  glp_set_col_bnds(lp.get(), s, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(lp.get(), s, 1.0);
  const int first = glp_add_rows(lp.get(), static_cast<int>(coef.size()));
  for (std::size_t g = 0; g < coef.size(); ++g) {
    std::vector<int> ind{0};
    std::vector<double> val{0.0};
    for (int q = 1; q <= cols; ++q)
      if (double a = coef[g][static_cast<std::size_t>(q - 1)]; a > 0) {
        ind.push_back(q);
        val.push_back(a);
      }
    ind.push_back(s);
    val.push_back(-1.0);
    const int row = first + static_cast<int>(g);
    glp_set_mat_row(lp.get(), row, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
    glp_set_row_bnds(lp.get(), row, GLP_LO, 0.0, 0.0);
  }
  if (!solved(lp.get())) return {};
  const double best = glp_get_obj_val(lp.get());
  if (!(best > 0)) return {};
  glp_set_col_bnds(lp.get(), s, GLP_LO, best * (1 - 1e-7), 0.0);
  glp_set_obj_coef(lp.get(), s, 0.0);
  std::vector<double> rates = most_even(lp.get(), cols, true);
  if (rates.size() > Q) rates.resize(Q);
  return {rates, best};
}

/// Columns merged by class: class q's crossings the sum of its columns'.
Crossings merged(const Crossings& x, const std::vector<int>& cls, std::size_t Q) {
  Crossings out;
  out.bw = x.bw;
  out.per_channel.assign(x.bw.size(), std::vector<double>(Q, 0.0));
  for (std::size_t r = 0; r < x.bw.size(); ++r)
    for (std::size_t c = 0; c < cls.size(); ++c) out.per_channel[r][static_cast<std::size_t>(cls[c])] += x.per_channel[r][c];
  return out;
}

/// weighted_rates over the resources the channels cross.
std::vector<double> weighted_rates(const Crossings& x, std::size_t C) {
  if (C < 2 || x.bw.empty()) return {};
  // Equal shares: every channel at the rate the most loaded resource allows.
  const double equal = equal_rate(x);
  if (equal <= 0) return {};
  std::vector<double> rates = best_rates(x, C);
  double best = std::accumulate(rates.begin(), rates.end(), 0.0);
  if (rates.empty() || !(best > 0) || static_cast<double>(C) * equal >= (1 - kWeightGain) * best) return {};
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
  return hops.size() < 2 ? std::vector<double>{} : weighted_rates(crossings(t, hops), hops.size());
}

std::vector<double> grouped_rates(const topo::Topology& t, const std::vector<Hops>& hops, const std::vector<int>& group,
                                  const std::vector<int>& tied) {
  const std::size_t C = hops.size();
  if (C < 2 || group.size() != C || *std::min_element(group.begin(), group.end()) < 0) return {};
  if (!tied.empty() && (tied.size() != C || *std::min_element(tied.begin(), tied.end()) < 0)) return {};
  Crossings x = crossings(t, hops);
  if (x.bw.empty()) return {};
  const double equal = equal_rate(x);
  if (equal <= 0) return {};
  const auto G = static_cast<std::size_t>(*std::max_element(group.begin(), group.end()) + 1);
  std::vector<std::vector<double>> coef(G, std::vector<double>(C, 0.0));
  std::vector<int> size(G, 0);
  for (std::size_t c = 0; c < C; ++c) {
    coef[static_cast<std::size_t>(group[c])][c] = 1;
    ++size[static_cast<std::size_t>(group[c])];
  }
  auto [rates, least] = best_grouped_rates(x, coef);
  if (rates.empty()) return {};
  // Tied columns at one rate where that reaches the same least sum (to rounding).
  if (!tied.empty()) {
    const auto Q = static_cast<std::size_t>(*std::max_element(tied.begin(), tied.end()) + 1);
    std::vector<std::vector<double>> tcoef(G, std::vector<double>(Q, 0.0));
    for (std::size_t c = 0; c < C; ++c) tcoef[static_cast<std::size_t>(group[c])][static_cast<std::size_t>(tied[c])] += 1;
    auto [trates, tleast] = best_grouped_rates(merged(x, tied, Q), tcoef);
    if (!trates.empty() && tleast >= least * (1 - 1e-6))
      for (std::size_t c = 0; c < C; ++c) rates[c] = trates[static_cast<std::size_t>(tied[c])];
  }
  double least_equal = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < G; ++g)
    if (size[g] > 0) least_equal = std::min(least_equal, size[g] * equal);
  if (least_equal >= (1 - kWeightGain) * least) return {};
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
  Crossings x = crossings(t, hops);
  std::vector<double> rates = weighted_rates(x, C);
  if (rates.empty()) return {};
  // Of the sums from units / 2 to units, the one whose busiest resource (the channels' crossings
  // of it, each at its units over the sum, over its bandwidth) is least loaded; the largest of
  // equals. Few units round coarsely: a 1024-rank ring gets 16 for 8 channels, where 3,3,1,1,2,2,2,2
  // of 16 load the busiest NIC with 3 / 16 of a slice and 2,2,1,1,2,2,2,2 of 14 with 1 / 7, the
  // LP's own. The load, not each channel's units over its LP rate: a channel the LP all but
  // starves (1 unit of 512 where a host short of a GPU doubles a NIC's rings) still gets a unit,
  // and over its own near-zero rate that unit read as the slowest, whatever the sum (a 1023-rank
  // ring took 3,2,2,2,1,2,2,2 of 16: 1.51 x the bound, the busiest NIC at 3 / 16).
  auto time_of = [&](const std::vector<int>& w, int u) {
    double busiest = 0;
    for (std::size_t r = 0; r < x.bw.size(); ++r) {
      double load = 0;
      for (std::size_t c = 0; c < C; ++c) load += x.per_channel[r][c] * w[c];
      busiest = std::max(busiest, load / x.bw[r]);
    }
    return busiest / u;
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
