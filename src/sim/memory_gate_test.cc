#include "sim/memory_gate.h"

#include <gtest/gtest.h>

#include <fstream>

#include "hardware/cluster.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

Cluster Two() {
  const char* yaml = R"(name: two
pools:
  - {name: a100, gpu: a100-40g, nodes: 2, gpus_per_node: 4, intra: nvlink-mesh}
  - {name: a10, gpu: a10, nodes: 2, gpus_per_node: 2, intra: pcie}
)";
  return Cluster::Build(ParseClusterYaml(yaml, "two.yaml").value()).value();
}

JobSpec Bert(int batch) {
  JobSpec j;
  j.id = "j" + std::to_string(batch);
  j.model = "bert__760M";
  j.global_batch = batch;
  j.requested_gpus = 1;
  return j;
}

std::string DpMem(const std::string& name, const std::string& text) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The artifact's rule: need x 1.2 <= 0.8 x memory (A100 40 GB: <= 26.67 GB;
// A10 24 GB: <= 16 GB); -1 and models the file lacks never fit; counts
// between listed ones use the entry at or below.
TEST(ArenaDpMemoryGate, AppliesTheArtifactsMemoryRule) {
  Cluster c = Two();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  auto gate = ArenaDpMemoryGate::Load(
      DpMem("dp_mem.json", R"([{"bert_760M_128": [24.1, 13.5, 9.1, 6.9, -1]}])"), c, est);
  ASSERT_TRUE(gate.ok()) << gate.status().ToString();
  const int a100 = c.FindType("a100-40g"), a10 = c.FindType("a10");
  JobSpec j = Bert(128);
  EXPECT_TRUE((*gate)->Rate(j, a100, 1, 1).fits);    // 24.1 <= 26.67 GB
  EXPECT_FALSE((*gate)->Rate(j, a10, 1, 1).fits);    // 24.1 > 16 GB
  EXPECT_TRUE((*gate)->Rate(j, a10, 2, 1).fits);     // 13.5 <= 16 GB
  EXPECT_TRUE((*gate)->Rate(j, a10, 3, 2).fits);     // uses the 2-GPU entry
  EXPECT_FALSE((*gate)->Rate(j, a100, 16, 4).fits);  // -1: measured out of memory
  EXPECT_NE((*gate)->Rate(j, a100, 16, 4).reason.find("measured out of memory"), std::string::npos);
  JobSpec other = Bert(256);  // not in the file
  EXPECT_FALSE((*gate)->Rate(other, a100, 4, 1).fits);
  EXPECT_NE((*gate)->Rate(other, a100, 4, 1).reason.find("no data-parallel memory measurement"), std::string::npos);
}

TEST(ArenaDpMemoryGate, BadFilesSayWhatIsWrong) {
  Cluster c = Two();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  auto missing = ArenaDpMemoryGate::Load("/nonexistent/dp_mem.json", c, est);
  EXPECT_FALSE(missing.ok());
  auto short_list = ArenaDpMemoryGate::Load(DpMem("short.json", R"({"bert_760M_128": [1, 2]})"), c, est);
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.status().message().find("bert_760M_128: expected a list of 5 numbers"), std::string::npos);
  auto text = ArenaDpMemoryGate::Load(DpMem("text.json", R"({"bert_760M_128": [1, 2, "x", 4, 5]})"), c, est);
  EXPECT_FALSE(text.ok());
}

// Refusals are counted once per (job, type, count, nodes) shape.
TEST(RefusalCounter, CountsDistinctRefusedShapesAndJobs) {
  Cluster c = Two();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  auto gate = ArenaDpMemoryGate::Load(DpMem("dp_mem2.json", R"([{"bert_760M_128": [-1, -1, 9.1, 6.9, -1]}])"), c, est);
  ASSERT_TRUE(gate.ok());
  RefusalCounter counter(**gate);
  JobSpec j = Bert(128);
  const int a100 = c.FindType("a100-40g");
  EXPECT_FALSE(counter.Rate(j, a100, 1, 1).fits);
  EXPECT_FALSE(counter.Rate(j, a100, 1, 1).fits);
  EXPECT_FALSE(counter.Rate(j, a100, 2, 1).fits);
  EXPECT_TRUE(counter.Rate(j, a100, 4, 1).fits);
  EXPECT_EQ(counter.refusals(), 2);
  EXPECT_EQ(counter.jobs_refused(), 1);
}

}  // namespace
}  // namespace tessel
