#include "policy/elasticflow.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <fstream>

#include "policy/corrected_throughput.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {
using testing::JobBuilder;
using testing::MakeJob;
using testing::PolicyFixture;

// `nodes` nodes of `per_node` A100s.
std::string Cluster(int nodes, int per_node) {
  std::string name = "elasticflow_" + std::to_string(nodes) + "x" + std::to_string(per_node);
  std::string path = ::tessel::testing::ProcessTempDir() + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\npools:\n  - {name: a100, gpu: a100-80g, nodes: " << nodes
                      << ", gpus_per_node: " << per_node << ", intra: nvswitch}\n";
  return path;
}

std::unique_ptr<Policy> ElasticFlow(const std::string& spec = "elasticflow") {
  return PolicyRegistry::Builtin().Create(spec, PolicyContext{}).value();
}

std::string Show(const Decision& d, const tessel::Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  return s;
}

Allocation On(int type, std::vector<Placement> parts) { return Allocation{type, std::move(parts)}; }

// Two elastic jobs [1, 4] and a rigid 2-GPU job on 8 GPUs: minimum shares
// 1 + 1 + 2, then the 4 left go by marginal return, i.e. to the job with
// more remaining work first.
TEST(ElasticFlowTest, LeftoverGpusGoToBestMarginalGain) {
  for (bool first_is_long : {true, false}) {
    SCOPED_TRACE(first_is_long ? "first long" : "second long");
    PolicyFixture f(Cluster(2, 4));
    f.AddJob(MakeJob("p").Gpus(1).Elastic(1, 4).Batch(256).Iterations(first_is_long ? 1e6 : 1e3));
    f.AddJob(MakeJob("q").Gpus(1).Elastic(1, 4).Batch(256).Iterations(first_is_long ? 1e3 : 1e6));
    f.AddJob(MakeJob("rigid").Gpus(2).Batch(256));
    auto policy = ElasticFlow();
    EXPECT_TRUE(policy->traits().uses_rounds);
    Decision d = policy->Decide(f.Snap(0));
    EXPECT_TRUE(d.reject.empty());
    if (first_is_long) {
      EXPECT_EQ(Show(d, f.cluster()), "j0=a100-80g x4 on n0:4; j1=a100-80g x2 on n1:2; j2=a100-80g x2 on n1:2");
    } else {
      EXPECT_EQ(Show(d, f.cluster()), "j0=a100-80g x2 on n1:2; j1=a100-80g x4 on n0:4; j2=a100-80g x2 on n1:2");
    }
  }
}

TEST(ElasticFlowTest, RespectsMinAndMax) {
  PolicyFixture f(Cluster(2, 4));
  f.AddJob(MakeJob("small").Gpus(1).Elastic(1, 2).Batch(256).Iterations(1e6));
  f.AddJob(MakeJob("big").Gpus(4).Elastic(4, 8).Batch(256).Iterations(1e6));
  f.AddJob(MakeJob("late").Gpus(8).Batch(256));
  Decision d = ElasticFlow()->Decide(f.Snap(0));
  // Minimums 1 and 4 (the late 8-GPU job gets nothing and waits); of the 3
  // left, "small" takes one step to its max of 2, "big" cannot double.
  EXPECT_EQ(Show(d, f.cluster()), "j0=a100-80g x2 on n1:2; j1=a100-80g x4 on n0:4");
}

TEST(ElasticFlowTest, KeepsPlacementWhenCountIsUnchanged) {
  PolicyFixture f(Cluster(2, 4));
  int a100 = f.Type("a100-80g");
  JobView& p = f.AddJob(MakeJob("p").Gpus(1).Elastic(1, 4).Batch(256).Iterations(1e6));
  JobView& q = f.AddJob(MakeJob("q").Gpus(1).Elastic(1, 4).Batch(256).Iterations(1e3));
  JobView& r = f.AddJob(MakeJob("rigid").Gpus(2).Batch(256));
  // The allocation of the first case, placed differently.
  f.Run(p, On(a100, {{1, 4}}));
  f.Run(q, On(a100, {{0, 2}}));
  f.Run(r, On(a100, {{0, 2}}));
  p.done_iterations = 10;
  EXPECT_EQ(Show(ElasticFlow()->Decide(f.Snap(Seconds(300))), f.cluster()), "");
}

TEST(ElasticFlowTest, GrowingJobKeepsItsGpus) {
  PolicyFixture f(Cluster(2, 4));
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(2).Elastic(2, 4).Batch(256).Iterations(1e6));
  f.Run(a, On(a100, {{1, 2}}));
  // a doubles onto the two free GPUs beside it; a fresh best-fit placement
  // would have moved it to the empty n0.
  EXPECT_EQ(Show(ElasticFlow()->Decide(f.Snap(Seconds(300))), f.cluster()), "j0=a100-80g x4 on n1:4");
}

