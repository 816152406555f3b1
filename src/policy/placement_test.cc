#include "policy/placement.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

// 2 racks of 3 nodes x 4 A100 each.
Cluster Racked() {
  const char* yaml = R"(name: racked
racks: {nodes_per_rack: 3, oversubscription: 2.0}
pools:
  - {name: a100, gpu: a100-80g, nodes: 6, gpus_per_node: 4, intra: nvswitch, network_gbps: 200}
)";
  return Cluster::Build(ParseClusterYaml(yaml, "racked.yaml").value()).value();
}

struct Fixture {
  Cluster cluster = Racked();
  std::vector<int> free;
  std::vector<uint8_t> up;
  Snapshot snap;
  Fixture() {
    free.assign(cluster.nodes().size(), 4);
    up.assign(cluster.nodes().size(), 1);
    snap.cluster = &cluster;
    snap.free_gpus = free;
    snap.node_up = up;
  }
};

TEST(FreeMapRacks, MultiNodeJobStaysInOneRack) {
  Fixture f;
  // Rack 0 (nodes 0-2) has 2 + 4 + 4 free; rack 1 (nodes 3-5) has 1 + 1 + 4.
  f.free = {2, 4, 4, 1, 1, 4};
  f.snap.free_gpus = f.free;
  FreeMap fm(f.snap);
  // 8 GPUs: fullest-first over the whole cluster would take nodes 1 and 2
  // (both in rack 0) -- fine; 9 GPUs need three nodes: rack 0 holds them
  // (4 + 4 + 2), rack 1 does not (6 free).
  auto a = fm.Place(0, 9);
  ASSERT_TRUE(a.has_value());
  for (const Placement& p : a->parts) EXPECT_EQ(f.cluster.nodes()[p.node].rack, 0) << a->ToString(f.cluster);
  EXPECT_EQ(a->gpus(), 9);
}

TEST(FreeMapRacks, PrefersTheRackNeedingFewestNodes) {
  Fixture f;
  // 6 GPUs: rack 0 needs 3 nodes (2 + 2 + 2), rack 1 needs 2 (4 + 2).
  f.free = {2, 2, 2, 4, 2, 0};
  f.snap.free_gpus = f.free;
  FreeMap fm(f.snap);
  auto a = fm.Place(0, 6);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->nodes(), 2) << a->ToString(f.cluster);
  for (const Placement& p : a->parts) EXPECT_EQ(f.cluster.nodes()[p.node].rack, 1) << a->ToString(f.cluster);
}

TEST(FreeMapRacks, SpansRacksOnlyWhenNoRackHoldsTheJob) {
  Fixture f;
  FreeMap fm(f.snap);
  auto a = fm.Place(0, 16);  // 12 GPUs per rack
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->nodes(), 4);
  EXPECT_EQ(a->gpus(), 16);
}

}  // namespace
}  // namespace tessel
