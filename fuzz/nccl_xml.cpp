// NCCL's topology XML (coll-topo import --nccl-xml, libs/topo/src/import_nccl_xml.cpp): import,
// then what import does next: save it as collkit.topology/1 and load that again.
#include "collkit/topo/import.h"
#include "collkit/topo/io.h"
#include "collkit/topo/show.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    collkit::topo::Topology t = collkit::topo::import_nccl_xml(text, "fuzz.xml");
    (void)collkit::topo::summary(t);
    std::string saved = collkit::topo::to_json(t);
    collkit::topo::Topology again = collkit::topo::from_json(saved, "saved.json");
    collkit::fuzz::require(again.fingerprint() == t.fingerprint());
  });
}
