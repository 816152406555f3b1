#include "policy/tiresias.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <fstream>

#include "policy/corrected_throughput.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {
using testing::MakeJob;
using testing::PolicyFixture;

std::string TwoByFour() {
  std::string path = ::tessel::testing::ProcessTempDir() + "/tiresias_2x4.yaml";
  std::ofstream(path) << "name: tiresias-2x4\npools:\n"
                         "  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch}\n";
  return path;
}

// One node of four A100s (n0) and one of four V100s (n1).
std::string TwoTypes() {
  std::string path = ::tessel::testing::ProcessTempDir() + "/tiresias_two_types.yaml";
  std::ofstream(path) << "name: tiresias-two-types\npools:\n"
                         "  - {name: a100, gpu: a100-80g, nodes: 1, gpus_per_node: 4, intra: nvswitch}\n"
                         "  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 4}\n";
  return path;
}

std::unique_ptr<Policy> Tiresias(const std::string& spec = "tiresias") {
  return PolicyRegistry::Builtin().Create(spec, PolicyContext{}).value();
}

std::string Show(const Decision& d, const Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  return s;
}

Allocation On(int type, std::vector<Placement> parts) { return Allocation{type, std::move(parts)}; }

// A job on all 8 GPUs since t=0 and a fresh 4-GPU job waiting.
struct DemotionCase {
  explicit DemotionCase(double now_s) : f(TwoByFour()) {
    int a100 = f.Type("a100-80g");
    JobView& old_job = f.AddJob(MakeJob("old").Gpus(8).Iterations(1e6));
    f.Run(old_job, On(a100, {{0, 4}, {1, 4}}), 0);
    old_job.attained_gpu_s = 8 * now_s;
    JobView& fresh = f.AddJob(MakeJob("fresh").Gpus(4).Submit(Seconds(10)));
    fresh.alloc_since = Seconds(10);
  }
  PolicyFixture f;
};

TEST(TiresiasTest, SameQueueDoesNotPreemptAndWakesAtThreshold) {
  DemotionCase c(300);  // 2400 GPU-s: still in the top queue
  auto policy = Tiresias();
  EXPECT_TRUE(policy->traits().uses_rounds);
  Decision d = policy->Decide(c.f.Snap(Seconds(300)));
  EXPECT_EQ(Show(d, c.f.cluster()), "");
  // Crosses 3250 GPU-s after (3250 - 2400) / 8 = 106.25 s more.
  EXPECT_EQ(d.wake_at, Seconds(300 + 106.25));
}

TEST(TiresiasTest, DemotedJobIsPreemptedByFreshJob) {
  DemotionCase c(406.25);  // 3250 GPU-s: demoted to the second queue
  Decision d = Tiresias()->Decide(c.f.Snap(Seconds(406.25)));
  EXPECT_EQ(Show(d, c.f.cluster()), "j0=-; j1=a100-80g x4 on n0:4");
  EXPECT_EQ(d.wake_at, kNever);  // last queue; nobody else to demote
}

// A comma inside an option value does not start a new spec in a policy
// list (issue 14: `compare --policies` split tiresias' thresholds).
TEST(TiresiasTest, PolicyListKeepsThresholdListsWhole) {
  const PolicyRegistry& r = PolicyRegistry::Builtin();
  EXPECT_EQ(r.SplitList("fcfs, tiresias:thresholds=3200,25600,gavel"),
            (std::vector<std::string>{"fcfs", "tiresias:thresholds=3200,25600", "gavel"}));
  EXPECT_EQ(r.SplitList(",,fcfs,,"), (std::vector<std::string>{"fcfs"}));
  // An unknown name after a spec without options stays a spec of its own,
  // for Create to reject with the known names.
  EXPECT_EQ(r.SplitList("fcfs,fcfss"), (std::vector<std::string>{"fcfs", "fcfss"}));
  EXPECT_EQ(r.SplitList(""), (std::vector<std::string>{}));
}

