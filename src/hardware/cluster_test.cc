#include "hardware/cluster.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(ClusterTest, EmbeddedClustersHaveThePublishedSizes) {
  struct Row {
    const char* name;
    int gpus;
    int types;
  };
  for (const Row& r : {Row{"arena-1280", 1280, 4}, Row{"arena-10k", 10240, 4}, Row{"pollux-64", 64, 1},
                       Row{"sia-64", 64, 3}, Row{"ddl-64", 64, 1}, Row{"demo", 112, 3}}) {
    auto c = LoadCluster(r.name);
    ASSERT_TRUE(c.ok()) << r.name << ": " << c.status().ToString();
    EXPECT_EQ(c->total_gpus(), r.gpus) << r.name;
    EXPECT_EQ(c->types().size(), static_cast<size_t>(r.types)) << r.name;
  }
}

TEST(ClusterTest, DdlClusterIsWangEtAlsSetting) {
  // 16 nodes x 4 GPUs of 32 GB, 10 Gb/s Ethernet, one switch
  // (HKBU-HPML/dl-scheduling online/job_master.py CLUSTER).
  Cluster c = LoadCluster("ddl-64").value();
  EXPECT_EQ(c.total_gpus(), 64);
  ASSERT_EQ(c.types().size(), 1u);
  const GpuTypeInfo& t = c.types()[0];
  EXPECT_EQ(t.gpu->name, "v100-32g");
  EXPECT_DOUBLE_EQ(t.gpu->memory_gib, 32);
  EXPECT_EQ(c.nodes().size(), 16u);
  for (const ClusterNode& n : c.nodes()) EXPECT_EQ(n.gpus, 4);
  EXPECT_EQ(t.topology.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(t.topology.network_gbps, 10);
  EXPECT_EQ(c.num_racks(), 1);
  EXPECT_EQ(c.spec().nodes_per_rack, 0);
}

TEST(ClusterTest, ArenaClusterMatchesTheArtifact) {
  Cluster c = LoadCluster("arena-1280").value();
  int a100 = c.FindType("a100");
  ASSERT_GE(a100, 0);
  EXPECT_EQ(c.types()[a100].total_gpus, 320);
  EXPECT_EQ(c.types()[a100].nodes.size(), 80u);
  EXPECT_EQ(c.types()[a100].topology.gpus_per_node, 4);
  int v100 = c.FindType("v100-32g");
  EXPECT_EQ(c.types()[v100].max_gpus_per_node, 16);
  EXPECT_EQ(c.nodes().size(), 420u);
  EXPECT_EQ(c.FindType("h100"), -1);
}

TEST(ClusterTest, YamlPoolsRacksAndOverrides) {
  auto spec = ParseClusterYaml(R"(name: mine
racks: {nodes_per_rack: 2, oversubscription: 3}
pools:
  - {gpu: h100, nodes: 3}
  - {name: old, gpu: v100, nodes: 2, gpus_per_node: 4, intra: pcie, network_gbps: 25}
)",
                               "mine.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Cluster c = Cluster::Build(*spec).value();
  EXPECT_EQ(c.total_gpus(), 3 * 8 + 2 * 4);
  EXPECT_EQ(c.num_racks(), 3);
  EXPECT_EQ(spec->pools[0].name, "h100-sxm");
  EXPECT_EQ(spec->pools[1].intra, LinkKind::kPcie);
  EXPECT_DOUBLE_EQ(spec->pools[1].network_gbps, 25);
  EXPECT_DOUBLE_EQ(spec->rack_oversubscription, 3);
}

struct BadYaml {
  const char* name;
  const char* yaml;
  const char* error;
};

class ClusterYamlErrorTest : public ::testing::TestWithParam<BadYaml> {};

TEST_P(ClusterYamlErrorTest, NamesFileLineAndField) {
  auto spec = ParseClusterYaml(GetParam().yaml, "c.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find(GetParam().error), std::string::npos) << spec.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ClusterYamlErrorTest,
    ::testing::Values(
        BadYaml{"UnknownGpu", "name: x\npools:\n  - {gpu: a1000, nodes: 2}\n", "c.yaml:3: pools[0].gpu: unknown gpu 'a1000'"},
        BadYaml{"NegativeNodes", "name: x\npools:\n  - gpu: a100\n    nodes: -2\n", "c.yaml:4: pools[0].nodes: -2 is out of range; expected 1 to 100000"},
        BadYaml{"NotANumber", "name: x\npools:\n  - gpu: a100\n    nodes: many\n",
                "c.yaml:4: pools[0].nodes: expected a whole number, got 'many'"},
        BadYaml{"UnknownField", "name: x\npools:\n  - {gpu: a100, nodes: 2, gpu_count: 4}\n",
                "pools[0].gpu_count: unknown field; known: name, gpu, nodes"},
        BadYaml{"UnknownFabric", "name: x\npools:\n  - {gpu: a100, nodes: 2, intra: infiniband}\n",
                "pools[0].intra: unknown intra-node fabric 'infiniband'; expected pcie, nvlink-bridge"},
        BadYaml{"NoPools", "name: x\n", "c.yaml: pools: required"},
        BadYaml{"NoName", "pools:\n  - {gpu: a100, nodes: 2}\n", "c.yaml: name: required"},
        BadYaml{"Oversubscription", "name: x\nracks: {oversubscription: 0.5}\npools:\n  - {gpu: a100, nodes: 1}\n",
                "c.yaml:2: racks.oversubscription: must be >= 1"},
        BadYaml{"NodeTypeMismatch", "name: x\npools:\n  - {gpu: v100, node_type: dgx-a100-40g, nodes: 1}\n",
                "node_type dgx-a100-40g holds a100-40g, not v100-32g"},
        BadYaml{"BrokenYaml", "name: x\npools: [\n", "c.yaml:"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ClusterTest, UnknownClusterNameListsKnownOnes) {
  auto c = LoadCluster("arena-128");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown cluster 'arena-128'"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("arena-1280"), std::string::npos);
}


// The contention study's variant: arena-1280's nodes in racks of 16 with
// 2:1 uplinks.
TEST(ClusterTest, Arena1280VariantInOversubscribedRacks) {
  Cluster flat = LoadCluster("arena-1280").value();
  Cluster racked = LoadCluster("arena-1280-2to1").value();
  EXPECT_EQ(racked.total_gpus(), flat.total_gpus());
  EXPECT_EQ(racked.nodes().size(), flat.nodes().size());
  EXPECT_EQ(racked.num_racks(), (420 + 15) / 16);
  EXPECT_DOUBLE_EQ(racked.spec().rack_oversubscription, 2.0);
  EXPECT_EQ(flat.num_racks(), 1);
}


// Sizes from input are bounded before anything is allocated (issue 14):
// nodes: 4294967297 used to read as 1, 1e9 nodes printed negative GPUs,
// and a few kilobytes of YAML aliases to one large pool exhausted memory.
TEST(ClusterTest, HugeClustersAreRefusedBeforeAllocation) {
  const std::string pool = "{name: a, gpu: a100-80g, gpus_per_node: 8, intra: nvswitch, network_gbps: 100, nodes: ";
  for (const char* n : {"4294967297", "1000000000", "100001"}) {
    auto r = ParseClusterYaml(std::string("name: big\npools:\n  - ") + pool + n + "}\n", "big.yaml");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_NE(r.status().message().find("big.yaml:3: pools[0].nodes"), std::string::npos) << r.status().message();
  }
  std::string aliases = "name: many\npools:\n  - &p " + pool + "60000}\n";
  for (int i = 0; i < 2000; ++i) aliases += "  - *p\n";
  auto r = ParseClusterYaml(aliases, "many.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at most 100000 nodes"), std::string::npos) << r.status().message();
}

// Found by fuzzing: numbers past int were narrowed (undefined behaviour)
// before their range was checked.
TEST(ClusterTest, CountsPastIntAreRangeErrors) {
  auto racks = ParseClusterYaml("name: r\nracks: {nodes_per_rack: 2000000000000000000}\npools:\n  - {name: a, gpu: a100-80g, nodes: 2}\n",
                                "r.yaml");
  ASSERT_FALSE(racks.ok());
  EXPECT_EQ(racks.status().message(),
            "r.yaml:2: racks.nodes_per_rack: 2e+18 is out of range; expected 1 to 100000");
  auto gpn = ParseClusterYaml("name: g\npools:\n  - {name: a, gpu: a100-80g, nodes: 2, gpus_per_node: 2000000000000000000}\n", "g.yaml");
  ASSERT_FALSE(gpn.ok());
  EXPECT_NE(gpn.status().message().find("g.yaml:3: pools[0].gpus_per_node: must be between 1 and 64"), std::string::npos)
      << gpn.status().message();
}

}  // namespace
}  // namespace tessel