// One node of 4: a rigid 1-GPU job and two elastic [1, 2] jobs; one step of
// 1 GPU is left over. The job holding it keeps it against a job that gains
// only 5% more, unless hysteresis is off.
TEST(ElasticFlowTest, HysteresisKeepsTheIncumbent) {
  PolicyFixture f(Cluster(1, 4));
  int a100 = f.Type("a100-80g");
  JobView& r = f.AddJob(MakeJob("rigid").Gpus(1).Batch(256));
  JobView& held = f.AddJob(MakeJob("held").Gpus(1).Elastic(1, 2).Batch(256).Iterations(1e5));
  JobView& rival = f.AddJob(MakeJob("rival").Gpus(1).Elastic(1, 2).Batch(256).Iterations(1.05e5));
  f.Run(r, On(a100, {{0, 1}}));
  f.Run(held, On(a100, {{0, 2}}));
  f.Run(rival, On(a100, {{0, 1}}));
  EXPECT_EQ(Show(ElasticFlow()->Decide(f.Snap(Seconds(300))), f.cluster()), "");
  EXPECT_EQ(Show(ElasticFlow("elasticflow:hysteresis=0")->Decide(f.Snap(Seconds(300))), f.cluster()),
            "j1=a100-80g x1 on n0:1; j2=a100-80g x2 on n0:2");
}

TEST(ElasticFlowTest, SameSnapshotSameDecision) {
  PolicyFixture f(Cluster(2, 4));
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(2).Elastic(1, 8).Batch(256).Iterations(5e4));
  f.Run(a, On(a100, {{0, 2}}));
  f.AddJob(MakeJob("b").Gpus(2).Elastic(2, 4).Batch(256).Iterations(2e5));
  f.AddJob(MakeJob("c").Gpus(1).Elastic(1, 4).Batch(256).Iterations(1e5));
  Snapshot s = f.Snap(Seconds(60));
  auto policy = ElasticFlow();
  Decision d1 = policy->Decide(s);
  Decision d2 = policy->Decide(s);
  Decision d3 = ElasticFlow()->Decide(s);
  EXPECT_EQ(d1.assign, d2.assign);
  EXPECT_EQ(d1.assign, d3.assign);
  int total = 0;
  for (const auto& [job, alloc] : d1.assign) total += alloc.gpus();
  EXPECT_LE(total, 8);
}

TEST(ElasticFlowTest, RejectsJobThatFitsNowhere) {
  PolicyFixture f(Cluster(2, 4));
  f.AddJob(MakeJob("huge").Gpus(16).Elastic(16, 32));
  f.AddJob(MakeJob("h100").Gpus(1).Type("h100-sxm"));
  f.AddJob(MakeJob("ok").Gpus(2));
  Decision d = ElasticFlow()->Decide(f.Snap(0));
  ASSERT_EQ(d.reject.size(), 2u);
  EXPECT_EQ(d.reject[0].first, 0);
  EXPECT_EQ(d.reject[0].second, "needs 16 GPUs; the largest GPU type in the cluster has 8");
  EXPECT_EQ(d.reject[1].first, 1);
  EXPECT_EQ(d.reject[1].second, "requested GPU type 'h100-sxm' is not in the cluster");
  EXPECT_EQ(Show(d, f.cluster()), "j2=a100-80g x2 on n0:2");
}


// Seconds one iteration takes on `gpus` A100s of the fixture's cluster.
double IterSeconds(PolicyFixture& f, const JobSpec& spec, int gpus) {
  const JobRate& r = f.belief().Rate(spec, f.Type("a100-80g"), gpus, 1);
  EXPECT_TRUE(r.fits);
  return r.iteration_time_s;
}

