// collkit.model/1 (coll-overlap --model FILE, libs/overlap/src/model.cpp): parse, then the
// parameter counts coll-overlap models prints.
#include "collkit/overlap/model.h"

#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    collkit::overlap::Model m = collkit::overlap::parse_model(text, "fuzz.json");
    collkit::fuzz::require(collkit::overlap::parameter_count(m) > 0);
  });
}
