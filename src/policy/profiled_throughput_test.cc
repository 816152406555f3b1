#include "policy/profiled_throughput.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

// Answers every question with one fixed rate and counts them.
class FixedThroughput : public ThroughputModel {
 public:
  std::string_view name() const override { return "fixed"; }
  const JobRate& Rate(const JobSpec&, int, int, int) override {
    ++calls;
    return rate;
  }
  JobRate rate{true, 2.0, 4.0, 0, {}, "", 0, 0};
  int calls = 0;
};

JobSpec Job(const std::string& model, int batch) {
  JobSpec j;
  j.id = "j";
  j.model = model;
  j.global_batch = batch;
  j.iterations = 10;
  return j;
}

class ProfiledThroughputTest : public ::testing::Test {
 protected:
  Cluster cluster_ = LoadCluster("ddl-64").value();
  FixedThroughput base_;
  ProfiledThroughput model_{cluster_, base_};
};

TEST_F(ProfiledThroughputTest, OneNodeIsComputeOnly) {
  // VGG-16: 36 + 54 ms per iteration at 16 samples per GPU.
  const JobRate& r = model_.Rate(Job("ddl-vgg16", 64), 0, 4, 1);
  ASSERT_TRUE(r.fits);
  EXPECT_NEAR(r.iteration_time_s, 0.090, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 64 / 0.090, 1e-9);
  EXPECT_EQ(r.tokens_per_s, 0);
  EXPECT_EQ(r.network_s, 0);
  EXPECT_EQ(r.network_exposed_s, 0);
  EXPECT_EQ(r.plan.dp, 4);
  EXPECT_EQ(r.plan.tp, 1);
  EXPECT_EQ(r.plan.pp, 1);
  EXPECT_EQ(r.plan.micro_batch, 16);
  EXPECT_EQ(base_.calls, 0);
}

TEST_F(ProfiledThroughputTest, ComputeScalesWithSamplesPerGpu) {
  // LSTM-PTB profiled at 64 per GPU: 32 per GPU takes half of 32 + 47 ms.
  EXPECT_NEAR(model_.Rate(Job("ddl-lstm-ptb", 64), 0, 2, 1).iteration_time_s, 0.0395, 1e-12);
  EXPECT_NEAR(model_.Rate(Job("ddl-resnet50", 16), 0, 1, 1).iteration_time_s, 0.062, 1e-12);
}

TEST_F(ProfiledThroughputTest, NodesAddTheAllReduceNotOverlapped) {
  // 8 GPUs on 2 nodes: + 526.4 MB / (10 Gb/s x 0.935).
  const JobRate& r = model_.Rate(Job("ddl-vgg16", 128), 0, 8, 2);
  const double allreduce = 526.4e6 / (1.25e9 * 0.935);
  ASSERT_TRUE(r.fits);
  EXPECT_NEAR(r.network_s, allreduce, 1e-12);
  EXPECT_NEAR(r.network_exposed_s, allreduce, 1e-12);
  EXPECT_NEAR(r.iteration_time_s, 0.090 + allreduce, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 128 / (0.090 + allreduce), 1e-9);
  // The paper's beta: 0.856 ms per MB on 10 GbE; alpha = 0, so more nodes
  // cost the same.
  EXPECT_NEAR(r.network_s / 526.4, 0.856e-3, 1e-6);
  EXPECT_NEAR(model_.Rate(Job("ddl-vgg16", 512), 0, 32, 8).network_s, allreduce, 1e-12);
}

TEST_F(ProfiledThroughputTest, SharedNetworkSlowsOnlyTheAllReduce) {
  const double allreduce = 99.2e6 / (1.25e9 * 0.935);
  const JobRate& r = model_.RateShared(Job("ddl-resnet50", 128), 0, 8, 2, 0.5);
  EXPECT_NEAR(r.network_s, 2 * allreduce, 1e-12);
  EXPECT_NEAR(r.iteration_time_s, 0.062 + 2 * allreduce, 1e-12);
  EXPECT_NEAR(model_.RateShared(Job("ddl-resnet50", 64), 0, 4, 1, 0.5).iteration_time_s, 0.062, 1e-12)
      << "one node has no network to share";
}

TEST_F(ProfiledThroughputTest, PlanSetIsTheOneDataParallelPlan) {
  auto plans = model_.PlanSet(Job("ddl-inception3", 64), 0, 4, 2, 4);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].plan.dp, 4);
  EXPECT_NEAR(plans[0].iteration_time_s, 0.087 + 103.0e6 / (1.25e9 * 0.935), 1e-12);
  EXPECT_EQ(plans[0].memory_gib_per_gpu, 0);
}

TEST_F(ProfiledThroughputTest, OtherModelsAreTheWrappedModels) {
  JobSpec gpt = Job("gpt3-1.3b", 64);
  const JobRate& r = model_.Rate(gpt, 0, 8, 2);
  EXPECT_EQ(&r, &base_.rate);
  EXPECT_EQ(&model_.RateShared(gpt, 0, 8, 2, 0.5), &base_.rate);
  auto plans = model_.PlanSet(gpt, 0, 8, 2, 3);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].iteration_time_s, 2.0);
  EXPECT_EQ(base_.calls, 3);
  EXPECT_EQ(model_.name(), "fixed");
}

TEST_F(ProfiledThroughputTest, WrapsTheEstimator) {
  EstimatorThroughput estimator(cluster_, PlanMode::kDataParallel);
  ProfiledThroughput model(cluster_, estimator);
  JobSpec gpt = Job("gpt3-1.3b", 64);
  EXPECT_EQ(model.Rate(gpt, 0, 8, 2).iteration_time_s, estimator.Rate(gpt, 0, 8, 2).iteration_time_s);
  EXPECT_NEAR(model.Rate(Job("ddl-vgg16", 16), 0, 1, 1).iteration_time_s, 0.090, 1e-12);
  EXPECT_EQ(estimator.estimates(), 1) << "profiled jobs never reach the estimator";
}

}  // namespace
}  // namespace tessel
