#pragma once
// The cluster topology model: a graph of typed vertices joined by full-duplex links, and the
// ranks that map onto endpoint vertices. Every other layer of collkit reads it.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace collkit::topo {

/// What a vertex is. Switch kinds route traffic through them; GPUs do not (see routing.h).
enum class VertexKind : std::uint8_t {
  Gpu,        ///< an accelerator (NVIDIA, AMD)
  Cpu,        ///< a CPU package or NUMA node: host memory, PCIe root complex
  PciSwitch,  ///< a PCIe switch or bridge
  Nic,        ///< a network adapter port (InfiniBand, RoCE, Ethernet)
  NvSwitch,   ///< an in-node (or rack-scale) GPU switch: NVSwitch plane, xGMI switch
  NetSwitch,  ///< a network switch: leaf, spine, torus router
  Host,       ///< a whole host as one vertex, for coarse models
};

/// The physical kind of a link.
enum class LinkType : std::uint8_t {
  NvLink,
  Pcie,
  Xgmi,        ///< AMD Infinity Fabric / xGMI
  C2c,         ///< chip-to-chip (NVLink-C2C between Grace and Hopper/Blackwell)
  Smp,         ///< CPU socket interconnect (UPI, Infinity Fabric between sockets)
  InfiniBand,
  Ethernet,    ///< Ethernet, RoCE included
};

std::string_view to_string(VertexKind kind);
std::string_view to_string(LinkType type);
std::optional<VertexKind> parse_vertex_kind(std::string_view text);
std::optional<LinkType> parse_link_type(std::string_view text);

using VertexId = std::uint32_t;
using LinkId = std::uint32_t;
using Rank = std::uint32_t;

struct Vertex {
  std::string id;          ///< unique in the topology, e.g. "node3/gpu5", "spine/2"
  VertexKind kind = VertexKind::Gpu;
  std::string host;        ///< host id the vertex belongs to; empty for fabric switches
  std::string label;       ///< human name: "NVIDIA H100 80GB HBM3", "mlx5_0"
  std::string busid;       ///< PCI bus id "0000:1a:00.0" when known
  int numa = -1;           ///< NUMA node, -1 when unknown
  int index = -1;          ///< device index (CUDA / NVML / verbs order), -1 when none
  double local_bw_gbps = 0;  ///< copy bandwidth between ranks sharing this vertex; 0 = unknown
  double port_gbps = 0;      ///< NIC: network port bandwidth per direction, GB/s; 0 = unknown
  std::map<std::string, std::string> attrs;  ///< further facts: "sm", "guid", "link_layer", ...
};

/// A full-duplex link; `bw_gbps` is available in each direction at once.
struct Link {
  VertexId a = 0;
  VertexId b = 0;
  LinkType type = LinkType::Pcie;
  double bw_gbps = 0;     ///< per direction, GB/s (10^9 bytes/s)
  double latency_us = 0;  ///< one traversal
  int lanes = 1;          ///< bonded links / lanes behind bw_gbps (NVLink count, PCIe width, ports)
};

/// One end of a link seen from a vertex.
struct Adjacent {
  VertexId peer;
  LinkId link;
};

