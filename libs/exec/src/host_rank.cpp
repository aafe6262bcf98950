#include "host_rank.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace collkit::exec::detail {

std::uint64_t HostRank::bytes_needed(const Setup& s, int rank) {
  const plan::PlanInfo& info = s.plan->info();
  std::uint64_t in = plan::input_bytes(s.job.req), out = plan::output_bytes(s.job.req);
  // Per channel, a receive-and-reduce staging buffer of at most one input's size. Sums saturate:
  // a size near 2^64 once wrapped to a small need, passed the memory check and died in bad_alloc.
  std::uint64_t staging = 0;
  if (__builtin_mul_overflow(std::uint64_t{info.channels}, std::min(in, plan::buffer_bytes(info, plan::Buf::Input)), &staging))
    return UINT64_MAX;
  std::uint64_t total = 0;
  for (std::uint64_t part : {in, out, in_place_offsets(s.job.req, rank).buffer_bytes, std::uint64_t{info.scratch_bytes},
                             s.in_place == InPlaceMode::Staged ? in : 0, staging})
    if (__builtin_add_overflow(total, part, &total)) return UINT64_MAX;
  return total;
}

void HostRank::setup(const Setup& s, int rank) {
  setup_ = s;
  rank_ = rank;
  program_ = compile(*s.plan, rank);
  runner_ = std::make_unique<Runner>(program_, s.job.type, s.job.op, s.timeout_s);
  const plan::Request& req = s.job.req;
  send_.assign(plan::input_bytes(req), std::byte{0});
  recv_.assign(plan::output_bytes(req), std::byte{0});
  ip_ = in_place_offsets(req, rank);
  inplace_.assign(ip_.buffer_bytes, std::byte{0});
  scratch_.assign(s.plan->info().scratch_bytes, std::byte{0});
  stage_.assign(s.in_place == InPlaceMode::Staged ? send_.size() : 0, std::byte{0});
}

void HostRank::write_input(Placement p, std::span<const std::byte> data) {
  std::byte* dst = p == Placement::OutOfPlace ? send_.data() : inplace_.data() + ip_.input_offset;
  std::memcpy(dst, data.data(), data.size());
}

const std::byte* HostRank::output(Placement p) const {
  return p == Placement::OutOfPlace ? recv_.data() : inplace_.data() + ip_.output_offset;
}

void HostRank::run(Transport& transport, Placement p) {
  std::array<std::byte*, 3> regions{send_.data(), recv_.data(), scratch_.data()};
  if (p == Placement::InPlace) {
    regions[0] = inplace_.data() + ip_.input_offset;
    regions[1] = inplace_.data() + ip_.output_offset;
    if (setup_.in_place == InPlaceMode::Staged) {
      std::memcpy(stage_.data(), regions[0], stage_.size());
      regions[0] = stage_.data();
    }
  }
  runner_->run(transport, regions);
  finish_mean(regions[1]);
}

void HostRank::finish_mean(std::byte* out) const {
  const plan::Request& req = setup_.job.req;
  if (setup_.job.op != RedOp::Avg || !plan::facts(req.coll).reduces) return;
  if (req.coll == plan::Collective::Reduce && rank_ != req.root) return;
  scale_mean(setup_.job.type, out, output_count(setup_.job), req.nranks);
}

}  // namespace collkit::exec::detail
