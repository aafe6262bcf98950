#include "common.h"

#include <charconv>
#include <cmath>

#include "collkit/core/error.h"

namespace collkit::plan::algo {

int param_int(const PlanInfo& info, const std::string& key, int fallback) {
  auto it = info.params.find(key);
  if (it == info.params.end()) return fallback;
  int v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size())
    throw InputError("plan parameter " + key + "=\"" + it->second + "\": expected an integer");
  return v;
}

double param_positive(const PlanInfo& info, const std::string& key, double fallback) {
  auto it = info.params.find(key);
  if (it == info.params.end()) return fallback;
  double v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || !std::isfinite(v) || v <= 0)
    throw InputError("plan parameter " + key + "=\"" + it->second + "\": expected a positive number");
  return v;
}

std::vector<int> param_ints(const std::string& name, const std::string& text, int lo, int hi, const std::string& what) {
  std::vector<int> v;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (;;) {
    int x = 0;
    auto [q, ec] = std::from_chars(p, end, x);
    if (ec != std::errc() || x < lo || x > hi || (q != end && *q != ','))
      throw InputError(name + "=\"" + text + "\": expected " + what + ", comma-separated");
    v.push_back(x);
    if (q == end) return v;
    p = q + 1;
  }
}

std::vector<int> param_order(const PlanInfo& info, const std::string& key, int n) {
  std::vector<int> order;
  auto it = info.params.find(key);
  if (it == info.params.end() || it->second.empty()) {
    for (int i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  const std::string& s = it->second;
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  const char* p = s.data();
  const char* end = s.data() + s.size();
  while (p < end) {
    int v = 0;
    auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || v < 0 || v >= n || seen[static_cast<std::size_t>(v)])
      throw InputError("plan parameter " + key + ": not a permutation of 0.." + std::to_string(n - 1));
    seen[static_cast<std::size_t>(v)] = 1;
    order.push_back(v);
    p = q;
    if (p < end && *p == ',') ++p;
  }
  if (static_cast<int>(order.size()) != n)
    throw InputError("plan parameter " + key + ": not a permutation of 0.." + std::to_string(n - 1));
  return order;
}

std::shared_ptr<const Order> shared_order(const PlanInfo& info, const std::string& key, int n) {
  struct Entry {
    std::size_t hash;
    std::string text;
    int n;
    std::shared_ptr<const Order> order;
  };
  // Enough for a ring of 32 channels, each with an order of its own (ring_for asks for every
  // channel's in turn, rank after rank); the text's hash is compared first, so a lookup reads
  // the whole text only where it is found.
  constexpr std::size_t kKept = 64;
  thread_local std::vector<Entry> kept;
  auto it = info.params.find(key);
  const std::string none;
  const std::string& text = it == info.params.end() ? none : it->second;
  std::size_t hash = std::hash<std::string>{}(text);
  for (const Entry& e : kept)
    if (e.hash == hash && e.n == n && e.text == text) return e.order;
  auto order = std::make_shared<Order>();
  order->at = param_order(info, key, n);
  order->pos.assign(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) order->pos[static_cast<std::size_t>(order->at[static_cast<std::size_t>(i)])] = i;
  if (kept.size() == kKept) kept.erase(kept.begin());
  kept.push_back({hash, text, n, order});
  return order;
}

std::string format_order(const std::vector<int>& order) {
  std::string s;
  for (std::size_t i = 0; i < order.size(); ++i) s += (i ? "," : "") + std::to_string(order[i]);
  return s;
}

}  // namespace collkit::plan::algo