TEST(TiresiasTest, ThresholdOption) {
  DemotionCase c(300);
  Decision d = Tiresias("tiresias:queues=2:threshold=2000")->Decide(c.f.Snap(Seconds(300)));
  EXPECT_EQ(Show(d, c.f.cluster()), "j0=-; j1=a100-80g x4 on n0:4");
  // Three queues: 2000 and 4000 GPU-s; the job (2400) is in the middle one
  // and will leave it after (4000 - 2400) / 8 = 200 s.
  Decision three = Tiresias("tiresias:queues=3:threshold=2000")->Decide(c.f.Snap(Seconds(300)));
  EXPECT_EQ(three.wake_at, Seconds(500));
  EXPECT_FALSE(PolicyRegistry::Builtin().Create("tiresias:queues=3:threshold=1h,30m", {}).ok());
  EXPECT_TRUE(PolicyRegistry::Builtin().Create("tiresias:queues=3:threshold=30m,1h", {}).ok());
}

// b and c (both demoted) fill the cluster; a ran 1000 s on 4 GPUs from t=0
// (4000 GPU-s, demoted) and was suspended for c at t=1000. With STARVELIMIT 2
// it is promoted once it has waited, since it first started, 2 x its 1000 s
// of run time: at t = 3000 s.
struct StarvationCase {
  StarvationCase() : f(TwoByFour()) {
    int a100 = f.Type("a100-80g");
    JobView& b = f.AddJob(MakeJob("b").Gpus(4).Iterations(1e6));
    JobView& c = f.AddJob(MakeJob("c").Gpus(4).Iterations(1e6).Submit(Seconds(50)));
    JobView& a = f.AddJob(MakeJob("a").Gpus(4).Iterations(1e6).Submit(Seconds(100)));
    f.Run(b, On(a100, {{0, 4}}), 0);
    f.Run(c, On(a100, {{1, 4}}), Seconds(1000));
    a.first_start = 0;
    a.alloc_since = Seconds(1000);
    a.attained_gpu_s = 4000;
    a.preemptions = 1;
  }
  void At(double now_s) {
    f.jobs()[0].attained_gpu_s = 4 * now_s;
    f.jobs()[1].attained_gpu_s = 4 * (now_s - 1000);
  }
  PolicyFixture f;
};

TEST(TiresiasTest, StarvingJobIsPromotedOnTime) {
  StarvationCase c;
  auto policy = Tiresias("tiresias:starvation=2");
  c.At(2500);
  Decision before = policy->Decide(c.f.Snap(Seconds(2500)));
  EXPECT_EQ(Show(before, c.f.cluster()), "");
  EXPECT_EQ(before.wake_at, Seconds(3000));
  c.At(3000);
  Decision d = policy->Decide(c.f.Snap(Seconds(3000)));
  // Promoted to the top queue, it displaces the later of the two demoted jobs.
  EXPECT_EQ(Show(d, c.f.cluster()), "j1=-; j2=a100-80g x4 on n1:4");
  // Without the knob it keeps waiting.
  EXPECT_EQ(Show(Tiresias()->Decide(c.f.Snap(Seconds(3000))), c.f.cluster()), "");
}

TEST(TiresiasTest, PromotedJobKeepsTopQueueForItsRun) {
  // As after the promotion above, at t = 3100: a runs on n1 since 3000 and
  // c waits since then.
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& b = f.AddJob(MakeJob("b").Gpus(4).Iterations(1e6));
  JobView& c = f.AddJob(MakeJob("c").Gpus(4).Iterations(1e6).Submit(Seconds(50)));
  JobView& a = f.AddJob(MakeJob("a").Gpus(4).Iterations(1e6).Submit(Seconds(100)));
  f.Run(b, On(a100, {{0, 4}}), 0);
  b.attained_gpu_s = 4 * 3100;
  c.first_start = Seconds(1000);
  c.alloc_since = Seconds(3000);
  c.attained_gpu_s = 4 * 2000;
  a.first_start = 0;
  f.Run(a, On(a100, {{1, 4}}), Seconds(3000));
  a.attained_gpu_s = 4000 + 4 * 100;
  Decision d = Tiresias("tiresias:starvation=2")->Decide(f.Snap(Seconds(3100)));
  EXPECT_EQ(Show(d, f.cluster()), "");
  // It counts the 400 GPU-s since its promotion: demoted after (3250 - 400) / 4 s.
  EXPECT_EQ(d.wake_at, Seconds(3100 + 712.5));
}

