#include "policy/sia.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

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

// Sia's configurations: 1, 2, 4, ... GPUs (powers of two, or the node's
// size) on one node, or whole nodes.
void ExpectSiaConfig(const Cluster& c, const Allocation& a) {
  if (a.empty()) return;
  const int gpn = c.types()[a.type].max_gpus_per_node;
  const int g = a.gpus();
  if (g <= gpn) {
    EXPECT_EQ(a.nodes(), 1) << a.ToString(c);
    EXPECT_TRUE((g & (g - 1)) == 0 || g == gpn) << a.ToString(c);
  } else {
    EXPECT_EQ(g % gpn, 0) << a.ToString(c);
    for (const Placement& p : a.parts) EXPECT_EQ(p.gpus, gpn) << a.ToString(c);
  }
}

BatchLimits Limits() {
  BatchLimits l;
  l.init_batch = 128;
  l.max_batch = 8192;
  l.min_atomic = 16;
  l.max_atomic = 256;
  return l;
}

ThroughputParams Base() {
  ThroughputParams p;
  p.alpha_c = 0.02;
  p.beta_c = 0.001;
  p.alpha_r = 0.004;
  p.beta_r = 0.0002;
  p.alpha_n = 0.01;
  p.beta_n = 0.0005;
  return p;
}

// `p` with compute `factor` times faster.
ThroughputParams Faster(ThroughputParams p, double factor) {
  p.alpha_c /= factor;
  p.beta_c /= factor;
  return p;
}

class Agents {
 public:
  AgentReport* Add(std::vector<ThroughputParams> per_type, std::vector<int> measured, GradStats g = {1.0, 20.0},
                   bool adaptive = true, int fixed_batch = 128) {
    AgentReport r;
    r.grad = g;
    r.limits = Limits();
    r.adaptive = adaptive;
    r.fixed_batch = fixed_batch;
    for (const ThroughputParams& p : per_type) r.params.push_back(p);
    r.max_replicas = std::move(measured);
    r.observations = 3;
    reports_.push_back(r);
    return &reports_.back();
  }

 private:
  std::deque<AgentReport> reports_;
};

class SiaTest : public ::testing::Test {
 protected:
  SiaTest() : f_("sia-64") {
    t4_ = f_.Type("t4");
    a100_ = f_.Type("a100-40g");
    rtx_ = f_.Type("rtx2080ti");
  }
  std::vector<ThroughputParams> Same(const ThroughputParams& p) const {
    return std::vector<ThroughputParams>(f_.cluster().types().size(), p);
  }
  PolicyFixture f_;
  Agents agents_;
  int t4_ = -1, a100_ = -1, rtx_ = -1;
};

TEST_F(SiaTest, ClusterHasThreeTypes) {
  ASSERT_GE(t4_, 0);
  ASSERT_GE(a100_, 0);
  ASSERT_GE(rtx_, 0);
  EXPECT_EQ(f_.cluster().types()[t4_].max_gpus_per_node, 4);
  EXPECT_EQ(f_.cluster().types()[a100_].max_gpus_per_node, 8);
  EXPECT_EQ(f_.cluster().types()[rtx_].max_gpus_per_node, 8);
}

// One job is 5x faster on A100s, the others the same everywhere: the A100s
// go to it, and every allocation is one of Sia's configurations.
TEST_F(SiaTest, A100GoesToTheJobThatGainsMostThere) {
  std::vector<ThroughputParams> fast_on_a100 = Same(Base());
  fast_on_a100[a100_] = Faster(Base(), 5);
  JobView& a = f_.AddJob(MakeJob("a").Elastic(1, 64));
  a.agent = agents_.Add(fast_on_a100, {4, 4, 4});
  for (int i = 0; i < 3; ++i) {
    JobView& v = f_.AddJob(MakeJob("b" + std::to_string(i)).Elastic(1, 64));
    v.agent = agents_.Add(Same(Base()), {4, 4, 4});
  }
  Snapshot snap = f_.Snap(Seconds(600));
  SiaRoundStats stats;
  Result<Decision> d = SiaDecide(snap, SiaParams{}, &stats);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<Allocation> after = After(snap, *d);
  ExpectNoDoubleBooking(snap, after);
  EXPECT_EQ(after[a.index].type, a100_) << after[a.index].ToString(f_.cluster());
  EXPECT_EQ(after[a.index].gpus(), 8) << "exploration cap 2 x 4 measured";
  for (const Allocation& x : after) {
    EXPECT_FALSE(x.empty());
    ExpectSiaConfig(f_.cluster(), x);
  }
  EXPECT_FALSE(stats.hit_time_limit);
  EXPECT_EQ(stats.jobs, 4);
  // Per job and type, with cap 8: T4 1, 2, 4 GPUs and 2 whole nodes; A100
  // and RTX 1, 2, 4, 8 GPUs.
  EXPECT_EQ(stats.variables, 4 * 12);
}

