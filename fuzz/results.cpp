// collkit.results/1 (coll-plan compare, libs/exec/src/fidelity.cpp): compared as written, with
// the predictions recorded in it. (With --topo each row's plan is simulated again; the plan
// loader has its own target, and the simulator is not a loader.)
#include "collkit/exec/fidelity.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    collkit::exec::Fidelity f = collkit::exec::compare_results("fuzz.json", text, nullptr);
    collkit::fuzz::require(!f.rows.empty() && f.worst_row < f.rows.size());
  });
}
