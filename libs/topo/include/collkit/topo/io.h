#pragma once
// collkit.topology/1 JSON files (docs/topology.md).

#include <string>

#include "collkit/topo/topology.h"

namespace collkit::topo {

inline constexpr int kTopologySchemaMajor = 1;

/// Serialises to collkit.topology/1 text (indented, ends with a newline).
std::string to_json(const Topology& t);

/// Parses collkit.topology/1 text. `file` names the source in errors, which are InputErrors of the
/// form "<file>: <json pointer>: <what is wrong>"; the result has passed check_connected().
Topology from_json(const std::string& text, const std::string& file);

/// Reads and parses a file.
Topology load(const std::string& path);
/// Writes atomically ("-" is stdout).
void save(const Topology& t, const std::string& path);

}  // namespace collkit::topo
