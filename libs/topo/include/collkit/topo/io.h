#pragma once
// collkit.topology/1 JSON files (docs/topology.md).

#include <optional>
#include <string>

#include "collkit/topo/topology.h"

namespace collkit::topo {

inline constexpr int kTopologySchemaMajor = 1;

/// Serialises to collkit.topology/1 text (indented, ends with a newline).
std::string to_json(const Topology& t);

/// Parses collkit.topology/1 text. `file` names the source in errors, which are InputErrors of the
/// form "<file>: <json pointer>: <what is wrong>"; the result has passed check_connected().
/// Takes from_json_fast's result when it has one, else from_json_dom's (result or error).
Topology from_json(const std::string& text, const std::string& file);
/// The reference loader: parses the whole text into a DOM, then reads it; every error it gives is
/// the one from_json gives.
Topology from_json_dom(const std::string& text, const std::string& file);
/// The fast path for well-formed files: streams "vertices" and "links" through nlohmann's SAX
/// parser into the Topology (no DOM of them). Returns what from_json_dom would for any text it
/// accepts; nullopt on any problem at all (then from_json_dom gives the error).
std::optional<Topology> from_json_fast(const std::string& text, const std::string& file);

/// Reads and parses a file.
Topology load(const std::string& path);
/// Writes atomically ("-" is stdout).
void save(const Topology& t, const std::string& path);

}  // namespace collkit::topo
