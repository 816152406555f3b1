#include "policy/pollux.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "policy/goodput_oracle.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using goodput::BatchLimits;
using goodput::GradStats;
using goodput::ThroughputParams;
using testing::MakeJob;
using testing::PolicyFixture;
using testing::Assigned;
using testing::After;
using testing::ExpectNoDoubleBooking;

std::unique_ptr<Policy> MakePolicy(const std::string& spec) {
  auto p = PolicyRegistry::Builtin().Create(spec, PolicyContext{});
  EXPECT_TRUE(p.ok()) << spec << ": " << p.status().ToString();
  return p.ok() ? std::move(p).value() : nullptr;
}

// No double booking, and no more GPUs than the cluster has.
void ExpectValidPlacement(const Snapshot& snap, const std::vector<Allocation>& allocs) {
  ExpectNoDoubleBooking(snap, allocs);
  int total = 0;
  for (const Allocation& a : allocs) total += a.gpus();
  EXPECT_LE(total, snap.cluster->total_gpus());
}

// A CIFAR-like job: initial batch 128, up to 8192, 16..256 per GPU.
BatchLimits Limits() {
  BatchLimits l;
  l.init_batch = 128;
  l.max_batch = 8192;
  l.min_atomic = 16;
  l.max_atomic = 256;
  return l;
}

// Scales almost linearly: cheap synchronisation inside and across nodes.
ThroughputParams GoodScaling() {
  ThroughputParams p;
  p.alpha_c = 0.01;
  p.beta_c = 0.001;
  p.alpha_r = 0.002;
  p.beta_r = 0.0001;
  p.alpha_n = 0.004;
  p.beta_n = 0.0002;
  p.gamma = 1.0;
  return p;
}

// Synchronisation dominates: 0.5 s inside a node, 2 s across nodes.
ThroughputParams PoorScaling() {
  ThroughputParams p = GoodScaling();
  p.alpha_r = 0.5;
  p.beta_r = 0.05;
  p.alpha_n = 2.0;
  p.beta_n = 0.2;
  return p;
}

// Lots of gradient noise: large batches stay efficient.
GradStats Noisy() { return {1.0, 100.0}; }
// Little noise: a larger batch barely helps.
GradStats Quiet() { return {1.0, 0.05}; }

class Agents {
 public:
  // An adaptive agent with the same model on each of `ntypes` types, having
  // measured up to `measured` replicas.
  AgentReport* Add(int ntypes, const ThroughputParams& p, const GradStats& g, int measured,
                   bool adaptive = true, int fixed_batch = 128) {
    AgentReport r;
    r.grad = g;
    r.limits = Limits();
    r.adaptive = adaptive;
    r.fixed_batch = fixed_batch;
    r.params.assign(ntypes, p);
    r.max_replicas.assign(ntypes, measured);
    r.observations = 3;
    reports_.push_back(r);
    return &reports_.back();
  }

 private:
  std::deque<AgentReport> reports_;  // stable addresses
};

// ---------------------------------------------------------------------------

// p = -1 weighs a job's first GPU far above anyone's 20th: with more GPUs
// than jobs, every job runs, however poorly it scales.
TEST(PolluxPolicyTest, EveryJobGetsAGpuWhenGpusOutnumberJobs) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  for (int i = 0; i < 12; ++i) {
    JobView& v = f.AddJob(MakeJob("j" + std::to_string(i)).Elastic(1, 64).Submit(Seconds(10 * i)));
    v.agent = i % 3 == 0 ? agents.Add(nt, PoorScaling(), Quiet(), 4) : agents.Add(nt, GoodScaling(), Noisy(), 16);
  }
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(1200));
  Decision d = policy->Decide(snap);
  std::vector<Allocation> after = After(snap, d);
  ExpectValidPlacement(snap, after);
  int total = 0;
  for (size_t j = 0; j < after.size(); ++j) {
    EXPECT_GE(after[j].gpus(), 1) << "job " << j;
    total += after[j].gpus();
  }
  EXPECT_LE(total, 64);
  // Good scalers (caps 32) soak up most of the cluster.
  EXPECT_GT(total, 48);
  EXPECT_TRUE(d.reject.empty());
  // Deterministic: the same snapshot gives the same decision.
  Decision again = policy->Decide(f.Snap(Seconds(1200)));
  EXPECT_EQ(again.assign, d.assign);
}

// Nodes that more than one job spread over nodes uses.
int SharedSpreadNodes(const std::vector<Allocation>& allocs, int nodes) {
  std::vector<int> spread(nodes, 0);
  for (const Allocation& a : allocs)
    if (a.nodes() > 1)
      for (const Placement& p : a.parts) ++spread[p.node];
  return static_cast<int>(std::count_if(spread.begin(), spread.end(), [](int n) { return n > 1; }));
}

