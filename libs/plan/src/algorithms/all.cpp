#include "all.h"

namespace collkit::plan {

std::vector<AlgorithmFactory> algorithm_factories() {
  return {
      make_ring,
  };
}

}  // namespace collkit::plan