TEST(TiresiasTest, SameSnapshotSameDecision) {
  DemotionCase c(500);
  c.f.AddJob(MakeJob("x").Gpus(2).Submit(Seconds(20)));
  c.f.AddJob(MakeJob("y").Gpus(2).Submit(Seconds(30)));
  Snapshot s = c.f.Snap(Seconds(500));
  auto policy = Tiresias();
  Decision d1 = policy->Decide(s);
  Decision d2 = policy->Decide(s);
  Decision d3 = Tiresias()->Decide(s);
  EXPECT_EQ(d1.assign, d2.assign);
  EXPECT_EQ(d1.assign, d3.assign);
  EXPECT_EQ(d1.wake_at, d3.wake_at);
  EXPECT_EQ(Show(d1, c.f.cluster()), "j0=-; j1=a100-80g x4 on n0:4; j2=a100-80g x2 on n1:2; j3=a100-80g x2 on n1:2");
}

TEST(TiresiasTest, RejectsJobThatFitsNowhere) {
  PolicyFixture f(TwoByFour());
  f.AddJob(MakeJob("huge").Gpus(9));
  f.AddJob(MakeJob("ok").Gpus(2));
  Decision d = Tiresias()->Decide(f.Snap(0));
  ASSERT_EQ(d.reject.size(), 1u);
  EXPECT_EQ(d.reject[0].first, 0);
  EXPECT_EQ(d.reject[0].second, "needs 9 GPUs; the largest GPU type in the cluster has 8");
  EXPECT_EQ(Show(d, f.cluster()), "j1=a100-80g x2 on n0:2");
}

// The policy keeps each job's GPU types (fastest first) between decisions;
// a belief corrected in between (the daemon's measured step times) is seen
// at once.
TEST(TiresiasTest, SeesACorrectedBeliefAtTheNextDecision) {
  PolicyFixture f(TwoTypes());
  int a100 = f.Type("a100-80g");
  f.AddJob(MakeJob("a").Gpus(4));
  auto policy = Tiresias();
  // measured far slower on the A100s than believed
  std::vector<Decision> d = testing::DecisionsAroundACorrection(*policy, f, "a", a100, 100);
  EXPECT_EQ(Show(d[0], f.cluster()), "j0=a100-80g x4 on n0:4");
  EXPECT_EQ(Show(d[1], f.cluster()), "j0=a100-80g x4 on n0:4");
  EXPECT_EQ(Show(d[2], f.cluster()), "j0=v100-32g x4 on n1:4");
}

}  // namespace

// rounds_only (the Pollux artifact's Tiresias) acts at rounds only.
TEST(TiresiasTest, RoundsOnlyWaitsForTheRound) {
  PolicyFixture f(TwoByFour());
  f.AddJob(MakeJob("a").Gpus(4));
  auto policy = Tiresias("tiresias:rounds_only=true");
  Snapshot between = f.Snap(Seconds(30));
  between.at_round = false;
  EXPECT_TRUE(policy->Decide(between).assign.empty());
  Snapshot round = f.Snap(Seconds(60));
  EXPECT_EQ(policy->Decide(round).assign.size(), 1u);
  // The default acts on events too.
  EXPECT_EQ(Tiresias()->Decide(between).assign.size(), 1u);
  EXPECT_FALSE(PolicyRegistry::Builtin().Create("tiresias:rounds_only=maybe", PolicyContext{}).ok());
}

}  // namespace tessel
