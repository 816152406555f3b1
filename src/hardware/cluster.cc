#include "hardware/cluster.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "core/csv.h"
#include "core/strings.h"

namespace tessel {
namespace {

// The embedded clusters, in the same YAML users write.
struct Embedded {
  const char* name;
  const char* yaml;
};

// arena-1280's pools, shared by its variants.
#define TESSEL_ARENA_1280_POOLS                                         \
  "pools:\n"                                                            \
  "  - {name: a100, gpu: a100-40g, nodes: 80, node_type: arena-a100}\n" \
  "  - {name: v100, gpu: v100-32g, nodes: 20, node_type: arena-v100}\n" \
  "  - {name: a40, gpu: a40, nodes: 160, node_type: arena-a40}\n"       \
  "  - {name: a10, gpu: a10, nodes: 160, node_type: arena-a10}\n"

constexpr Embedded kEmbedded[] = {
    {"arena-1280", R"(name: arena-1280
description: the Arena/Crius artifact's simulated cluster, 1,280 GPUs (320 each of A100, V100, A40, A10)
)" TESSEL_ARENA_1280_POOLS},
    {"arena-1280-2to1", R"(name: arena-1280-2to1
description: arena-1280 in racks of 16 nodes whose uplinks are 2:1 oversubscribed (a contention study; not the artifact's)
racks: {nodes_per_rack: 16, oversubscription: 2.0}
)" TESSEL_ARENA_1280_POOLS},
    {"arena-10k", R"(name: arena-10k
description: arena-1280 scaled eightfold to 10,240 GPUs (2,560 each of A100, V100, A40, A10), for the simulator at scale
pools:
  - {name: a100, gpu: a100-40g, nodes: 640, node_type: arena-a100}
  - {name: v100, gpu: v100-32g, nodes: 160, node_type: arena-v100}
  - {name: a40, gpu: a40, nodes: 1280, node_type: arena-a40}
  - {name: a10, gpu: a10, nodes: 1280, node_type: arena-a10}
)"},
    {"arena-testbed-32", R"(name: arena-testbed-32
description: a testbed the size of the Arena artifact's runtime trace, 8 x 2 A40 and 8 x 2 A10 (the meshes of arena/comm)
pools:
  - {name: a40, gpu: a40, nodes: 8, node_type: arena-a40}
  - {name: a10, gpu: a10, nodes: 8, node_type: arena-a10}
)"},
    {"pollux-64", R"(name: pollux-64
description: the Pollux paper's simulated cluster, 16 nodes x 4 T4 (AWS g4dn.12xlarge)
pools:
  - {name: t4, gpu: t4, nodes: 16, node_type: aws-g4dn-12xl}
)"},
    {"sia-64", R"(name: sia-64
description: the Sia paper's heterogeneous cluster, 64 GPUs of three types
pools:
  - {name: t4, gpu: t4, nodes: 6, node_type: aws-g4dn-12xl}
  - {name: a100, gpu: a100-40g, nodes: 2, node_type: dgx-a100-40g}
  - {name: rtx, gpu: rtx2080ti, nodes: 3, node_type: rtx2080ti-8}
)"},
    // Wang et al., "Communication Contention Aware Scheduling of Multiple
    // Deep Learning Training Jobs" (ICDCS 2020), as their simulator sets it
    // up (HKBU-HPML/dl-scheduling, online/job_master.py CLUSTER and
    // online/cluster.py, d5398bd): 16 nodes x 4 GPUs of 32 GB, 10 Gb/s
    // Ethernet, one switch. The GPU type gives the simulator its 32 GB
    // memory limit; the four profiled models of the paper
    // (model/profiled_model.h) run at their measured forward/backward times
    // whatever the catalog GPU. Inside a node: the catalog default, the
    // V100 SXM2's NVLink. Only catalog models' estimates use it; their
    // simulator, like the profiled models, charges a job on one node no
    // communication at all.
    {"ddl-64", R"(name: ddl-64
description: Wang et al.'s contention-aware DDL scheduling (ICDCS 2020), 16 nodes x 4 V100 32GB, 10 Gb/s Ethernet
pools:
  - {name: v100, gpu: v100-32g, nodes: 16, gpus_per_node: 4, network_gbps: 10}
)"},
    {"demo", R"(name: demo
description: tessel's demo cluster, 112 GPUs of three generations in racks of 4 nodes (2:1 uplinks)
racks: {nodes_per_rack: 4, oversubscription: 2.0}
pools:
  - {name: h100, gpu: h100-sxm, nodes: 2, node_type: dgx-h100}
  - {name: a100, gpu: a100-80g, nodes: 6, node_type: dgx-a100-80g}
  - {name: v100, gpu: v100-32g, nodes: 6, node_type: dgx-1-v100}
)"},
};

Result<LinkKind> ParseLinkKind(const std::string& s, const std::string& where) {
  for (LinkKind k : {LinkKind::kPcie, LinkKind::kNvlinkBridge, LinkKind::kNvlinkMesh, LinkKind::kNvswitch}) {
    if (s == LinkKindName(k)) return k;
  }
  return InvalidArgument(where + ": unknown intra-node fabric '" + s +
                         "'; expected pcie, nvlink-bridge, nvlink-mesh or nvswitch");
}

std::string At(const std::string& source, const YAML::Node& node, const std::string& field) {
  return source + ":" + std::to_string(node.Mark().line + 1) + ": " + field;
}

Result<double> ReadNumber(const YAML::Node& node, const std::string& where, bool integer) {
  std::string text = node.IsScalar() ? node.Scalar() : "";
  if (integer) {
    auto v = ParseInt(text, where);
    if (!v.ok()) return InvalidArgument(where + ": expected a whole number, got '" + text + "'");
    return static_cast<double>(*v);
  }
  auto v = ParseDouble(text, where);
  if (!v.ok()) return InvalidArgument(where + ": expected a number, got '" + text + "'");
  return *v;
}

// A whole number in [lo, hi], checked on the number as written before it is
// narrowed to an int (4294967297 used to read as 1; 2e57 converted to int
// is undefined) or sizes anything.
Result<int> ReadCount(const YAML::Node& node, const std::string& where, int lo, int hi) {
  auto v = ReadNumber(node, where, true);
  if (!v.ok()) return v.status();
  if (!(*v >= lo && *v <= hi)) {
    return InvalidArgument(where + ": " + FormatDouble(*v, 12) + " is out of range; expected " + std::to_string(lo) +
                           " to " + std::to_string(hi));
  }
  return static_cast<int>(*v);
}

Result<NodePool> ParsePool(const YAML::Node& p, const std::string& source, size_t index) {
  std::string here = "pools[" + std::to_string(index) + "]";
  if (!p.IsMap()) return InvalidArgument(At(source, p, here) + ": expected a mapping with gpu and nodes");
  static const std::vector<std::string> kKeys = {"name", "gpu", "nodes", "gpus_per_node", "node_type", "intra",
                                                 "network_gbps"};
  for (const auto& kv : p) {
    std::string key = kv.first.Scalar();
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return InvalidArgument(At(source, kv.first, here + "." + key) + ": unknown field; known: " + Join(kKeys, ", "));
    }
  }
  NodePool pool;
  const NodeType* type = nullptr;
  if (p["node_type"]) {
    auto t = FindNodeType(p["node_type"].Scalar());
    if (!t.ok()) return InvalidArgument(At(source, p["node_type"], here + ".node_type") + ": " + t.status().message());
    type = *t;
    pool.gpus_per_node = type->gpus_per_node;
    pool.intra = type->intra;
    pool.network_gbps = type->network_gbps;
  }
  std::string gpu_name = p["gpu"] ? p["gpu"].Scalar() : (type ? type->gpu : "");
  if (gpu_name.empty()) return InvalidArgument(At(source, p, here) + ": gpu (or node_type) is required");
  auto gpu = FindGpu(gpu_name);
  if (!gpu.ok()) return InvalidArgument(At(source, p["gpu"] ? p["gpu"] : p, here + ".gpu") + ": " + gpu.status().message());
  pool.gpu = *gpu;
  if (type && FindGpu(type->gpu).value() != pool.gpu) {
    return InvalidArgument(At(source, p["gpu"], here + ".gpu") + ": node_type " + type->name + " holds " + type->gpu +
                           ", not " + pool.gpu->name);
  }
  if (!type) {
    const NodeType& def = DefaultNodeFor(*pool.gpu);
    pool.gpus_per_node = def.gpus_per_node;
    pool.intra = pool.gpu->link;
    pool.network_gbps = def.network_gbps;
  }
  pool.name = p["name"] ? p["name"].Scalar() : pool.gpu->name;
  if (!p["nodes"]) return InvalidArgument(At(source, p, here + ".nodes") + ": required (how many nodes)");
  auto nodes = ReadCount(p["nodes"], At(source, p["nodes"], here + ".nodes"), 1, kMaxClusterNodes);
  if (!nodes.ok()) return nodes.status();
  pool.nodes = *nodes;
  if (p["gpus_per_node"]) {
    auto g = ReadNumber(p["gpus_per_node"], At(source, p["gpus_per_node"], here + ".gpus_per_node"), true);
    if (!g.ok()) return g.status();
    // Range-checked before the narrowing cast (2e18 converted to int is
    // undefined; found by fuzzing).
    if (!(*g >= 1 && *g <= 64))
      return InvalidArgument(At(source, p["gpus_per_node"], here + ".gpus_per_node") + ": must be between 1 and 64");
    pool.gpus_per_node = static_cast<int>(*g);
  }
  if (p["intra"]) {
    auto k = ParseLinkKind(p["intra"].Scalar(), At(source, p["intra"], here + ".intra"));
    if (!k.ok()) return k.status();
    pool.intra = *k;
  }
  if (p["network_gbps"]) {
    auto n = ReadNumber(p["network_gbps"], At(source, p["network_gbps"], here + ".network_gbps"), false);
    if (!n.ok()) return n.status();
    pool.network_gbps = *n;
  }
  if (!(pool.network_gbps > 0)) return InvalidArgument(At(source, p, here + ".network_gbps") + ": must be positive");
  return pool;
}

}  // namespace

Result<ClusterSpec> ParseClusterYaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": YAML nested too deeply");
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) return InvalidArgument(source + ": expected a mapping with name and pools");
  try {
    static const std::vector<std::string> kKeys = {"name", "description", "racks", "pools"};
    for (const auto& kv : root) {
      std::string key = kv.first.Scalar();
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        return InvalidArgument(At(source, kv.first, key) + ": unknown field; known: " + Join(kKeys, ", "));
      }
    }
    ClusterSpec spec;
    spec.name = root["name"] ? root["name"].Scalar() : "";
    if (spec.name.empty()) return InvalidArgument(source + ": name: required");
    if (root["description"]) spec.description = root["description"].Scalar();
    if (const YAML::Node racks = root["racks"]) {
      if (!racks.IsMap()) return InvalidArgument(At(source, racks, "racks") + ": expected {nodes_per_rack, oversubscription}");
      if (racks["nodes_per_rack"]) {
        auto n = ReadCount(racks["nodes_per_rack"], At(source, racks["nodes_per_rack"], "racks.nodes_per_rack"), 1,
                           kMaxClusterNodes);
        if (!n.ok()) return n.status();
        spec.nodes_per_rack = *n;
      }
      if (racks["oversubscription"]) {
        auto o = ReadNumber(racks["oversubscription"], At(source, racks["oversubscription"], "racks.oversubscription"), false);
        if (!o.ok()) return o.status();
        if (*o < 1) return InvalidArgument(At(source, racks["oversubscription"], "racks.oversubscription") + ": must be >= 1 (uplink : downlink)");
        spec.rack_oversubscription = *o;
      }
    }
    const YAML::Node pools = root["pools"];
    if (!pools || !pools.IsSequence() || pools.size() == 0) {
      return InvalidArgument(source + ": pools: required, a list of {gpu, nodes, ...}");
    }
    int64_t total_nodes = 0, total_gpus = 0;
    for (size_t i = 0; i < pools.size(); ++i) {
      auto pool = ParsePool(pools[i], source, i);
      if (!pool.ok()) return pool.status();
      // Bounded before anything is sized from it (YAML aliases can repeat
      // one large pool thousands of times in a few kilobytes).
      total_nodes += pool->nodes;
      total_gpus += static_cast<int64_t>(pool->nodes) * pool->gpus_per_node;
      if (total_nodes > kMaxClusterNodes || total_gpus > kMaxClusterGpus) {
        return InvalidArgument(At(source, pools[i], "pools[" + std::to_string(i) + "]") + ": the cluster reaches " +
                               std::to_string(total_nodes) + " nodes and " + std::to_string(total_gpus) +
                               " GPUs; at most " + std::to_string(kMaxClusterNodes) + " nodes and " +
                               std::to_string(kMaxClusterGpus) + " GPUs are accepted");
      }
      spec.pools.push_back(std::move(*pool));
    }
    return spec;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

