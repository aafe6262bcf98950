#include "collkit/core/error.h"

namespace collkit {

int exit_code_for(const std::exception& e) noexcept {
  if (dynamic_cast<const InputError*>(&e)) return 2;
  if (dynamic_cast<const SystemError*>(&e)) return 3;
  if (dynamic_cast<const UnsupportedError*>(&e)) return 4;
  return 1;
}

}  // namespace collkit
