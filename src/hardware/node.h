// Node types (how many GPUs a server holds, how they are linked, how fast the
// node reaches the network) and the Topology an estimate is made for.
// Immutable catalog, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/gpu.h"

namespace tessel {

struct NodeType {
  std::string name;         // "dgx-a100-80g"
  std::string gpu;          // catalog GPU name
  int gpus_per_node = 8;
  LinkKind intra = LinkKind::kPcie;
  double network_gbps = 100;  // all NICs of the node together, Gb/s
  std::string description;
  std::string source;
};

const std::vector<NodeType>& NodeCatalog();
Result<const NodeType*> FindNodeType(std::string_view name);
std::vector<std::string> NodeTypeNames();
// The node type a GPU most commonly ships in (e.g. h100-sxm -> dgx-h100).
const NodeType& DefaultNodeFor(const GpuSpec& gpu);

// What an estimate assumes about the machines: GPU type, node size, links.
struct Topology {
  const GpuSpec* gpu = nullptr;
  int gpus_per_node = 8;
  LinkKind intra = LinkKind::kPcie;
  double network_gbps = 100;  // per node

  // Per-direction GB/s of the intra-node path a group of `group_size` GPUs
  // on one node uses (NVLink bridges only join pairs; PCIe beyond).
  double IntraNodeGbs(int group_size) const;
  // Per-node network bandwidth in GB/s.
  double NetworkGBs() const { return network_gbps / 8.0; }
};

// The default topology for `gpu`, with optional overrides (0 = keep).
Result<Topology> MakeTopology(const GpuSpec& gpu, int gpus_per_node_override,
                              double network_gbps_override);

}  // namespace tessel