/// What `coll-run calibrate` measured on the cluster and fitted into the model (docs/adapt.md): the
/// simulator takes per_message_us and reduce_gbps from here when its options leave them at 0; the
/// bandwidths and latencies it fitted were written into the vertices and links themselves.
struct Calibration {
  /// One class of rank pairs measured (ranks sharing a vertex, or a route's bottleneck link type):
  /// t(bytes) = latency_us + bytes / bw_gbps fitted over the sizes measured.
  struct PairClass {
    std::string name;             ///< "shared memory on vm/cpu0", "ethernet route (4 hops)"
    double latency_us = 0;        ///< fitted fixed time of one message, per_message_us included
    double bw_gbps = 0;           ///< fitted bandwidth of one pair alone
    double shared_bw_gbps = 0;    ///< with every pair of the class sending at once, in all; 0 = not measured
    double residual_percent = 0;  ///< largest |relative error| of the fit over the sizes measured
  };
  double per_message_us = 0;  ///< software overhead per message
  double reduce_gbps = 0;     ///< local reduction throughput (float32 sum, every rank at once)
  /// The memory beside the fits: the last-level cache of a rank's CPU vertex (bytes; 0: not known)
  /// and the bandwidth, as a factor on the fitted rates, of the bytes of the ranks' working set
  /// beyond it (1: no cache effect). The simulator applies it per vertex (docs/adapt.md).
  std::uint64_t cache_bytes = 0;
  double beyond_cache_factor = 1;
  /// The cores a rank's vertex has for the job's ranks there (the fewest any rank may run on,
  /// from its CPU affinity; 0: not known). With more ranks than cores on a vertex its reductions
  /// share `cores` cores, and one reduction runs on one core (docs/adapt.md).
  int cores = 0;
  /// A core's own cache (the level-2 cache of a rank's CPU, bytes; 0: not known) and the factor on
  /// reduce_gbps of a reduction whose three operands (two inputs, one output) fit in it: data a
  /// core has just received or written is reduced from there (1: no effect).
  std::uint64_t core_cache_bytes = 0;
  double core_cache_factor = 1;
  std::string source;         ///< who measured: backend, library, ranks, hosts, date
  std::vector<PairClass> classes;
};

/// The graph. Vertices and links are only ever added; ids are dense indices.
class Topology {
 public:
  /// Adds a vertex; throws InputError when its id is taken or empty.
  VertexId add_vertex(Vertex v);
  /// Adds a link; throws InputError for an unknown endpoint, a self-loop, bw <= 0, latency < 0, lanes < 1.
  LinkId add_link(const Link& l);
  /// Maps the next rank onto an endpoint vertex (several ranks may share one).
  Rank add_rank(VertexId endpoint);

  std::size_t num_vertices() const { return vertices_.size(); }
  std::size_t num_links() const { return links_.size(); }
  std::size_t num_ranks() const { return ranks_.size(); }

  const Vertex& vertex(VertexId v) const { return vertices_.at(v); }
  Vertex& mutable_vertex(VertexId v) { return vertices_.at(v); }
  const Link& link(LinkId l) const { return links_.at(l); }
  /// A link to adjust in place (calibration); its endpoints must not change.
  Link& mutable_link(LinkId l) { return links_.at(l); }
  std::span<const Vertex> vertices() const { return vertices_; }
  std::span<const Link> links() const { return links_; }
  std::span<const Adjacent> adjacent(VertexId v) const { return adjacency_.at(v); }

  std::optional<VertexId> find(std::string_view id) const;
  /// Like find(), but throws InputError "unknown vertex \"id\"".
  VertexId at(std::string_view id) const;

  VertexId rank_vertex(Rank r) const { return ranks_.at(r); }
  std::span<const VertexId> rank_vertices() const { return ranks_; }
  /// The ranks mapped onto vertex v, in rank order.
  std::vector<Rank> ranks_at(VertexId v) const;

  /// Distinct host ids in order of first appearance among the vertices.
  std::vector<std::string> hosts() const;
  const std::string& host_of(Rank r) const { return vertex(rank_vertex(r)).host; }
  std::vector<Rank> ranks_on_host(std::string_view host) const;

  /// Vertices of one kind, in id order of insertion.
  std::vector<VertexId> vertices_of(VertexKind kind) const;
  std::size_t count(VertexKind kind) const;
  std::size_t count(LinkType type) const;

  /// Checks the invariants loaders and builders promise: at least one rank, and every rank can
  /// reach every other (through routing.h's rules). Throws InputError naming the first offender.
  void check_connected() const;

  /// A stable 64-bit hash of vertices, links and ranks (not of name or notes): plans record it
  /// to tell whether they are applied to the topology they were made for.
  std::uint64_t fingerprint() const;
  std::string fingerprint_hex() const;

  std::string name;                ///< e.g. "dgx-h100x128-fat-tree"
  std::string source;              ///< how it was made: "synth", "discover", "import:nccl-xml", "file"
  std::vector<std::string> notes;  ///< what the source left out or assumed, stated for the user
  std::optional<Calibration> calibration;  ///< what coll-run calibrate fitted; none when not calibrated

 private:
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::vector<Adjacent>> adjacency_;
  std::vector<VertexId> ranks_;
  std::unordered_map<std::string, VertexId> index_;
};

}  // namespace collkit::topo