// Pollux's interference avoidance (its artifact's repair: "at most one
// distributed job per node"): by default no two spread jobs share a node;
// with avoid_interference=false the same jobs do (their odd counts leave
// partly used nodes that the next spread job fills).
TEST(PolluxPolicyTest, AvoidsPuttingTwoSpreadJobsOnANode) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  for (int i = 0; i < 10; ++i) {
    JobView& v = f.AddJob(MakeJob("j" + std::to_string(i)).Elastic(1, 6 + i % 3).Submit(Seconds(10 * i)));
    v.agent = agents.Add(nt, GoodScaling(), Noisy(), 16);
  }
  Snapshot snap = f.Snap(Seconds(1200));
  const int nodes = static_cast<int>(f.cluster().nodes().size());
  auto avoiding = MakePolicy("pollux");
  auto sharing = MakePolicy("pollux:avoid_interference=false");
  ASSERT_NE(avoiding, nullptr);
  ASSERT_NE(sharing, nullptr);
  std::vector<Allocation> with = After(snap, avoiding->Decide(snap));
  std::vector<Allocation> without = After(snap, sharing->Decide(snap));
  ExpectValidPlacement(snap, with);
  EXPECT_EQ(SharedSpreadNodes(with, nodes), 0);
  EXPECT_GT(SharedSpreadNodes(without, nodes), 0);
  int spread = 0;
  for (const Allocation& a : with) spread += a.nodes() > 1;
  EXPECT_GT(spread, 1) << "the test needs several spread jobs";
}

TEST(PolluxPolicyTest, NearLinearNoisyJobGetsMoreGpusThanPoorScaler) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  JobView& good = f.AddJob(MakeJob("good").Elastic(1, 64));
  JobView& poor = f.AddJob(MakeJob("poor").Elastic(1, 64));
  good.agent = agents.Add(nt, GoodScaling(), Noisy(), 32);
  poor.agent = agents.Add(nt, PoorScaling(), Quiet(), 32);
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(600));
  Decision d = policy->Decide(snap);
  std::vector<Allocation> after = After(snap, d);
  ExpectValidPlacement(snap, after);
  EXPECT_GE(after[poor.index].gpus(), 1);
  EXPECT_GT(after[good.index].gpus(), after[poor.index].gpus());
  EXPECT_GE(after[good.index].gpus(), 32) << after[good.index].ToString(f.cluster());
  // The poor scaler gains nothing from a second GPU (0.5 s of sync on a
  // 0.14 s step).
  EXPECT_EQ(after[poor.index].gpus(), 1);
}

// The same two jobs swapped in workload order: the result follows the
// jobs, not their positions.
TEST(PolluxPolicyTest, ScalingPreferenceIndependentOfJobOrder) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  JobView& poor = f.AddJob(MakeJob("poor").Elastic(1, 64));
  JobView& good = f.AddJob(MakeJob("good").Elastic(1, 64));
  good.agent = agents.Add(nt, GoodScaling(), Noisy(), 32);
  poor.agent = agents.Add(nt, PoorScaling(), Quiet(), 32);
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(600));
  std::vector<Allocation> after = After(snap, policy->Decide(snap));
  EXPECT_GT(after[good.index].gpus(), after[poor.index].gpus());
}

// A job on 1 GPU where 2 GPUs would be 1.42x faster (its exploration cap
// is 2). Young (10 s old, re-allocation factor 10/40), moving is not worth
// it; old (an hour) it is; with restart_penalty=0 the factor is 1 and it
// moves even when young.
TEST(PolluxPolicyTest, RestartPenaltyKeepsYoungJobsInPlace) {
  struct Case {
    const char* name;
    const char* policy;
    double age_s;
    int expect_gpus;
  };
  for (const Case& c : {Case{"young job stays", "pollux", 10, 1},
                        Case{"old job moves", "pollux", 3600, 2},
                        Case{"no penalty: young job moves", "pollux:restart_penalty=0", 10, 2}}) {
    SCOPED_TRACE(c.name);
    PolicyFixture f("pollux-64");
    Agents agents;
    const int nt = static_cast<int>(f.cluster().types().size());
    ThroughputParams p;
    p.alpha_c = 0.02;
    p.beta_c = 0.001;  // 0.148 s for 128 samples, 0.084 s for 64
    p.alpha_r = 0.02;  // + 0.02 s sync on 2 GPUs: 1.42x
    p.beta_r = 0.001;
    p.alpha_n = 0.05;
    p.beta_n = 0.001;
    JobView& j = f.AddJob(MakeJob("j").Elastic(1, 64));
    j.agent = agents.Add(nt, p, Noisy(), /*measured=*/1, /*adaptive=*/false, /*fixed_batch=*/128);
    Allocation one = f.Place(0, 1);
    f.Run(j, one, 0);
    auto policy = MakePolicy(c.policy);
    ASSERT_NE(policy, nullptr);
    Snapshot snap = f.Snap(Seconds(c.age_s));
    Decision d = policy->Decide(snap);
    std::vector<Allocation> after = After(snap, d);
    ExpectValidPlacement(snap, after);
    EXPECT_EQ(after[0].gpus(), c.expect_gpus);
    if (c.expect_gpus == 1) {
      EXPECT_EQ(Assigned(d, 0), nullptr) << "an unchanged job is not named";
      EXPECT_EQ(after[0], one);
    }
  }
}

