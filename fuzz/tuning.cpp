// collkit.tuning/1 (libs/plan/src/tuning.cpp; coll-run --autotune and the NCCL tuner plugin read
// it): read, look sizes up as the plugin does, write and read again (a table read must round-trip).
#include "collkit/plan/tuning.h"

#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    collkit::plan::TuningTable t = collkit::plan::read_tuning_table("fuzz.json", text);
    for (std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{1} << 20, collkit::plan::kTuningMaxBytes}) (void)t.find(bytes);
    std::string written = collkit::plan::write_tuning_table(t);
    collkit::plan::TuningTable again = collkit::plan::read_tuning_table("written.json", written);
    collkit::fuzz::require(collkit::plan::write_tuning_table(again) == written);
  });
}
