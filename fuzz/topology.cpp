// collkit.topology/1 (libs/topo/src/io.cpp), its calibration block included: load, then what
// coll-topo show and validate do, then save and load again (a loaded topology must round-trip).
// Both loaders run on each input: whatever the streaming fast path accepts, the DOM loader must
// accept too and read the same topology; what the DOM loader refuses, the fast path must refuse.
#include <optional>

#include "collkit/core/error.h"
#include "collkit/topo/io.h"
#include "collkit/topo/show.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    std::optional<collkit::topo::Topology> fast = collkit::topo::from_json_fast(text, "fuzz.json");
    std::optional<collkit::topo::Topology> dom;
    try {
      dom = collkit::topo::from_json_dom(text, "fuzz.json");
    } catch (const collkit::InputError&) {
      collkit::fuzz::require(!fast);
      throw;
    }
    collkit::topo::Topology& t = *dom;
    if (fast) collkit::fuzz::require(fast->fingerprint() == t.fingerprint() && collkit::topo::to_json(*fast) == collkit::topo::to_json(t));
    (void)collkit::topo::summary(t);
    (void)collkit::topo::matrix(t, 0, 16);
    std::string saved = collkit::topo::to_json(t);
    collkit::topo::Topology again = collkit::topo::from_json(saved, "saved.json");
    collkit::fuzz::require(again.fingerprint() == t.fingerprint() && collkit::topo::to_json(again) == saved);
  });
}