// Restarts eat into the factor: an hour-old job that restarted 120 times
// (120 x 30 s = the whole hour) is pinned where it is.
TEST(PolluxPolicyTest, ManyRestartsPinAJob) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  JobView& j = f.AddJob(MakeJob("j").Elastic(1, 64));
  j.agent = agents.Add(nt, GoodScaling(), Noisy(), /*measured=*/4);
  Allocation two = f.Place(0, 2);
  f.Run(j, two, 0);
  j.restarts = 120;
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(3600));
  Decision d = policy->Decide(snap);
  EXPECT_EQ(Assigned(d, 0), nullptr);
  // Without the restarts it would grow to its cap of 8.
  j.restarts = 0;
  std::vector<Allocation> after = After(snap, policy->Decide(f.Snap(Seconds(3600))));
  EXPECT_EQ(after[0].gpus(), 8);
}

// The exploration cap: at most twice the most replicas the job has
// measured (at least 1). A perfect scaler alone on 64 GPUs reaches it.
TEST(PolluxPolicyTest, ExplorationCapLimitsGrowth) {
  for (int measured : {0, 1, 2, 3, 8, 40}) {
    SCOPED_TRACE("measured " + std::to_string(measured));
    PolicyFixture f("pollux-64");
    Agents agents;
    const int nt = static_cast<int>(f.cluster().types().size());
    JobView& j = f.AddJob(MakeJob("j").Elastic(1, 64));
    j.agent = agents.Add(nt, GoodScaling(), Noisy(), measured);
    auto policy = MakePolicy("pollux");
    ASSERT_NE(policy, nullptr);
    Snapshot snap = f.Snap(Seconds(600));
    std::vector<Allocation> after = After(snap, policy->Decide(snap));
    ExpectValidPlacement(snap, after);
    const int cap = std::min(64, std::max(1, 2 * measured));
    EXPECT_LE(after[0].gpus(), cap);
    EXPECT_EQ(after[0].gpus(), cap);
    if (measured <= 2) {
      EXPECT_LE(after[0].gpus(), 4);
    }
  }
}

// max_gpus option and the application's own cap (AgentReport::max_gpus).
TEST(PolluxPolicyTest, MaxGpusOptionAndAppCap) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  JobView& a = f.AddJob(MakeJob("a").Elastic(1, 64));
  JobView& b = f.AddJob(MakeJob("b").Elastic(1, 64));
  a.agent = agents.Add(nt, GoodScaling(), Noisy(), 32);
  AgentReport* rb = agents.Add(nt, GoodScaling(), Noisy(), 32);
  rb->max_gpus = 1;  // like the artifact's ncf
  b.agent = rb;
  auto policy = MakePolicy("pollux:max_gpus=6");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(600));
  std::vector<Allocation> after = After(snap, policy->Decide(snap));
  EXPECT_EQ(after[a.index].gpus(), 6);
  EXPECT_EQ(after[b.index].gpus(), 1);
}

// Jobs without an agent (LLM jobs timed by the estimator, efficiency 1)
// share the cluster with agent jobs; rigid ones get exactly their request.
TEST(PolluxPolicyTest, JobsWithoutAgentAreScheduled) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  JobView& elastic = f.AddJob(MakeJob("gpt-elastic").Model("gpt3-350m").Batch(8).Elastic(1, 8));
  JobView& rigid = f.AddJob(MakeJob("cnn-rigid").Model("resnet-50").Batch(64).Gpus(2));
  for (int i = 0; i < 3; ++i) {
    JobView& v = f.AddJob(MakeJob("agent" + std::to_string(i)).Elastic(1, 64));
    v.agent = agents.Add(nt, GoodScaling(), Noisy(), 32);
  }
  ASSERT_EQ(elastic.agent, nullptr);
  ASSERT_EQ(rigid.agent, nullptr);
  // The estimator says both fit on T4s.
  ASSERT_TRUE(f.belief().Rate(*elastic.spec, 0, 1, 1).fits) << f.belief().Rate(*elastic.spec, 0, 1, 1).reason;
  ASSERT_TRUE(f.belief().Rate(*rigid.spec, 0, 2, 1).fits) << f.belief().Rate(*rigid.spec, 0, 2, 1).reason;
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(600));
  Decision d = policy->Decide(snap);
  std::vector<Allocation> after = After(snap, d);
  ExpectValidPlacement(snap, after);
  EXPECT_GE(after[elastic.index].gpus(), 1);
  EXPECT_LE(after[elastic.index].gpus(), 8);
  EXPECT_EQ(after[rigid.index].gpus(), 2);
  for (size_t j = 2; j < after.size(); ++j) EXPECT_GE(after[j].gpus(), 1) << "job " << j;
}