// The same through the bootstrapped view: the job has run on up to 4 T4s
// and only been profiled on one GPU of the other types. Its A100 goodput
// borrows the T4 scaling times the single-GPU ratio, so it still goes to
// the A100s.
TEST_F(SiaTest, BootstrappedProfilesStillPreferA100) {
  std::vector<ThroughputParams> fast_on_a100 = Same(Base());
  fast_on_a100[a100_] = Faster(Base(), 5);
  std::vector<int> measured(3, 1);
  measured[t4_] = 4;
  JobView& a = f_.AddJob(MakeJob("a").Elastic(1, 64));
  a.agent = agents_.Add(fast_on_a100, measured);
  JobView& b = f_.AddJob(MakeJob("b").Elastic(1, 64));
  b.agent = agents_.Add(Same(Base()), measured);
  Snapshot snap = f_.Snap(Seconds(600));
  Result<Decision> d = SiaDecide(snap, SiaParams{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<Allocation> after = After(snap, *d);
  ExpectNoDoubleBooking(snap, after);
  EXPECT_EQ(after[a.index].type, a100_) << after[a.index].ToString(f_.cluster());
  EXPECT_GT(after[a.index].gpus(), 1);
  for (const Allocation& x : after) ExpectSiaConfig(f_.cluster(), x);
}

// 70 jobs, 64 GPUs, and jobs that scale only mildly (2 GPUs 1.1x): the
// no-allocation penalty makes the program run as many jobs as it can, each
// on one GPU.
TEST_F(SiaTest, MoreJobsThanGpusRunsAsManyAsPossible) {
  ThroughputParams mild = Base();
  mild.alpha_r = 0.05;  // 0.148 s on 1 GPU; 0.084 + 0.05 on 2 GPUs
  mild.beta_r = 0.001;
  for (int i = 0; i < 70; ++i) {
    JobView& v = f_.AddJob(MakeJob("j" + std::to_string(i)).Elastic(1, 64).Submit(Seconds(i)));
    v.agent = agents_.Add(Same(mild), {2, 2, 2}, {1.0, 20.0}, /*adaptive=*/false, /*fixed_batch=*/128);
  }
  Snapshot snap = f_.Snap(Seconds(600));
  SiaRoundStats stats;
  Result<Decision> d = SiaDecide(snap, SiaParams{}, &stats);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<Allocation> after = After(snap, *d);
  ExpectNoDoubleBooking(snap, after);
  int running = 0, gpus = 0;
  for (const Allocation& x : after) {
    if (x.empty()) continue;
    ++running;
    gpus += x.gpus();
    EXPECT_EQ(x.gpus(), 1) << x.ToString(f_.cluster());
  }
  EXPECT_EQ(running, 64);
  EXPECT_EQ(gpus, 64);
  EXPECT_EQ(stats.jobs, 70);
  EXPECT_EQ(stats.variables, 70 * 9);  // caps of 4: 1, 2, 4 GPUs on each type
  EXPECT_FALSE(stats.hit_time_limit);
}

// Past 4000 variables SiaDecide solves the LP relaxation and rounds the
// jobs it leaves fractional: the result must still fit the cluster, and
// with 450 mildly scaling jobs still run 64 of them on one GPU each.
TEST_F(SiaTest, LargeRoundUsesRelaxationAndStillFits) {
  ThroughputParams mild = Base();
  mild.alpha_r = 0.05;
  mild.beta_r = 0.001;
  for (int i = 0; i < 450; ++i) {
    JobView& v = f_.AddJob(MakeJob("j" + std::to_string(i)).Elastic(1, 64).Submit(Seconds(i)));
    v.agent = agents_.Add(Same(mild), {2, 2, 2}, {1.0, 20.0}, /*adaptive=*/false, /*fixed_batch=*/128);
  }
  Snapshot snap = f_.Snap(Seconds(3600));
  SiaRoundStats stats;
  Result<Decision> d = SiaDecide(snap, SiaParams{}, &stats);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(stats.variables, 450 * 9);
  EXPECT_FALSE(stats.hit_time_limit);
  std::vector<Allocation> after = After(snap, *d);
  ExpectNoDoubleBooking(snap, after);
  int running = 0, gpus = 0;
  for (const Allocation& x : after) {
    if (x.empty()) continue;
    ++running;
    gpus += x.gpus();
    ExpectSiaConfig(f_.cluster(), x);
  }
  EXPECT_LE(gpus, 64);
  EXPECT_EQ(running, 64);
}

// Where no GPU type is contended the optimum is taken without the solver:
// the decision is the one the solver gives, on agent jobs (some running,
// some pending) and jobs without an agent alike; a contended round still
// goes to the solver.
TEST_F(SiaTest, UncontendedShortcutMatchesTheSolver) {
  // Each agent job is fastest on its own type (at most 4 GPUs: it has
  // measured 2).
  for (int t : {a100_, t4_, rtx_}) {
    JobView& v = f_.AddJob(MakeJob("a" + std::to_string(t)).Elastic(1, 64).Submit(Seconds(10 * t)));
    std::vector<ThroughputParams> p = Same(Base());
    p[t] = Faster(Base(), 2);
    v.agent = agents_.Add(p, {2, 2, 2});
  }
  f_.AddJob(MakeJob("r").Model("resnet-50").Batch(64).Gpus(3));
  f_.AddJob(MakeJob("e").Model("gpt3-350m").Batch(8).Elastic(1, 8));
  f_.Run(f_.jobs()[0], f_.Place(a100_, 2), Seconds(5));
  f_.Run(f_.jobs()[1], f_.Place(t4_, 2), Seconds(15));
  Snapshot snap = f_.Snap(Seconds(900));
  SiaParams solver_only;
  solver_only.shortcut_uncontended = false;
  SiaRoundStats direct, solved;
  Result<Decision> d = SiaDecide(snap, SiaParams{}, &direct);
  Result<Decision> want = SiaDecide(snap, solver_only, &solved);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_FALSE(direct.solved);
  EXPECT_TRUE(solved.solved);
  EXPECT_EQ(direct.variables, solved.variables);
  EXPECT_EQ(d->assign, want->assign);
  std::vector<Allocation> after = After(snap, *d);
  EXPECT_EQ(after, After(snap, *want));
  for (int i = 0; i < 3; ++i) {
    int fast = i == 0 ? a100_ : i == 1 ? t4_ : rtx_;
    EXPECT_EQ(after[i].type, fast) << after[i].ToString(f_.cluster());
    EXPECT_EQ(after[i].gpus(), 4) << after[i].ToString(f_.cluster());
  }
  for (const Allocation& x : after) EXPECT_FALSE(x.empty());

  // 70 single-GPU jobs on 64 GPUs: contended, solved.
  for (int i = 0; i < 70; ++i) {
    JobView& v = f_.AddJob(MakeJob("j" + std::to_string(i)).Elastic(1, 64).Submit(Seconds(i)));
    v.agent = agents_.Add(Same(Base()), {1, 1, 1}, {1.0, 20.0}, /*adaptive=*/false, /*fixed_batch=*/128);
  }
  SiaRoundStats contended;
  ASSERT_TRUE(SiaDecide(f_.Snap(Seconds(900)), SiaParams{}, &contended).ok());
  EXPECT_TRUE(contended.solved);
}

// The policy keeps goodputs of jobs without an agent across rounds: its
// decisions are those of SiaDecide without a cache, round after round.
TEST_F(SiaTest, CachedRoundsMatchUncachedOnes) {
  for (int i = 0; i < 4; ++i) f_.AddJob(MakeJob("r" + std::to_string(i)).Model("resnet-50").Batch(64).Gpus(1 + i));
  JobView& v = f_.AddJob(MakeJob("a").Elastic(1, 64));
  v.agent = agents_.Add(Same(Base()), {2, 2, 2});
  auto policy = PolicyRegistry::Builtin().Create("sia", PolicyContext{});
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  for (int round = 1; round <= 3; ++round) {
    // Between rounds, jobs start running (their allocation is part of the
    // next round's question).
    if (round == 2) f_.Run(f_.jobs()[0], f_.Place(a100_, 1), Seconds(400));
    if (round == 3) f_.Run(f_.jobs()[1], f_.Place(t4_, 2), Seconds(700));
    Snapshot snap = f_.Snap(Seconds(300 * round));
    Result<Decision> want = SiaDecide(snap, SiaParams{});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    Decision d = (*policy)->Decide(snap);
    EXPECT_FALSE(d.assign.empty());
    EXPECT_EQ(d.assign, want->assign) << "round " << round;
  }
}

// Running jobs, pending jobs, rigid jobs without an agent: the decision
// never hands a GPU out twice, and rigid jobs get exactly their request
// (3 GPUs: not a Sia configuration, added for them).
TEST_F(SiaTest, MixedStateNeverDoubleBooks) {
  for (int i = 0; i < 6; ++i) {
    JobView& v = f_.AddJob(MakeJob("a" + std::to_string(i)).Elastic(1, 64).Submit(Seconds(10 * i)));
    std::vector<ThroughputParams> p = Same(Base());
    p[a100_] = Faster(Base(), 1.5 + i);
    v.agent = agents_.Add(p, {4, 4, 4});
  }
  JobView& rigid = f_.AddJob(MakeJob("r").Model("resnet-50").Batch(64).Gpus(3));
  // Two of the agent jobs already run (one on A100s, one on T4s).
  f_.Run(f_.jobs()[0], f_.Place(a100_, 4), Seconds(5));
  f_.Run(f_.jobs()[1], f_.Place(t4_, 2), Seconds(15));
  Snapshot snap = f_.Snap(Seconds(900));
  Result<Decision> d = SiaDecide(snap, SiaParams{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<Allocation> after = After(snap, *d);
  ExpectNoDoubleBooking(snap, after);
  EXPECT_EQ(after[rigid.index].gpus(), 3) << after[rigid.index].ToString(f_.cluster());
  for (size_t j = 0; j < 6; ++j) {
    EXPECT_FALSE(after[j].empty()) << "job " << j;
    ExpectSiaConfig(f_.cluster(), after[j]);
  }
  // Deterministic.
  Result<Decision> again = SiaDecide(f_.Snap(Seconds(900)), SiaParams{});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->assign, d->assign);
}

// KNOWN BUG (see the report): SiaDecide values a configuration of 8 GPUs on
// one A100 node, but PlaceGrants ignores the node count a configuration
// assumes. Two jobs that keep 4 A100s on each A100 node leave 8 free GPUs
// split 4 + 4, and the job granted "8 GPUs on one node" is placed over both
// nodes (n6:4,n7:4): not one of Sia's configurations, and slower than the
// goodput the program chose it for (inter-node sync).
TEST_F(SiaTest, ChosenSingleNodeConfigIsPlacedOnOneNode) {
  std::vector<ThroughputParams> fast_on_a100 = Same(Base());
  fast_on_a100[a100_] = Faster(Base(), 5);
  // x and y: the same on every type, capped at 4 GPUs, each holding 4 A100s
  // on its own node for an hour.
  JobView& x = f_.AddJob(MakeJob("x").Elastic(1, 64));
  x.agent = agents_.Add(Same(Base()), {2, 2, 2});
  JobView& y = f_.AddJob(MakeJob("y").Elastic(1, 64));
  y.agent = agents_.Add(Same(Base()), {2, 2, 2});
  const ClusterNode* first = nullptr;
  const ClusterNode* second = nullptr;
  for (const ClusterNode& n : f_.cluster().nodes()) {
    if (n.type != a100_) continue;
    (first == nullptr ? first : second) = &n;
  }
  ASSERT_NE(second, nullptr);
  f_.Run(x, Allocation{a100_, {{first->id, 4}}}, 0);
  f_.Run(y, Allocation{a100_, {{second->id, 4}}}, 0);
  // z: 5x faster on A100s, cap 8.
  JobView& z = f_.AddJob(MakeJob("z").Elastic(1, 64));
  z.agent = agents_.Add(fast_on_a100, {4, 4, 4});
  Snapshot snap = f_.Snap(Seconds(3600));
  Result<Decision> d = SiaDecide(snap, SiaParams{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<Allocation> after = After(snap, *d);
  ExpectNoDoubleBooking(snap, after);
  ASSERT_EQ(after[z.index].type, a100_) << after[z.index].ToString(f_.cluster());
  ASSERT_EQ(after[z.index].gpus(), 8);
  EXPECT_EQ(after[z.index].nodes(), 1) << "Sia's 8-GPU single-node configuration placed as "
                                       << after[z.index].ToString(f_.cluster());
  for (const Allocation& a : after) ExpectSiaConfig(f_.cluster(), a);
}

// A job that names a GPU type gets that type, even where another is faster.
TEST_F(SiaTest, RequestedTypeIsHonoured) {
  std::vector<ThroughputParams> p = Same(Base());
  p[a100_] = Faster(Base(), 5);
  JobView& v = f_.AddJob(MakeJob("t4-only").Elastic(1, 64).Type("t4"));
  v.agent = agents_.Add(p, {4, 4, 4});
  Snapshot snap = f_.Snap(Seconds(600));
  SiaRoundStats stats;
  Result<Decision> d = SiaDecide(snap, SiaParams{}, &stats);
  ASSERT_TRUE(d.ok());
  std::vector<Allocation> after = After(snap, *d);
  EXPECT_EQ(after[0].type, t4_);
  EXPECT_EQ(stats.variables, 4);  // T4 only: 1, 2, 4, 8 (2 nodes)
}

// A young job (10 s) that runs on 1 GPU and would be 1.42x faster on 4
// stays put: the re-allocation factor (10 / 40) makes every other
// configuration worth a quarter. An hour later (factor 0.99) it grows.
TEST_F(SiaTest, YoungRunningJobStaysPut) {
  ThroughputParams mild = Base();
  mild.alpha_r = 0.05;
  mild.beta_r = 0.001;
  JobView& v = f_.AddJob(MakeJob("j").Elastic(1, 64));
  v.agent = agents_.Add(Same(mild), {2, 2, 2}, {1.0, 20.0}, /*adaptive=*/false, /*fixed_batch=*/128);
  Allocation one = f_.Place(rtx_, 1);
  f_.Run(v, one, 0);
  Snapshot snap = f_.Snap(Seconds(10));
  Result<Decision> d = SiaDecide(snap, SiaParams{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Assigned(*d, 0), nullptr);
  Snapshot later = f_.Snap(Seconds(3600));
  Result<Decision> d2 = SiaDecide(later, SiaParams{});
  ASSERT_TRUE(d2.ok());
  EXPECT_GT(After(later, *d2)[0].gpus(), 1);
}

TEST_F(SiaTest, PolicyMatchesSiaDecide) {
  JobView& v = f_.AddJob(MakeJob("j").Elastic(1, 64));
  v.agent = agents_.Add(Same(Base()), {4, 4, 4});
  auto policy = PolicyRegistry::Builtin().Create("sia", PolicyContext{});
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ((*policy)->name(), "sia");
  EXPECT_TRUE((*policy)->traits().uses_rounds);
  EXPECT_TRUE((*policy)->traits().adapts_batch);
  EXPECT_TRUE((*policy)->traits().profiles_types);
  Snapshot snap = f_.Snap(Seconds(600));
  Decision d = (*policy)->Decide(snap);
  Result<Decision> direct = SiaDecide(snap, SiaParams{});
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(d.assign, direct->assign);
  EXPECT_FALSE(d.assign.empty());
}

// Sia solves at rounds only; SiaDecide itself always solves.
TEST_F(SiaTest, PolicyIgnoresDecisionsBetweenRounds) {
  JobView& v = f_.AddJob(MakeJob("j").Elastic(1, 64));
  v.agent = agents_.Add(Same(Base()), {4, 4, 4});
  auto policy = PolicyRegistry::Builtin().Create("sia", PolicyContext{});
  ASSERT_TRUE(policy.ok());
  Snapshot snap = f_.Snap(Seconds(600));
  snap.at_round = false;
  EXPECT_TRUE((*policy)->Decide(snap).assign.empty());
  Result<Decision> direct = SiaDecide(snap, SiaParams{});
  ASSERT_TRUE(direct.ok());
  EXPECT_FALSE(direct->assign.empty());
}

TEST(SiaOptionsTest, RejectsBadOptions) {
  struct Bad {
    const char* spec;
    const char* expect;
  };
  for (const Bad& b : {Bad{"sia:p=0.5", "p < 0"}, Bad{"sia:p=0", "p < 0"}, Bad{"sia:lambda_n=-1", "lambda_n"},
                       Bad{"sia:lambda_a=-0.1", "lambda_a"}, Bad{"sia:restart_penalty=-5", "restart_penalty"},
                       Bad{"sia:max_gpus=0", "max_gpus >= 1"}, Bad{"sia:p=x", "expected a number"},
                       Bad{"sia:bogus=1", "unknown option"}}) {
    SCOPED_TRACE(b.spec);
    auto p = PolicyRegistry::Builtin().Create(b.spec, PolicyContext{});
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(b.expect), std::string::npos) << p.status().message();
  }
  for (const char* ok : {"sia", "sia:p=-1", "sia:p=-0.5:lambda_n=2:lambda_a=0:restart_penalty=0:max_gpus=16"}) {
    EXPECT_TRUE(PolicyRegistry::Builtin().Create(ok, PolicyContext{}).ok()) << ok;
  }
}

}  // namespace
}  // namespace tessel
