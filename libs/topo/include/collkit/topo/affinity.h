#pragma once
// Which NICs a GPU (or a CPU holding ranks) sends and receives its traffic to
// other hosts through: NCCL's rail affinity. Routing between hosts leaves the
// source's host through one of the source's NICs and enters the destination's
// host through one of the destination's NICs (routing.h), as NCCL's net
// transport does, rather than letting any NIC that ties serve: two GPUs and two
// NICs on one PCIe switch (DGX A100, HGX H200, MI300X) would otherwise share a
// NIC while the other idles.

#include <vector>

#include "collkit/topo/topology.h"

namespace collkit::topo {

struct NicAffinity {
  /// Per vertex: the NICs its traffic to other hosts uses (GPU and CPU vertices
  /// of hosts with fabric-attached NICs); empty: no restriction.
  std::vector<std::vector<VertexId>> nics;
  /// Per vertex: a small id shared by vertices with the same NIC list; -1 for
  /// an empty one.
  std::vector<int> set;
  /// The NIC lists by set id.
  std::vector<std::vector<VertexId>> sets;
  /// Is NIC `nic` one of v's (true when v has no affinity)?
  bool allows(VertexId v, VertexId nic) const;
};

/// For each GPU and CPU vertex of a host: the host's NICs with a link out of
/// the host that are nearest to it (widest route inside the host, then fewest
/// hops). Vertices with the same nearest NICs take them in turn in device order
/// (index, then id), as NCCL gives each GPU of a PCIe switch its own NIC: DGX
/// A100 GPU 2k -> NIC 2k, GPU 2k+1 -> NIC 2k+1. A vertex gets several NICs when
/// its group has more NICs than members.
NicAffinity nic_affinity(const Topology& t);

}  // namespace collkit::topo
