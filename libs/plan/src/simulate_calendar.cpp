// The Queue model's per-resource reservations (simulate_internal.h, Calendar).

#include <algorithm>
#include <iterator>
#include <utility>

#include "simulate_internal.h"

namespace collkit::plan::sim {

double Calendar::earliest(double from, double d) const {
  double t = from;
  // The first interval that ends after `from`: everything before it is over by then.
  auto it = std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), from + tol(from),
                             [](double x, const std::pair<double, double>& iv) { return x < iv.second; });
  for (; it != busy_.end(); ++it) {
    if (it->first >= t + d - tol(t + d)) return t;  // the gap before this interval holds it
    t = std::max(t, it->second);
  }
  return t;
}

void Calendar::reserve(double a, double b, double now) {
  while (head_ < busy_.size() && busy_[head_].second <= now - tol(now)) ++head_;
  if (head_ > 32 && 2 * head_ > busy_.size()) {
    busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  // Insert in start order, merging with neighbours it touches (to within rounding).
  auto it = std::lower_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), a,
                             [](const std::pair<double, double>& iv, double x) { return iv.first < x; });
  if (it != busy_.begin() + static_cast<std::ptrdiff_t>(head_) && std::prev(it)->second >= a - tol(a)) {
    --it;
    it->second = std::max(it->second, b);
  } else {
    it = busy_.insert(it, {a, b});
  }
  auto next = std::next(it);
  while (next != busy_.end() && next->first <= it->second + tol(it->second)) {
    it->second = std::max(it->second, next->second);
    next = busy_.erase(next);
  }
}

}  // namespace collkit::plan::sim
