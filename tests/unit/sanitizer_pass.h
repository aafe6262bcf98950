#pragma once
// Whether the unit tests run in scripts/test.sh's sanitizer pass (COLLKIT_SANITIZER_PASS=1, after
// the main pass has run every test in full). A few tests that loop over cases whose extra work is
// the same code at a larger size (two dgx-a100 hosts' synthesis, every layout of the overlap model)
// run their smaller cases there: the sanitizers need the code paths, not the sizes, and those
// cases took minutes under them (docs/fuzz.md, "The sanitizer pass").

#include <cstdlib>
#include <string_view>

namespace collkit::testing {

inline bool sanitizer_pass() {
  const char* s = std::getenv("COLLKIT_SANITIZER_PASS");
  return s != nullptr && *s != '\0' && std::string_view(s) != "0";
}

}  // namespace collkit::testing
