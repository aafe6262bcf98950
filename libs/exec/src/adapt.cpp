// Slow links and ranks: the --inject grammar, finding slow pairs in a probe's times, and a ring
// order around them (adapt.h).

#include "collkit/exec/adapt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "collkit/core/error.h"
#include "collkit/exec/world.h"

namespace collkit::exec {

namespace {

int rank_in(const std::string& text, const std::string& part, int nranks) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v >= nranks)
    throw InputError("--inject " + part + ": \"" + text + "\" is not a rank of 0.." + std::to_string(nranks - 1));
  return static_cast<int>(v);
}

}  // namespace

double Injection::factor(int from, int to) const {
  double f = 1;
  int a = std::min(from, to), b = std::max(from, to);
  for (const Slow& s : slow)
    if ((s.b < 0 && (s.a == from || s.a == to)) || (s.a == a && s.b == b)) f = std::max(f, s.factor);
  return f;
}

Injection parse_injection(const std::string& spec, int nranks) {
  Injection inj;
  std::size_t at = 0;
  while (at <= spec.size()) {
    std::size_t comma = spec.find(',', at);
    std::string part = spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    auto bad = [&](const std::string& why) { return InputError("--inject \"" + part + "\": " + why); };
    std::size_t eq = part.find('='), colon = part.rfind(":x");
    if (eq == std::string::npos || colon == std::string::npos || colon < eq)
      throw bad("expected slow-link=A-B:xF or slow-rank=R:xF (F a factor >= 1)");
    std::string kind = part.substr(0, eq), what = part.substr(eq + 1, colon - eq - 1), factor = part.substr(colon + 2);
    char* end = nullptr;
    double f = std::strtod(factor.c_str(), &end);
    if (factor.empty() || *end != '\0' || !(f >= 1) || f > 1000)
      throw bad("the factor must be a number from 1 to 1000, got \"" + factor + "\"");
    Injection::Slow s;
    s.factor = f;
    if (kind == "slow-rank") {
      s.a = rank_in(what, part, nranks);
    } else if (kind == "slow-link") {
      std::size_t dash = what.find('-');
      if (dash == std::string::npos) throw bad("a link is two ranks joined by '-', got \"" + what + "\"");
      int a = rank_in(what.substr(0, dash), part, nranks), b = rank_in(what.substr(dash + 1), part, nranks);
      if (a == b) throw bad("a link joins two different ranks");
      s.a = std::min(a, b);
      s.b = std::max(a, b);
    } else {
      throw bad("unknown fault \"" + kind + "\" (expected slow-link or slow-rank)");
    }
    inj.slow.push_back(s);
  }
  return inj;
}

std::vector<std::vector<double>> gather_receive_times(const World& world, const std::vector<double>& mine, double timeout_s) {
  std::ostringstream text;
  text.precision(17);
  for (double us : mine) text << us << ' ';
  std::vector<std::string> all = world.allgather(text.str(), timeout_s);
  std::size_t n = all.size();
  std::vector<std::vector<double>> times(n, std::vector<double>(n, 0));
  for (std::size_t to = 0; to < n; ++to) {
    std::istringstream in(all[to]);
    for (std::size_t from = 0; from < n; ++from) in >> times[from][to];
  }
  return times;
}

std::vector<std::size_t> slow_outliers(const std::vector<double>& values, double min_gap) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] > 0) idx.push_back(i);
  std::size_t k = idx.size();
  if (k < 2) return {};
  std::stable_sort(idx.begin(), idx.end(), [&values](std::size_t x, std::size_t y) { return values[x] < values[y]; });
  auto v = [&](std::size_t j) { return values[idx[j]]; };
  // The healthy set holds at least the lower quartile: a slow rank slows half of a 4-rank ring's
  // pairs, so the slow set may be up to three quarters of them, never all.
  for (std::size_t j = k / 4; j + 1 < k; ++j) {
    double gap = v(j + 1) / v(j), spread = v(j) / v(0);
    // A natural break: wider than min_gap, and wider than the whole band of values below it (the
    // healthy pairs' own spread is the noise a break must stand out of).
    if (gap > min_gap && gap > spread) {
      std::vector<std::size_t> out(idx.begin() + static_cast<std::ptrdiff_t>(j + 1), idx.end());
      // Slowest first; equal times in their order in `values`.
      std::stable_sort(out.begin(), out.end(), [&values](std::size_t x, std::size_t y) { return values[x] > values[y]; });
      return out;
    }
  }
  return {};
}