// What a policy keeps between rounds (goodputs of jobs without an agent,
// its scratch curves) never changes a decision: round after round, as jobs
// start running and leave, a long-lived policy decides as a fresh one.
// Optimus shares both mechanisms and is checked here too.
TEST(PolluxPolicyTest, KeptStateNeverChangesADecision) {
  for (const char* spec : {"pollux", "optimus"}) {
    SCOPED_TRACE(spec);
    PolicyFixture f("pollux-64");
    Agents agents;
    const int nt = static_cast<int>(f.cluster().types().size());
    for (int i = 0; i < 3; ++i) {
      JobView& v = f.AddJob(MakeJob("agent" + std::to_string(i)).Elastic(1, 64).Submit(Seconds(i)));
      v.agent = agents.Add(nt, i == 1 ? PoorScaling() : GoodScaling(), Noisy(), 2 + 2 * i);
    }
    JobView& rigid = f.AddJob(MakeJob("cnn-rigid").Model("resnet-50").Batch(64).Gpus(2));
    f.AddJob(MakeJob("gpt-elastic").Model("gpt3-350m").Batch(8).Elastic(1, 8));
    auto kept = MakePolicy(spec);
    ASSERT_NE(kept, nullptr);
    for (int round = 1; round <= 4; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      if (round == 2) f.Run(rigid, f.Place(0, 2), Seconds(700));
      if (round == 3) f.Run(f.jobs()[0], f.Place(0, 4), Seconds(1000));
      Snapshot snap = f.Snap(Seconds(300 + 300 * round));
      // In round 4 two jobs have left.
      std::vector<const JobView*> active(snap.jobs.begin(), snap.jobs.end());
      if (round == 4) active.erase(active.begin() + 1, active.begin() + 3);
      snap.jobs = active;
      Decision d = kept->Decide(snap);
      Decision want = MakePolicy(spec)->Decide(snap);
      EXPECT_FALSE(d.assign.empty());
      EXPECT_EQ(d.assign, want.assign);
    }
  }
}

// Pollux re-allocates at rounds only: a decision on an event (arrival,
// completion) changes nothing.
TEST(PolluxPolicyTest, IgnoresDecisionsBetweenRounds) {
  PolicyFixture f("pollux-64");
  Agents agents;
  const int nt = static_cast<int>(f.cluster().types().size());
  JobView& j = f.AddJob(MakeJob("j").Elastic(1, 64));
  j.agent = agents.Add(nt, GoodScaling(), Noisy(), 4);
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  Snapshot snap = f.Snap(Seconds(600));
  snap.at_round = false;
  Decision d = policy->Decide(snap);
  EXPECT_TRUE(d.assign.empty());
  snap.at_round = true;
  EXPECT_FALSE(policy->Decide(snap).assign.empty());
}

TEST(PolluxPolicyTest, RejectsBadOptions) {
  struct Bad {
    const char* spec;
    const char* expect;  // in the message
  };
  for (const Bad& b : {Bad{"pollux:p=2", "p < 1"}, Bad{"pollux:p=1", "p < 1"},
                       Bad{"pollux:restart_penalty=-1", "restart_penalty >= 0"},
                       Bad{"pollux:max_gpus=0", "max_gpus >= 1"}, Bad{"pollux:p=abc", "expected a number"},
                       Bad{"pollux:bogus=1", "unknown option"}}) {
    SCOPED_TRACE(b.spec);
    auto p = PolicyRegistry::Builtin().Create(b.spec, PolicyContext{});
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(b.expect), std::string::npos) << p.status().message();
  }
  for (const char* ok : {"pollux", "pollux:p=0", "pollux:p=-4:restart_penalty=0:max_gpus=8", "pollux:p=0.5"}) {
    EXPECT_TRUE(PolicyRegistry::Builtin().Create(ok, PolicyContext{}).ok()) << ok;
  }
}

TEST(PolluxPolicyTest, TraitsAdaptBatchButDoNotProfileTypes) {
  auto policy = MakePolicy("pollux");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->name(), "pollux");
  EXPECT_TRUE(policy->traits().uses_rounds);
  EXPECT_TRUE(policy->traits().adapts_batch);
  EXPECT_FALSE(policy->traits().profiles_types);
}

}  // namespace
}  // namespace tessel
