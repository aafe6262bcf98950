// The Queue model's profiles of resource use and the admission of transfers into them
// (simulate_internal.h, Profile and Admission; simulate.cpp's header).

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "simulate_internal.h"

namespace collkit::plan::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_rate(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// Appends [a, b) at `rate` to `out`, joined to the last segment where they touch at one rate.
// Slivers shorter than rounding are left out.
template <class S>
void append(std::vector<S>& out, double a, double b, double rate) {
  if (b - a <= Profile::tol(a) || rate <= 0) return;
  if (!out.empty() && out.back().end >= a - Profile::tol(a) && same_rate(out.back().rate, rate)) {
    out.back().end = std::max(out.back().end, b);
    return;
  }
  out.push_back({a, b, rate});
}

}  // namespace

std::size_t Profile::first_after(double t) const {
  // Mostly the first segment still held, or none: no search.
  if (head_ == seg_.size() || seg_[head_].end > t + tol(t)) return head_;
  auto it = std::upper_bound(seg_.begin() + static_cast<std::ptrdiff_t>(head_), seg_.end(), t + tol(t),
                             [](double x, const Segment& s) { return x < s.end; });
  return static_cast<std::size_t>(it - seg_.begin());
}

void Profile::add(const Piece* p, std::size_t n, double shift, double now, std::vector<Segment>& merged) {
  if (n == 0) return;
  while (head_ < seg_.size() && seg_[head_].end <= now - tol(now)) ++head_;
  if (head_ > 32 && 2 * head_ > seg_.size()) {
    seg_.erase(seg_.begin(), seg_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  double a = p[0].begin + shift, b = p[n - 1].end + shift;
  // The segments [lo, hi) that overlap [a, b) are merged with the pieces.
  std::size_t lo = first_after(a);
  // The common case: one piece in a gap (or after the last segment), at most joined to its
  // neighbours.
  if (n == 1 && (lo == seg_.size() || seg_[lo].begin >= b - tol(b))) {
    bool left = lo > head_ && seg_[lo - 1].end >= a - tol(a) && same_rate(seg_[lo - 1].rate, p[0].rate);
    bool right = lo < seg_.size() && seg_[lo].begin <= b + tol(b) && same_rate(seg_[lo].rate, p[0].rate);
    if (left && right) {
      seg_[lo - 1].end = seg_[lo].end;
      seg_.erase(seg_.begin() + static_cast<std::ptrdiff_t>(lo));
    } else if (left) {
      seg_[lo - 1].end = b;
    } else if (right) {
      seg_[lo].begin = a;
    } else {
      seg_.insert(seg_.begin() + static_cast<std::ptrdiff_t>(lo), Segment{a, b, p[0].rate});
    }
    return;
  }
  std::size_t hi = lo;
  while (hi < seg_.size() && seg_[hi].begin < b - tol(b)) ++hi;

  // A sweep over both step functions: the sum of the two on every stretch between breakpoints.
  merged.clear();
  std::size_t i = lo, j = 0;
  double t = std::min(a, lo < hi ? seg_[lo].begin : a);
  while (i < hi || j < n) {
    double used = 0, next = kInf;
    if (i < hi) {
      if (seg_[i].begin <= t + tol(t)) {
        used += seg_[i].rate;
        next = seg_[i].end;
      } else {
        next = seg_[i].begin;
      }
    }
    if (j < n) {
      double pa = p[j].begin + shift, pb = p[j].end + shift;
      if (pa <= t + tol(t)) {
        used += p[j].rate;
        next = std::min(next, pb);
      } else {
        next = std::min(next, pa);
      }
    }
    append(merged, t, next, used);
    t = next;
    while (i < hi && seg_[i].end <= t + tol(t)) ++i;
    while (j < n && p[j].end + shift <= t + tol(t)) ++j;
  }
  // Joined to the neighbours where they touch at one rate.
  if (lo > head_ && !merged.empty() && seg_[lo - 1].end >= merged.front().begin - tol(merged.front().begin) &&
      same_rate(seg_[lo - 1].rate, merged.front().rate)) {
    merged.front().begin = seg_[--lo].begin;
  }
  if (hi < seg_.size() && !merged.empty() && seg_[hi].begin <= merged.back().end + tol(merged.back().end) &&
      same_rate(seg_[hi].rate, merged.back().rate)) {
    merged.back().end = seg_[hi++].end;
  }
  auto first = seg_.begin() + static_cast<std::ptrdiff_t>(lo);
  std::size_t old = hi - lo;
  if (merged.size() <= old) {
    std::copy(merged.begin(), merged.end(), first);
    seg_.erase(first + static_cast<std::ptrdiff_t>(merged.size()), first + static_cast<std::ptrdiff_t>(old));
  } else {
    std::copy(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(old), first);
    seg_.insert(seg_.begin() + static_cast<std::ptrdiff_t>(hi), merged.begin() + static_cast<std::ptrdiff_t>(old), merged.end());
  }
}

Admission::Admitted Admission::admit(const Hop* hops, std::uint32_t n, double from, double bytes, double now, std::uint32_t stores) {
  double cap = kInf;  // what the route carries alone: its slowest hop's rate
  for (std::uint32_t h = 0; h < n; ++h) cap = std::min(cap, hops[h].rate);
  at_.resize(n);
  rate_.resize(n);
  served_.assign(n, 0.0);
  if (pieces_.size() < n) pieces_.resize(n);
  for (std::uint32_t h = 0; h < n; ++h) {
    pieces_[h].clear();
    at_[h] = hops[h].profile->first_after(from + hops[h].lambda_us);
  }
  const double eps = 1e-9 * bytes;
  // Bytes that may wait in front of hop h: the whole message where a switch stores it.
  auto room = [&](std::uint32_t h) { return h < 32 && (stores >> h & 1u) ? bytes : 0.0; };
  double t = from, left = from;
  // Time runs at the source: hop h sees a byte lambda_h after it left, had it not waited.
  // served_[h]: bytes past hop h; in front of hop h > 0 wait served_[h - 1] - served_[h], at most
  // room(h). The steps end exactly where a hop's room changes or a transfer's bytes run out (to
  // within eps bytes), so a transfer that ends as a hop fills up is done there: the sum of its
  // rates times the times, rounded, once left a few bytes' sliver behind the whole full stretch.
  while (served_[n - 1] < bytes) {
    // What each hop has left now, and when that next changes (a full hop: the end of its full
    // stretch, whatever the others do meanwhile).
    double next = kInf;
    for (std::uint32_t h = 0; h < n; ++h) {
      const std::vector<Profile::Segment>& s = hops[h].profile->segments();
      double x = t + hops[h].lambda_us;
      std::size_t i = at_[h];
      while (i < s.size() && s[i].end <= x + Profile::tol(x)) ++i;
      at_[h] = i;
      double free = hops[h].rate, until = kInf;
      if (i < s.size()) {
        if (s[i].begin > x + Profile::tol(x)) {
          until = s[i].begin;
        } else {
          free = hops[h].rate - s[i].rate;
          std::size_t j = i;
          if (free <= 1e-9 * hops[h].rate) {
            free = 0;
            while (j + 1 < s.size() && s[j + 1].begin <= s[j].end + Profile::tol(s[j].end) &&
                   hops[h].rate - s[j + 1].rate <= 1e-9 * hops[h].rate)
              ++j;
          }
          until = s[j].end;
        }
      }
      next = std::min(next, until - hops[h].lambda_us);
      // Forward: a hop with bytes waiting in front of it serves as fast as it has room (never
      // faster than the route carries a lone transfer); one without, no faster than they come.
      double r = std::min(free, cap);
      if (served_[h] == bytes) r = 0;  // done here (snapped below)
      else if (h > 0 && served_[h - 1] < bytes && served_[h - 1] - served_[h] <= eps) r = std::min(r, rate_[h - 1]);
      rate_[h] = r;
    }
    // Back: a hop whose buffer in front is full holds the one before it to its own pace.
    for (std::uint32_t h = n - 1; h > 0; --h)
      if (served_[h - 1] - served_[h] >= room(h) - eps) rate_[h - 1] = std::min(rate_[h - 1], rate_[h]);
    // The step: up to the next change of room, a buffer running empty or full, a hop done.
    double dt = next - t;
    if (rate_[0] > 0) dt = std::min(dt, (bytes - served_[0]) / rate_[0]);
    for (std::uint32_t h = 1; h < n; ++h) {
      double waiting = served_[h - 1] - served_[h], grow = rate_[h - 1] - rate_[h];
      if (grow < 0 && waiting > 0) dt = std::min(dt, waiting / -grow);
      else if (grow > 0 && room(h) - waiting > eps) dt = std::min(dt, (room(h) - waiting) / grow);
    }
    if (rate_[n - 1] > 0) dt = std::min(dt, (bytes - served_[n - 1]) / rate_[n - 1]);
    if (!(dt < kInf)) throw std::logic_error("simulate: a transfer waits for room that never comes");
    dt = std::max(dt, 0.0);
    for (std::uint32_t h = 0; h < n; ++h) {
      if (rate_[h] > 0) {
        append(pieces_[h], t, t + dt, rate_[h]);
        served_[h] += rate_[h] * dt;
      }
      if (h > 0) served_[h] = std::min(served_[h], served_[h - 1]);
      if (served_[h] >= bytes - eps) served_[h] = bytes;  // within rounding of done: done
    }
    t += dt;
    if (left == from && served_[0] == bytes) left = t;
  }
  for (std::uint32_t h = 0; h < n; ++h) hops[h].profile->add(pieces_[h].data(), pieces_[h].size(), hops[h].lambda_us, now, merged_);
  return {left, t};
}

}  // namespace collkit::plan::sim
