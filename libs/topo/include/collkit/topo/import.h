#pragma once
// Import of foreign topology descriptions.

#include <string>

#include "collkit/topo/topology.h"

namespace collkit::topo {

/// NCCL's topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE). Errors name the file and element;
/// what the file leaves out (NVLinks on a PCIe-only dump, the inter-host fabric) goes to notes.
Topology import_nccl_xml(const std::string& text, const std::string& file);
Topology import_nccl_xml_file(const std::string& path);

}  // namespace collkit::topo
