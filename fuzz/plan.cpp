// collkit.plan/1 (libs/plan/src/io.cpp), both forms: a generated plan stored as its algorithm and
// parameters (the compact form) and an explicit plan with every program. Load, save and load
// again (a loaded plan must round-trip); then, for a small plan, what a user does next: coll-plan
// verify (which materialises a generated plan's programs from its parameters) and, when it
// verifies, coll-plan export.
#include "collkit/plan/export.h"
#include "collkit/plan/io.h"
#include "collkit/plan/verify.h"
#include "fuzz.h"

namespace {

// Verification materialises every op; these keep one run in milliseconds. Verify refuses up front
// what would take more than kVerifyMemory (an InputError, as coll-plan verify --max-memory does).
constexpr int kVerifyRanks = 16;
constexpr std::uint64_t kVerifyChunks = 256;
constexpr std::uint64_t kVerifyMemory = std::uint64_t{64} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    auto p = collkit::plan::from_json(text, "fuzz.json");
    std::string saved = collkit::plan::to_json(*p);
    auto again = collkit::plan::from_json(saved, "saved.json");
    collkit::fuzz::require(collkit::plan::to_json(*again) == saved);
    const collkit::plan::PlanInfo& i = p->info();
    if (p->nranks() > kVerifyRanks || i.channels > kVerifyRanks || i.in_chunks > kVerifyChunks || i.out_chunks > kVerifyChunks ||
        i.scratch_chunks > kVerifyChunks)
      return;
    collkit::plan::VerifyResult r = collkit::plan::verify(*p, collkit::plan::ChunkStore::Auto, {}, kVerifyMemory);
    collkit::fuzz::require(r.ok || !r.error.empty());
    if (r.ok) (void)collkit::plan::to_msccl_xml(*p);
  });
}
