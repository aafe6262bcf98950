// collkit.topology/1 (libs/topo/src/io.cpp), its calibration block included: load, then what
// coll-topo show and validate do, then save and load again (a loaded topology must round-trip).
#include "collkit/topo/io.h"
#include "collkit/topo/show.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    collkit::topo::Topology t = collkit::topo::from_json(text, "fuzz.json");
    (void)collkit::topo::summary(t);
    (void)collkit::topo::matrix(t, 0, 16);
    std::string saved = collkit::topo::to_json(t);
    collkit::topo::Topology again = collkit::topo::from_json(saved, "saved.json");
    collkit::fuzz::require(again.fingerprint() == t.fingerprint() && collkit::topo::to_json(again) == saved);
  });
}
