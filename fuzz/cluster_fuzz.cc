// Cluster YAML (`--cluster FILE`): parsed and built. A built cluster is
// within the documented bounds and its nodes add up to its GPU count.
#include "fuzz/fuzz_util.h"
#include "hardware/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessel;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = ParseClusterYaml(text, "cluster.yaml");
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().message().rfind("cluster.yaml", 0) == 0, "an error not naming the file: " + spec.status().message());
    return 0;
  }
  auto cluster = Cluster::Build(*spec);
  if (!cluster.ok()) return 0;
  FUZZ_CHECK(cluster->total_gpus() >= 1 && cluster->total_gpus() <= kMaxClusterGpus, "GPU count out of bounds");
  FUZZ_CHECK(cluster->nodes().size() <= static_cast<size_t>(kMaxClusterNodes), "node count out of bounds");
  int64_t sum = 0;
  for (const ClusterNode& n : cluster->nodes()) {
    FUZZ_CHECK(n.gpus >= 1, "a node without GPUs");
    FUZZ_CHECK(n.type >= 0 && n.type < static_cast<int>(cluster->types().size()), "node type index");
    sum += n.gpus;
  }
  FUZZ_CHECK(sum == cluster->total_gpus(), "nodes do not add up to the GPU count");
  FUZZ_CHECK(cluster->num_racks() >= 1, "no racks");
  return 0;
}
