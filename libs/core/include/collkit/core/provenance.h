#pragma once
// Where an artifact came from (issue #15, docs/artifacts.md): every JSON file collkit writes
// carries "provenance": {"tool", "version", "command", "date"}. A tool's main records its name and
// command line once; each writer emits the object (libs' internal collkit/core/provenance_json.h).
// The date honours SOURCE_DATE_EPOCH (reproducible-builds.org), so that two runs of one command
// can write byte-identical files.

#include <cstdint>
#include <string>
#include <vector>

namespace collkit {

struct Provenance {
  std::string tool = "library";      ///< the coll-* tool; "library" when no tool's main set it
  std::string version;               ///< collkit's version, as `--version` prints it
  std::vector<std::string> command;  ///< the tool's argv, word for word; empty for library use
  std::string date;                  ///< UTC, ISO 8601 to the second: "2026-12-05T00:13:01Z"
};

/// Records this process's tool and command line, dated now (or SOURCE_DATE_EPOCH): each app's
/// main, once, before it writes anything and before any other thread starts. InputError when
/// SOURCE_DATE_EPOCH is set but not a whole number of seconds.
void set_provenance(const std::string& tool, int argc, const char* const* argv);

/// What set_provenance recorded; before it (a test or another library user) tool "library" and
/// no command, dated at the first call.
const Provenance& provenance();

/// Seconds since 1970-01-01 00:00 UTC as ISO 8601: 1796429581 -> "2026-12-05T00:13:01Z".
/// InputError outside years 1970-9999.
std::string iso8601_utc(std::int64_t seconds);

/// The date an artifact written now carries: SOURCE_DATE_EPOCH when the variable is set and not
/// empty (InputError when it is not a whole number of seconds in years 1970-9999), else the clock.
std::string artifact_date();

}  // namespace collkit
