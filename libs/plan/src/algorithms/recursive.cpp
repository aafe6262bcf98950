#include "recursive.h"

#include "common.h"

namespace collkit::plan::algo {

Fold::Fold(int nranks) : p(nranks) {
  while (p2 * 2 <= p) p2 *= 2;
  rem = p - p2;
}

int Fold::steps() const {
  int s = 0;
  while ((1 << s) < p2) ++s;
  return s;
}

void doubling_allgather(std::vector<Op>& ops, const Fold& f, int v, const std::function<std::uint32_t(int)>& start,
                        std::uint16_t ch) {
  for (int mask = 1; mask < f.p2; mask <<= 1) {
    int partner = v ^ mask;
    int mine = v & ~(mask - 1), theirs = partner & ~(mask - 1);
    std::uint32_t a = start(mine), b = start(mine + mask);
    std::uint32_t c = start(theirs), d = start(theirs + mask);
    ops.push_back(send(f.real(partner), out(a), b - a, ch));
    ops.push_back(recv(f.real(partner), out(c), d - c, ch));
  }
}

// Output chunk c is rank c's slice; virtual rank v holds ranks [first(v), first(v+1)).
void folded_allgather(std::vector<Op>& ops, const Fold& f, int r) {
  auto ur = static_cast<std::uint32_t>(r), up = static_cast<std::uint32_t>(f.p);
  ops.push_back(copy(in(0), out(ur), 1, 0));
  if (f.p == 1) return;
  if (f.sits_out(r)) {
    ops.push_back(send(r + 1, in(0), 1, 0));
    if (r > 0) ops.push_back(recv(r + 1, out(0), ur, 0));
    ops.push_back(recv(r + 1, out(ur + 1), up - ur - 1, 0));
    return;
  }
  if (f.absorbs(r)) ops.push_back(recv(r - 1, out(ur - 1), 1, 0));
  doubling_allgather(ops, f, f.virt(r), [&f](int v) { return static_cast<std::uint32_t>(f.first(v)); }, 0);
  if (f.absorbs(r)) {
    // Everything but the partner's own slice.
    if (r - 1 > 0) ops.push_back(send(r - 1, out(0), ur - 1, 0));
    ops.push_back(send(r - 1, out(ur), up - ur, 0));
  }
}

void halving_reduce_scatter(std::vector<Op>& ops, const Fold& f, int v, const std::function<std::uint32_t(int)>& start,
                            Buf acc, bool acc_ready, std::uint16_t ch) {
  int lo = 0, size = f.p2;  // current range of virtual blocks [lo, lo + size)
  bool first = !acc_ready;
  for (int mask = f.p2 / 2; mask >= 1; mask >>= 1) {
    int partner = v ^ mask;
    int half = size / 2;
    int keep = (v & mask) ? lo + half : lo;
    int give = (v & mask) ? lo : lo + half;
    std::uint32_t ga = start(give), gb = start(give + half);
    std::uint32_t ka = start(keep), kb = start(keep + half);
    ChunkRef from{first ? Buf::Input : acc, ga};
    ops.push_back(send(f.real(partner), from, gb - ga, ch));
    ChunkRef base{first ? Buf::Input : acc, ka};
    ops.push_back(recv_reduce(f.real(partner), base, ChunkRef{acc, ka}, kb - ka, ch));
    first = false;
    lo = keep;
    size = half;
  }
}

std::vector<SymmetryAxis> xor_axes(const PlanInfo& info) {
  int p = info.req.nranks;
  if (p < 2 || (p & (p - 1)) != 0) return {};
  if (!symmetric_chunks(info)) return {};
  std::vector<SymmetryAxis> axes;
  for (int s = 1; s < p; s *= 2) {
    SymmetryAxis a;
    a.order = 2;
    for (int r = 0; r < p; ++r) a.rank.push_back(r ^ s);
    for (int c = 0; c < std::max<int>(1, info.channels); ++c) a.channel.push_back(c);
    axes.push_back(std::move(a));
  }
  return axes;
}

}  // namespace collkit::plan::algo
