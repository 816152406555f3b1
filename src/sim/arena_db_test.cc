#include "sim/arena_db.h"

#include <gtest/gtest.h>

#include <fstream>

#include "hardware/cluster.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

// A100 nodes of 4 GPUs, as the artifact's NODE_CAPACITY has them.
Cluster A100s() {
  const char* yaml = R"(name: a100s
pools:
  - {name: a100, gpu: a100-40g, nodes: 8, gpus_per_node: 4, intra: nvlink-mesh}
)";
  return Cluster::Build(ParseClusterYaml(yaml, "a100s.yaml").value()).value();
}

JobSpec Job(const std::string& model, int batch) {
  JobSpec j;
  j.id = model;
  j.model = model;
  j.global_batch = batch;
  j.requested_gpus = 1;
  return j;
}

std::string Database(const std::string& text) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/arena_db_prof_database.json";
  std::ofstream(path) << text;
  return path;
}

const char* kDb = R"({"optimal": {
  "bert_1.3B_128": {"1_a100_1_n_4_d": 2.0, "2_a100_2_n_4_d": 1.2, "1_a100_1_n_2_d": -1},
  "bert_2.6B_128": {"1_a100_1_n_1_d": 9.0, "4_a100_4_n_4_d": 400.0}
}})";

// Under --setting arena-artifact, shapes the database lacks are answered as
// the artifact's DatabaseQuerier answers them: its own mesh, else the best
// locality x 0.9 per halving of the GPUs per host, else a larger model's
// same mesh x 1.8 per size step, else infeasible; -1 and iterations past
// the 300 s round never fit.
TEST(ArenaDbThroughput, AnswersUnmeasuredShapesAsTheArtifactsQuerier) {
  Cluster c = A100s();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  auto db = ArenaDbThroughput::Load(Database(kDb), c, est);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  (*db)->AnswerAsTheArtifactsQuerier();
  JobSpec bert = Job("bert__1.3B", 128);
  EXPECT_DOUBLE_EQ((*db)->Rate(bert, 0, 4, 1).iteration_time_s, 2.0);        // its own mesh
  EXPECT_DOUBLE_EQ((*db)->Rate(bert, 0, 4, 2).iteration_time_s, 2.0 / 0.9);  // 2 x 2: from 1 x 4, one halving
  EXPECT_DOUBLE_EQ((*db)->Rate(bert, 0, 8, 8).iteration_time_s, 1.2 / (0.9 * 0.9));  // 8 x 1: from 2 x 4
  EXPECT_FALSE((*db)->Rate(bert, 0, 2, 1).fits);  // -1: out of memory
  EXPECT_NE((*db)->Rate(bert, 0, 2, 1).reason.find("out of memory"), std::string::npos);
  // 1 GPU: no entry, no best locality, no larger model at 1 x 1 but 2.6B.
  EXPECT_DOUBLE_EQ((*db)->Rate(bert, 0, 1, 1).iteration_time_s, 9.0 / 1.8);
  JobSpec big = Job("bert__2.6B", 128);
  EXPECT_FALSE((*db)->Rate(big, 0, 16, 4).fits);  // 400 s > the 300 s round
  EXPECT_NE((*db)->Rate(big, 0, 16, 4).reason.find("300 s round"), std::string::npos);
  EXPECT_FALSE((*db)->Rate(big, 0, 2, 1).fits);  // nothing to answer from
  EXPECT_NE((*db)->Rate(big, 0, 2, 1).reason.find("artifact's querier"), std::string::npos);
  // A model outside Arena's families goes to the fallback model.
  JobSpec gpt = Job("gpt-1.7b", 32);
  ASSERT_TRUE(est.Rate(gpt, 0, 4, 1).fits);
  EXPECT_DOUBLE_EQ((*db)->Rate(gpt, 0, 4, 1).iteration_time_s, est.Rate(gpt, 0, 4, 1).iteration_time_s);
  EXPECT_EQ((*db)->fallback_answers(), 1);
}

// The artifact's data-parallel queries, which its baselines decide on, take
// the same entries without the scale factors.
TEST(ArenaDbThroughput, TheArtifactsDataParallelQueriesTakeTimesUnscaled) {
  Cluster c = A100s();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  auto db = ArenaDbThroughput::Load(Database(kDb), c, est);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  (*db)->AnswerAsTheArtifactsQuerier();
  std::unique_ptr<ArenaDbThroughput> dp = (*db)->ArtifactDataParallelView();
  JobSpec bert = Job("bert__1.3B", 128);
  EXPECT_DOUBLE_EQ(dp->Rate(bert, 0, 4, 2).iteration_time_s, 2.0);  // 1 x 4's own time
  EXPECT_DOUBLE_EQ(dp->Rate(bert, 0, 1, 1).iteration_time_s, 9.0);  // the 2.6B model's own time
  EXPECT_FALSE(dp->Rate(bert, 0, 2, 1).fits);
}

// Without the setting, unmeasured shapes go to the fallback model.
TEST(ArenaDbThroughput, AsksTheFallbackForShapesItLacksByDefault) {
  Cluster c = A100s();
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  auto db = ArenaDbThroughput::Load(Database(kDb), c, est);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  JobSpec bert = Job("bert__1.3B", 128);
  EXPECT_DOUBLE_EQ((*db)->Rate(bert, 0, 4, 1).iteration_time_s, 2.0);
  EXPECT_DOUBLE_EQ((*db)->Rate(bert, 0, 4, 2).iteration_time_s, est.Rate(bert, 0, 4, 2).iteration_time_s);
  EXPECT_EQ((*db)->fallback_answers(), 1);
  EXPECT_EQ((*db)->measured_answers(), 1);
}

}  // namespace
}  // namespace tessel
