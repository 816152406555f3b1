// A cluster: pools of identical nodes (GPU type, node count, GPUs per node,
// intra-node fabric, NIC bandwidth) grouped into racks whose uplinks may be
// oversubscribed. Given as YAML or by the name of an embedded cluster
// (`tessel clusters`). `Cluster` is the expanded, immutable form the
// scheduler and simulator index by node and by GPU type. Thread-safe once
// built.
//
// YAML:
//   name: my-cluster
//   description: optional text
//   racks: {nodes_per_rack: 16, oversubscription: 2.0}   # optional
//   pools:
//     - name: a100              # optional; defaults to the GPU name
//       gpu: a100-40g           # catalog name or alias
//       nodes: 80
//       gpus_per_node: 4        # optional when node_type is given
//       node_type: arena-a100   # optional catalog node type: fills the rest
//       intra: nvlink-mesh      # optional: pcie|nvlink-bridge|nvlink-mesh|nvswitch
//       network_gbps: 28.5      # optional, per node
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/node.h"

namespace tessel {

struct NodePool {
  std::string name;
  const GpuSpec* gpu = nullptr;
  int nodes = 0;
  int gpus_per_node = 0;
  LinkKind intra = LinkKind::kPcie;
  double network_gbps = 100;  // per node, all NICs
};

struct ClusterSpec {
  std::string name;
  std::string description;
  std::vector<NodePool> pools;
  int nodes_per_rack = 0;             // 0: one switch for every node
  double rack_oversubscription = 1.0;  // rack uplink : downlink, >= 1
};

// One GPU type present in a cluster (pools with the same GPU merge here).
struct GpuTypeInfo {
  const GpuSpec* gpu = nullptr;
  Topology topology;   // of the type's largest node (what estimates assume)
  int total_gpus = 0;
  int max_gpus_per_node = 0;
  std::vector<int> nodes;  // node ids of this type, ascending
};

struct ClusterNode {
  int id = 0;
  int pool = 0;
  int type = 0;  // index into Cluster::types()
  int gpus = 0;
  int rack = 0;
  int index_in_type = 0;  // its position in types()[type].nodes
};

class Cluster {
 public:
  // Validates `spec` (InvalidArgument naming the pool and field).
  static Result<Cluster> Build(ClusterSpec spec);

  const ClusterSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  const std::vector<ClusterNode>& nodes() const { return nodes_; }
  const std::vector<GpuTypeInfo>& types() const { return types_; }
  int total_gpus() const { return total_gpus_; }
  int num_racks() const { return num_racks_; }
  // Index into types() of a GPU (by catalog name or alias), or -1.
  int FindType(std::string_view gpu_name) const;
  // The type with the most GPUs (the first on ties): the default reference
  // type for trace durations and type-blind policies.
  int LargestType() const;
  std::string TypeName(int type) const { return types_[type].gpu->name; }

 private:
  ClusterSpec spec_;
  std::vector<ClusterNode> nodes_;
  std::vector<GpuTypeInfo> types_;
  int total_gpus_ = 0;
  int num_racks_ = 1;
};

// The largest cluster a spec may describe (issue 14: sizes from input are
// bounded before memory is allocated).
inline constexpr int kMaxClusterNodes = 100000;
inline constexpr int64_t kMaxClusterGpus = 1000000;

// Embedded clusters by name: arena-1280, arena-1280-2to1, arena-testbed-32,
// pollux-64, sia-64, ddl-64, demo.
const std::vector<ClusterSpec>& EmbeddedClusters();
// A name of an embedded cluster or a path to a YAML file.
Result<ClusterSpec> ResolveClusterSpec(std::string_view name_or_path);
// Parses YAML text; `source` names the file in errors ("file:line: field").
Result<ClusterSpec> ParseClusterYaml(const std::string& text, const std::string& source);
// Convenience: resolve and build.
Result<Cluster> LoadCluster(std::string_view name_or_path);

}  // namespace tessel