namespace {

// Every pair measured (a < b) and its time, the slower of its two directions.
std::vector<std::pair<double, std::pair<int, int>>> pair_times(const std::vector<std::vector<double>>& times) {
  std::vector<std::pair<double, std::pair<int, int>>> out;
  int n = static_cast<int>(times.size());
  auto at = [&times](int from, int to) {
    const auto& row = times[static_cast<std::size_t>(from)];
    return to < static_cast<int>(row.size()) ? row[static_cast<std::size_t>(to)] : 0.0;
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      double t = std::max(at(a, b), at(b, a));
      if (t > 0) out.push_back({t, {a, b}});
    }
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> slow_pairs(const std::vector<std::vector<double>>& times, double min_gap) {
  auto pairs = pair_times(times);
  std::vector<double> values;
  for (const auto& p : pairs) values.push_back(p.first);
  std::vector<std::pair<int, int>> out;
  for (std::size_t i : slow_outliers(values, min_gap)) out.push_back(pairs[i].second);
  return out;
}

double healthy_pair_time(const std::vector<std::vector<double>>& times, const std::vector<std::pair<int, int>>& found) {
  std::vector<double> healthy;
  for (const auto& [t, pr] : pair_times(times))
    if (std::find(found.begin(), found.end(), pr) == found.end()) healthy.push_back(t);
  if (healthy.empty()) return 0;
  std::sort(healthy.begin(), healthy.end());
  return healthy[healthy.size() / 2];
}

std::vector<std::pair<int, int>> ring_pairs(const std::vector<int>& order) {
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = 0; i < order.size() && order.size() > 1; ++i) {
    int a = order[i], b = order[(i + 1) % order.size()];
    if (order.size() == 2 && i == 1) break;  // two ranks: one pair
    out.push_back({std::min(a, b), std::max(a, b)});
  }
  return out;
}

std::vector<int> ring_order_avoiding(int n, const std::vector<std::pair<int, int>>& avoid) {
  std::vector<int> identity(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) identity[static_cast<std::size_t>(i)] = i;
  // Each pair to avoid weighs more than all after it together: where not every pair can be
  // avoided, the first ones (the slowest, as slow_pairs() orders them) are.
  std::vector<std::vector<double>> bad(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n), 0));
  double weight = 1;
  for (auto it = avoid.rbegin(); it != avoid.rend(); ++it, weight *= 2) {
    auto [a, b] = *it;
    if (a >= 0 && b >= 0 && a < n && b < n && a != b)
      bad[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = bad[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)] =
          weight;
  }
  auto cost = [&](const std::vector<int>& order) {
    double c = 0;
    for (auto [a, b] : ring_pairs(order)) c += bad[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
    return c;
  };
  if (n < 3 || cost(identity) == 0) return identity;
  // A cycle through every rank on the pairs left: depth-first from rank 0, trying the nearest rank
  // numbers first (the order stays close to the identity), within a bounded number of steps.
  std::vector<int> path{0};
  std::vector<char> used(static_cast<std::size_t>(n), 0);
  used[0] = 1;
  long budget = 200000;
  std::function<bool()> extend = [&]() -> bool {
    if (--budget < 0) return false;
    int last = path.back();
    if (static_cast<int>(path.size()) == n) return bad[static_cast<std::size_t>(last)][0] == 0;
    for (int step = 1; step < n; ++step) {
      int next = (last + step) % n;
      if (used[static_cast<std::size_t>(next)] || bad[static_cast<std::size_t>(last)][static_cast<std::size_t>(next)] > 0) continue;
      used[static_cast<std::size_t>(next)] = 1;
      path.push_back(next);
      if (extend()) return true;
      path.pop_back();
      used[static_cast<std::size_t>(next)] = 0;
    }
    return false;
  };
  if (extend()) return path;
  // None found in the budget: swaps that lower the weight of the avoided pairs used, from the identity.
  std::vector<int> best = identity;
  double best_cost = cost(best);
  for (bool improved = true; improved && best_cost > 0;) {
    improved = false;
    for (int i = 1; i < n && !improved; ++i)
      for (int j = i + 1; j < n && !improved; ++j) {
        std::vector<int> t = best;
        std::swap(t[static_cast<std::size_t>(i)], t[static_cast<std::size_t>(j)]);
        double c = cost(t);
        if (c < best_cost) best = t, best_cost = c, improved = true;
      }
  }
  return best;
}

}  // namespace collkit::exec

