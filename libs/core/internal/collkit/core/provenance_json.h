#pragma once
// Internal to collkit's libraries: the "provenance" object every artifact writer emits
// (collkit/core/provenance.h says what it holds).

#include <nlohmann/json.hpp>
#include <string>

namespace collkit {

/// {"tool", "version", "command", "date"} of this process; library use (no tool's main set it)
/// has tool "library" and no "command".
nlohmann::json provenance_json();

/// `object`, a JSON object's text as nlohmann's dump(indent) writes it (a final newline kept),
/// with "provenance" appended as its last member, on one line: a long command line stays one line
/// of the file, and every artifact has it in the same place.
std::string append_provenance(std::string object, int indent);

}  // namespace collkit
