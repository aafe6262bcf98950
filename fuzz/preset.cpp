// Node presets (configs/nodes/*.json, COLLKIT_CONFIGS, coll-topo synth --node; libs/topo/src/
// preset.cpp) with their template language: parse the preset with its default parameters, then
// save the node as collkit.topology/1 and load that again. An input whose first line is
// "#params name=value,..." binds parameters as a spec "preset:name=value,..." does.
#include "collkit/topo/io.h"
#include "collkit/topo/synth.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& input) {
    std::string text = input;
    std::map<std::string, std::string> params;
    if (text.starts_with("#params ")) {
      auto eol = text.find('\n');
      params = collkit::topo::parse_spec("fuzz:" + text.substr(8, eol == std::string::npos ? std::string::npos : eol - 8)).params;
      text = eol == std::string::npos ? std::string() : text.substr(eol + 1);
    }
    collkit::topo::NodePreset p = collkit::topo::parse_node_preset(text, "fuzz.json", params);
    std::string saved = collkit::topo::to_json(p.node);
    collkit::topo::Topology again = collkit::topo::from_json(saved, "saved.json");
    collkit::fuzz::require(again.fingerprint() == p.node.fingerprint());
  });
}