namespace collkit::exec {

std::string Adaptation::describe() const {
  if (straggler >= 0) return "straggler around rank " + std::to_string(straggler);
  if (order.empty()) return "plain ring";
  std::string text = "ring ";
  for (std::size_t i = 0; i < order.size(); ++i) text += (i ? "," : "") + std::to_string(order[i]);
  return text;
}

int slow_rank(const std::vector<std::pair<int, int>>& found) {
  // The rank in the most slow pairs, when it is in two or more and no other rank is in as many: a
  // pair between two other ranks is a slow link besides, or a false alarm (a rank not scheduled).
  if (found.empty()) return -1;
  std::vector<int> count;
  for (auto [a, b] : found)
    for (int r : {a, b}) {
      if (r < 0) continue;
      if (static_cast<std::size_t>(r) >= count.size()) count.resize(static_cast<std::size_t>(r) + 1, 0);
      ++count[static_cast<std::size_t>(r)];
    }
  // A slow rank slows every pair it is in, the slowest (found's first) too: only its two ends are
  // weighed (noise that names pairs elsewhere cannot pick a third rank).
  int best = -1, ties = 0;
  for (int r = 0; r < static_cast<int>(count.size()); ++r) {
    if (r != found.front().first && r != found.front().second) continue;
    int c = count[static_cast<std::size_t>(r)];
    if (best < 0 || c > count[static_cast<std::size_t>(best)]) best = r, ties = 1;
    else if (c == count[static_cast<std::size_t>(best)]) ++ties;
  }
  return best >= 0 && count[static_cast<std::size_t>(best)] >= 2 && ties == 1 ? best : -1;
}

Adaptation adapt_to(int n, const std::vector<std::pair<int, int>>& found, bool allreduce) {
  Adaptation a;
  a.order = ring_order_avoiding(n, found);
  std::vector<std::pair<int, int>> kept = ring_pairs(a.order);
  bool avoided =
      std::none_of(found.begin(), found.end(), [&kept](const auto& p) { return std::find(kept.begin(), kept.end(), p) != kept.end(); });
  int slow = slow_rank(found);
  // Every ring passes through a slow rank twice: a ring that avoids the pairs seen slow so far is
  // tried first (they may be links), and the straggler plan once no ring avoids them.
  if (!avoided && allreduce && slow >= 0) {
    a.straggler = slow;
    a.order.clear();
  }
  return a;
}

std::vector<Adaptation> candidates(int n, const std::vector<std::pair<int, int>>& found, bool allreduce) {
  std::vector<Adaptation> out;
  Adaptation ring;
  ring.order = ring_order_avoiding(n, found);
  if (!std::is_sorted(ring.order.begin(), ring.order.end())) out.push_back(ring);
  int slow = slow_rank(found);
  if (allreduce && slow >= 0) {
    Adaptation s;
    s.straggler = slow;
    out.push_back(s);
  }
  return out;
}

std::vector<std::vector<double>> extra_us_per_mib(const std::vector<std::vector<double>>& best,
                                                  const std::vector<std::pair<int, int>>& found) {
  std::size_t n = best.size();
  std::vector<std::vector<double>> extra(n, std::vector<double>(n, 0));
  double healthy = healthy_pair_time(best, found);
  auto measured = [&best](std::size_t a, std::size_t b) {
    double x = b < best[a].size() ? best[a][b] : 0, y = a < best[b].size() ? best[b][a] : 0;
    return std::max(x, y);
  };
  int slow = slow_rank(found);
  double slow_sum = 0;
  int slow_count = 0;
  for (auto [a, b] : found) {
    if (a < 0 || b < 0 || static_cast<std::size_t>(b) >= n) continue;
    auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    double e = std::max(0.0, measured(ua, ub) - healthy);
    extra[ua][ub] = extra[ub][ua] = e;
    if (a == slow || b == slow) slow_sum += e, ++slow_count;
  }
  if (slow >= 0 && slow_count > 0)
    for (std::size_t r = 0; r < n; ++r) {
      auto us = static_cast<std::size_t>(slow);
      if (r != us && measured(r, us) <= 0) extra[r][us] = extra[us][r] = slow_sum / slow_count;
    }
  return extra;
}

std::string TrialVerdict::describe() const {
  return fmt::format("{}: best {:.0f} us against {:.0f} us ({:+.0f}%, needed below -{:.0f}%)", keep ? "kept" : "rolled back", trial_us,
                     before_us, before_us > 0 ? (trial_us / before_us - 1) * 100 : 0.0, margin * 100);
}

TrialVerdict judge_trial(const std::vector<double>& before_us, const std::vector<double>& trial_us, double min_margin) {
  TrialVerdict v;
  v.margin = min_margin;
  auto best = [](std::vector<double> x) {
    std::erase_if(x, [](double t) { return !(t > 0) || !std::isfinite(t); });
    std::sort(x.begin(), x.end());
    return x;
  };
  // As many iterations of each side, the latest: the ones just before the switch, and the trial's
  // after its first (which may have set the plan up) where it ran more; the best of more draws is
  // lower on a noisy machine, so unequal counts would favour the side with more.
  std::size_t m = std::min(before_us.size(), trial_us.size());
  std::vector<double> before = best(std::vector<double>(before_us.end() - static_cast<std::ptrdiff_t>(m), before_us.end()));
  std::vector<double> trial = best(std::vector<double>(trial_us.end() - static_cast<std::ptrdiff_t>(m), trial_us.end()));
  if (before.empty() || trial.empty()) return v;  // nothing to compare: not kept
  // The noise: how far each side's second-best iteration lies from its best, where a side has three
  // or more (a trial's first iteration sets its plan up); the quieter side's, as the machine's.
  double noise = -1;
  for (const auto* side : {&before, &trial})
    if (side->size() >= 3) noise = noise < 0 ? (*side)[1] / (*side)[0] - 1 : std::min(noise, (*side)[1] / (*side)[0] - 1);
  v.margin = std::max(min_margin, noise);
  v.before_us = before[0];
  v.trial_us = trial[0];
  auto median = [](const std::vector<double>& x) { return x[(x.size() - 1) / 2]; };
  // Its best beats the other's by more than the noise, and its middle iteration is no slower: one
  // lucky iteration does not win.
  v.keep = v.trial_us < v.before_us * (1 - v.margin) && median(trial) <= median(before);
  return v;
}

Detector::Detector(int n, double min_gap)
    : min_gap_(min_gap), best_(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n), 0)) {}

bool Detector::observe(const std::vector<std::vector<double>>& times) {
  for (std::size_t from = 0; from < best_.size() && from < times.size(); ++from)
    for (std::size_t to = 0; to < best_.size() && to < times[from].size(); ++to) {
      double t = times[from][to];
      if (from != to && t > 0 && (best_[from][to] == 0 || t < best_[from][to])) best_[from][to] = t;
    }
  std::vector<std::pair<int, int>> now = slow_pairs(best_, min_gap_);
  // Kept as a set: the order among the slow pairs may change with every iteration.
  std::sort(now.begin(), now.end());
  same_ = now == last_ ? same_ + 1 : 1;
  last_ = now;
  if (same_ < 2 || now.empty()) return false;
  std::vector<std::pair<int, int>> sorted = found_;
  std::sort(sorted.begin(), sorted.end());
  if (now == sorted) return false;
  // In slow_pairs()'s order (slowest first), which adapt_to() weighs.
  found_ = slow_pairs(best_, min_gap_);
  return true;
}

}  // namespace collkit::exec