const std::vector<ClusterSpec>& EmbeddedClusters() {
  static const std::vector<ClusterSpec> clusters = [] {
    std::vector<ClusterSpec> out;
    for (const Embedded& e : kEmbedded) {
      auto spec = ParseClusterYaml(e.yaml, std::string("<embedded ") + e.name + ">");
      assert(spec.ok() && "embedded cluster must parse");
      out.push_back(std::move(*spec));
    }
    return out;
  }();
  return clusters;
}

Result<ClusterSpec> ResolveClusterSpec(std::string_view name_or_path) {
  std::string s(name_or_path);
  if (EndsWith(s, ".yaml") || EndsWith(s, ".yml") || Contains(s, "/")) {
    auto text = ReadTextFile(s);
    if (!text.ok()) return text.status();
    return ParseClusterYaml(*text, s);
  }
  std::vector<std::string> names;
  for (const ClusterSpec& c : EmbeddedClusters()) {
    if (c.name == ToLower(s)) return c;
    names.push_back(c.name);
  }
  return NotFound(UnknownNameMessage("cluster", s, names) + " (or give a YAML file)");
}

Result<Cluster> Cluster::Build(ClusterSpec spec) {
  Cluster c;
  if (spec.pools.empty()) return InvalidArgument("cluster " + spec.name + ": no pools");
  for (size_t pi = 0; pi < spec.pools.size(); ++pi) {
    const NodePool& pool = spec.pools[pi];
    if (!pool.gpu || pool.nodes < 1 || pool.gpus_per_node < 1) {
      return InvalidArgument("cluster " + spec.name + ": pool " + pool.name + " needs a GPU, nodes and GPUs per node");
    }
    int type = c.FindType(pool.gpu->name);
    if (type < 0) {
      type = static_cast<int>(c.types_.size());
      GpuTypeInfo info;
      info.gpu = pool.gpu;
      c.types_.push_back(info);
    }
    GpuTypeInfo& info = c.types_[type];
    if (pool.gpus_per_node > info.max_gpus_per_node) {
      info.max_gpus_per_node = pool.gpus_per_node;
      info.topology.gpu = pool.gpu;
      info.topology.gpus_per_node = pool.gpus_per_node;
      info.topology.intra = pool.intra;
      info.topology.network_gbps = pool.network_gbps;
    }
    for (int n = 0; n < pool.nodes; ++n) {
      ClusterNode node;
      node.id = static_cast<int>(c.nodes_.size());
      node.pool = static_cast<int>(pi);
      node.type = type;
      node.gpus = pool.gpus_per_node;
      node.rack = spec.nodes_per_rack > 0 ? node.id / spec.nodes_per_rack : 0;
      node.index_in_type = static_cast<int>(info.nodes.size());
      info.nodes.push_back(node.id);
      info.total_gpus += node.gpus;
      c.total_gpus_ += node.gpus;
      c.nodes_.push_back(node);
    }
  }
  c.num_racks_ = c.nodes_.empty() ? 1 : c.nodes_.back().rack + 1;
  c.spec_ = std::move(spec);
  return c;
}

int Cluster::FindType(std::string_view gpu_name) const {
  // The catalog's own name (what importers and specs store) needs no lookup.
  for (size_t i = 0; i < types_.size(); ++i) {
    if (types_[i].gpu->name == gpu_name) return static_cast<int>(i);
  }
  auto gpu = FindGpu(gpu_name);
  if (!gpu.ok()) return -1;
  for (size_t i = 0; i < types_.size(); ++i) {
    if (types_[i].gpu == *gpu) return static_cast<int>(i);
  }
  return -1;
}

int Cluster::LargestType() const {
  int best = 0;
  for (size_t t = 1; t < types_.size(); ++t)
    if (types_[t].total_gpus > types_[best].total_gpus) best = static_cast<int>(t);
  return best;
}

Result<Cluster> LoadCluster(std::string_view name_or_path) {
  auto spec = ResolveClusterSpec(name_or_path);
  if (!spec.ok()) return spec.status();
  return Cluster::Build(std::move(*spec));
}

}  // namespace tessel