// Admission control: a job whose deadline no size can meet is refused at
// arrival; one that can meet it is admitted with its minimum satisfactory
// share (and takes leftovers on top).
TEST(ElasticFlowAdmission, RefusesAnUnmeetableDeadlineAdmitsAMeetableOne) {
  PolicyFixture f(Cluster(1, 4));
  const double work = 1e4;
  JobBuilder probe = MakeJob("probe").Gpus(1).Elastic(1, 4).Batch(256);
  const double t1 = IterSeconds(f, probe.spec(), 1), t4 = IterSeconds(f, probe.spec(), 4);
  // Half the time even 4 GPUs need: refused.
  f.AddJob(MakeJob("tight").Gpus(1).Elastic(1, 4).Batch(256).Iterations(work).Deadline(Seconds(0.5 * work * t4)));
  // Twice what 1 GPU needs: admitted.
  f.AddJob(MakeJob("easy").Gpus(1).Elastic(1, 4).Batch(256).Iterations(work).Deadline(Seconds(2 * work * t1)));
  auto policy = ElasticFlow();
  Decision d = policy->Decide(f.Snap(0));
  ASSERT_EQ(d.reject.size(), 1u);
  EXPECT_EQ(d.reject[0].first, 0);
  EXPECT_NE(d.reject[0].second.find("deadline cannot be met"), std::string::npos) << d.reject[0].second;
  ASSERT_EQ(d.assign.size(), 1u);
  EXPECT_EQ(d.assign[0].first, 1);
  EXPECT_EQ(d.assign[0].second.gpus(), 4);  // its share (1) and the 3 left over
}

// Admission is time-aware (earliest deadline first over the GPUs free in
// time): a second job that can run after the first finishes is admitted;
// one whose deadline would need the first job's GPUs now is refused, and
// the first keeps the GPUs its deadline needs.
TEST(ElasticFlowAdmission, PlansEarliestDeadlineFirstOverTime) {
  for (bool fits_after : {true, false}) {
    SCOPED_TRACE(fits_after ? "second fits after the first" : "second cannot");
    PolicyFixture f(Cluster(1, 4));
    const double work = 1e4;
    JobBuilder probe = MakeJob("probe").Gpus(4).Batch(256);
    const double t4 = IterSeconds(f, probe.spec(), 4);
    const double alone = work * t4;  // either job alone on the 4 GPUs
    f.AddJob(MakeJob("first").Gpus(4).Batch(256).Iterations(work).Deadline(Seconds(1.1 * alone)));
    f.AddJob(MakeJob("second")
                 .Gpus(4)
                 .Batch(256)
                 .Iterations(work)
                 .Deadline(Seconds((fits_after ? 2.5 : 1.5) * alone)));
    auto policy = ElasticFlow();
    Decision d = policy->Decide(f.Snap(0));
    if (fits_after) {
      EXPECT_TRUE(d.reject.empty());
    } else {
      ASSERT_EQ(d.reject.size(), 1u);
      EXPECT_EQ(d.reject[0].first, 1);
    }
    ASSERT_EQ(d.assign.size(), 1u);
    EXPECT_EQ(d.assign[0].first, 0);
    EXPECT_EQ(d.assign[0].second.gpus(), 4);
  }
}

// Jobs without deadlines are best-effort: never refused, and under
// admission=false deadline jobs are best-effort too.
TEST(ElasticFlowAdmission, BestEffortJobsAreNeverRefused) {
  PolicyFixture f(Cluster(1, 4));
  f.AddJob(MakeJob("none").Gpus(1).Elastic(1, 4).Batch(256).Iterations(1e6));
  f.AddJob(MakeJob("hopeless").Gpus(1).Elastic(1, 4).Batch(256).Iterations(1e6).Deadline(Seconds(1)));
  Decision with = ElasticFlow()->Decide(f.Snap(0));
  ASSERT_EQ(with.reject.size(), 1u);
  EXPECT_EQ(with.reject[0].first, 1);
  Decision without = ElasticFlow("elasticflow:admission=false")->Decide(f.Snap(0));
  EXPECT_TRUE(without.reject.empty());
  EXPECT_EQ(without.assign.size(), 2u);
}

// Admission happens once, at arrival: a job that already ran when this
// policy instance first sees it (the daemon restarted) is never refused,
// even when its deadline can no longer be met; it runs best-effort.
TEST(ElasticFlowAdmission, JobsThatAlreadyRanAreNeverRefused) {
  PolicyFixture f(Cluster(1, 4));
  int a100 = f.Type("a100-80g");
  JobView& running = f.AddJob(MakeJob("running").Gpus(2).Batch(256).Iterations(1e6).Deadline(Seconds(10)));
  JobView& suspended = f.AddJob(MakeJob("suspended").Gpus(2).Batch(256).Iterations(1e6).Deadline(Seconds(10)));
  f.Run(running, On(a100, {{0, 2}}));
  running.first_start = 0;
  suspended.first_start = 0;  // ran, then was suspended
  Decision d = ElasticFlow()->Decide(f.Snap(Seconds(100)));
  EXPECT_TRUE(d.reject.empty());
  ASSERT_EQ(d.assign.size(), 1u);  // the running one keeps its GPUs; the other gets the 2 left
  EXPECT_EQ(d.assign[0].first, 1);
}
// The policy keeps each job's sizes and GPU types (fastest first) between
// decisions; a belief corrected in between (the daemon's measured step
// times) is seen at once. With as many GPUs left on both types, a job that
// names none goes to the fastest.
TEST(ElasticFlowTest, SeesACorrectedBeliefAtTheNextDecision) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/elasticflow_two_types.yaml";
  std::ofstream(path) << "name: elasticflow-two-types\npools:\n"
                         "  - {name: a100, gpu: a100-80g, nodes: 1, gpus_per_node: 4, intra: nvswitch}\n"
                         "  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 4}\n";
  PolicyFixture f(path);
  int a100 = f.Type("a100-80g");
  f.AddJob(MakeJob("a").Gpus(4));
  auto policy = ElasticFlow();
  // measured far slower on the A100s than believed
  std::vector<Decision> d = testing::DecisionsAroundACorrection(*policy, f, "a", a100, 100);
  EXPECT_EQ(Show(d[0], f.cluster()), "j0=a100-80g x4 on n0:4");
  EXPECT_EQ(Show(d[1], f.cluster()), "j0=a100-80g x4 on n0:4");
  EXPECT_EQ(Show(d[2], f.cluster()), "j0=v100-32g x4 on n1:4");
}

// What a simulator hands the belief ahead (LikelyQuestions) covers every
// question elasticflow asks, with and without admission control: jobs
// elastic and rigid, on any type, on a requested type, on allowed types,
// with deadlines, pending and running.
TEST(ElasticFlowTest, LikelyQuestionsCoverWhatItAsks) {
  for (const std::string spec : {"elasticflow", "elasticflow:admission=false"}) {
    SCOPED_TRACE(spec);
    PolicyFixture f("arena-1280");
    f.AddJob(MakeJob("elastic").Model("bert__1.3B").Batch(128).Gpus(2).Elastic(1, 32).Iterations(1e5));
    f.AddJob(MakeJob("rigid").Model("moe__690M").Batch(256).Gpus(8).Iterations(1e4));
    f.AddJob(MakeJob("typed").Model("gpt3-350m").Gpus(4).Elastic(2, 16).Type("a100-40g").Iterations(1e4));
    f.AddJob(MakeJob("allowed").Model("gpt3-1.3b").Gpus(4).Elastic(1, 64).Allowed({"v100-32g", "a10"}));
    JobView& due = f.AddJob(MakeJob("due").Model("bert__2.6B").Batch(256).Gpus(4).Elastic(1, 16).Deadline(
        Seconds(4 * 3600)).Iterations(2e4));
    f.Run(due, f.Place(f.Type("a100-40g"), 4));
    auto policy = ElasticFlow(spec);
    EXPECT_GT(testing::ExpectLikelyQuestionsCover(*policy, f, {Seconds(0), Seconds(600)}), 8u);
  }
}

}  // namespace
}  // namespace tessel
