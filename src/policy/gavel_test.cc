#include "policy/gavel.h"

#include <gtest/gtest.h>

#include <memory>

#include "testing/test_data.h"

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using testing::JobBuilder;
using testing::MakeJob;
using testing::PolicyFixture;
using testing::Assigned;

// ---------------------------------------------------------------------------
// The LP alone, on throughput matrices written by hand.

struct LpCase {
  std::string name;
  GavelObjective objective;
  std::vector<int> capacity;
  std::vector<GavelLpJob> jobs;
  std::vector<std::vector<double>> expected_x;  // X[job][type]
  double expected_objective;
};

class GavelLpTest : public ::testing::TestWithParam<LpCase> {};

TEST_P(GavelLpTest, Allocates) {
  const LpCase& c = GetParam();
  Result<GavelLpSolution> sol = SolveGavelLp(c.objective, c.jobs, c.capacity);
  ASSERT_TRUE(sol.ok()) << sol.status().ToString();
  ASSERT_EQ(sol->time_fraction.size(), c.expected_x.size());
  for (size_t j = 0; j < c.expected_x.size(); ++j) {
    for (size_t k = 0; k < c.capacity.size(); ++k) {
      EXPECT_NEAR(sol->time_fraction[j][k], c.expected_x[j][k], 1e-6) << "job " << j << " type " << k;
    }
  }
  EXPECT_NEAR(sol->objective, c.expected_objective, 1e-6);
}

// Two types of one GPU each; job A runs 4x faster on type 0 than on type 1,
// job B 1.77x (a transformer and a CNN on A100 vs V100).
// norm_A = (4 + 1) / 2 = 2.5, norm_B = (1.77 + 1) / 2 = 1.385.
const std::vector<GavelLpJob> kTwoSpeedups = {{1, {4.0, 1.0}}, {1, {1.77, 1.0}}};

INSTANTIATE_TEST_SUITE_P(
    Gavel, GavelLpTest,
    ::testing::Values(
        // One GPU, two jobs with different throughputs (units differ by
        // model): normalized, max-min splits the time equally.
        LpCase{"MaxMinEqualizesNormalizedThroughput",
               GavelObjective::kMaxMinFairness,
               {1},
               {{1, {1.0}}, {1, {3.0}}},
               {{0.5}, {0.5}},
               0.5},
        // Two jobs on two single-GPU types: whatever the speedups, each job
        // runs all the time; max-min equalizes by splitting both types
        // (1.6 x + 0.4 (1 - x) = 1.278 (1 - x) + 0.722 x at x = 1/2).
        LpCase{"MaxMinTwoJobsTwoTypesShareEqually",
               GavelObjective::kMaxMinFairness,
               {1, 1},
               kTwoSpeedups,
               {{0.5, 0.5}, {0.5, 0.5}},
               1.0},
        // Max-sum: the type goes to the job with the largest relative
        // speedup there (A: 1.6 on type 0; B: 0.722 on type 1).
        LpCase{"MaxSumGivesTypeToLargestRelativeSpeedup",
               GavelObjective::kMaxSumThroughput,
               {1, 1},
               kTwoSpeedups,
               {{1, 0}, {0, 1}},
               4.0 / 2.5 + 1.0 / 1.385},
        // Scale factors: an 8-GPU and a 1-GPU job with equal speeds on one
        // 8-GPU type. The minimum (8 X_A = X_B = 1) leaves 7 GPUs that the
        // second phase gives the large job: X_A = 7/8.
        LpCase{"MaxMinScaleFactorAndNoIdleCapacity",
               GavelObjective::kMaxMinFairness,
               {8},
               {{8, {1.0}}, {1, {1.0}}},
               {{0.875}, {1.0}},
               1.0},
        // A job that runs nowhere (all throughputs 0) and a type too small
        // for a job get no time and do not bound the minimum.
        LpCase{"RowsAndTypesThatCannotRun",
               GavelObjective::kMaxMinFairness,
               {2, 8},
               {{4, {1.0, 1.0}}, {1, {0.0, 0.0}}},
               {{0.0, 1.0}, {0.0, 0.0}},
               4.0 * 1.0 / (2.0 * 1.0 / 10 + 8.0 * 1.0 / 10)},
        LpCase{"NoJobs", GavelObjective::kMaxSumThroughput, {4}, {}, {}, 0.0}),
    [](const ::testing::TestParamInfo<LpCase>& info) { return info.param.name; });

// The program kept between solves (a policy's GavelLp) reaches the
// same optimum as a fresh solve over a sequence of job sets: jobs arrive
// and leave, classes empty and refill, the capacity changes once.
TEST(GavelLpKeptTest, WarmSolvesMatchFreshOnes) {
  for (GavelObjective objective : {GavelObjective::kMaxMinFairness, GavelObjective::kMaxSumThroughput}) {
    SCOPED_TRACE(objective == GavelObjective::kMaxMinFairness ? "max-min" : "max-sum");
    std::vector<GavelLpJob> pool = {{1, {2.0, 1.0}}, {2, {1.0, 1.0}}, {1, {0.0, 3.0}},
                                    {4, {5.0, 2.0}}, {1, {1.5, 0.5}}, {2, {0.0, 0.7}}};
    GavelLp kept(objective);
    uint32_t bits = 12345;
    for (int step = 0; step < 40; ++step) {
      bits = bits * 1103515245u + 12345u;
      std::vector<GavelLpJob> jobs;
      for (size_t j = 0; j < pool.size(); ++j) {
        int copies = static_cast<int>((bits >> (3 * j)) % 3);  // 0 to 2 of each
        for (int c = 0; c < copies; ++c) jobs.push_back(pool[j]);
      }
      std::vector<int> capacity = step < 20 ? std::vector<int>{4, 6} : std::vector<int>{4, 2};
      auto warm = kept.Solve(jobs, capacity);
      auto fresh = SolveGavelLp(objective, jobs, capacity);
      ASSERT_TRUE(warm.ok() && fresh.ok());
      EXPECT_NEAR(warm->objective, fresh->objective, 1e-7 * std::max(1.0, std::abs(fresh->objective))) << step;
      for (size_t j = 0; j < jobs.size(); ++j) {
        double used = 0;
        for (double x : warm->time_fraction[j]) used += x;
        EXPECT_LE(used, 1 + 1e-9);
      }
    }
  }
}

// Under contention (four jobs, two GPUs) max-min leans each kind of job
// towards the type it is relatively fastest on, and equalizes every job's
// normalized throughput above what an equal time split would give (0.5).
TEST(GavelLpHeterogeneityTest, MaxMinSkewsToRelativelyFastestType) {
  std::vector<GavelLpJob> jobs = {kTwoSpeedups[0], kTwoSpeedups[0], kTwoSpeedups[1], kTwoSpeedups[1]};
  Result<GavelLpSolution> sol = SolveGavelLp(GavelObjective::kMaxMinFairness, jobs, {1, 1});
  ASSERT_TRUE(sol.ok());
  const auto& x = sol->time_fraction;
  double a_on_0 = x[0][0] + x[1][0], a_on_1 = x[0][1] + x[1][1];
  double b_on_0 = x[2][0] + x[3][0], b_on_1 = x[2][1] + x[3][1];
  EXPECT_GT(a_on_0, a_on_1);
  EXPECT_GT(b_on_1, b_on_0);
  EXPECT_GT(a_on_0, b_on_0);
  EXPECT_EQ(x[0], x[1]) << "identical jobs, identical rows";
  EXPECT_EQ(x[2], x[3]);
  for (double u : sol->normalized_throughput) {
    EXPECT_NEAR(u, sol->objective, 1e-6);
    EXPECT_GT(u, 0.5);
  }
  // Capacity respected.
  EXPECT_LE(a_on_0 + b_on_0, 1 + 1e-9);
  EXPECT_LE(a_on_1 + b_on_1, 1 + 1e-9);
}

// ---------------------------------------------------------------------------
// The policy, on small clusters written as YAML.

std::string WriteCluster(const std::string& name, const std::string& yaml) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/gavel_" + name + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

// One A100 and one V100, one GPU each.
std::string TwoTypeCluster() {
  return WriteCluster("two_types", R"(name: gavel-two-types
pools:
  - {name: a100, gpu: a100-80g, nodes: 1, gpus_per_node: 1}
  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 1}
)");
}

// One node of one A100.
std::string OneGpuCluster() {
  return WriteCluster("one_gpu", R"(name: gavel-one-gpu
pools:
  - {name: a100, gpu: a100-80g, nodes: 1, gpus_per_node: 1}
)");
}

std::unique_ptr<Policy> MakePolicy(const std::string& spec) {
  auto p = PolicyRegistry::Builtin().Create(spec, PolicyContext{});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

// Two transformers (4.0x faster on A100 than on V100 by the estimator) and
// two CNNs (1.8x) share one A100 and one V100.
struct HeteroCase {
  std::string name;
  std::string policy;
};

class GavelHeterogeneityTest : public ::testing::TestWithParam<HeteroCase> {};

TEST_P(GavelHeterogeneityTest, TransformersLeanToA100CnnsToV100) {
  PolicyFixture f(TwoTypeCluster());
  const int a100 = f.Type("a100-80g"), v100 = f.Type("v100-32g");
  f.AddJob(MakeJob("gpt0").Model("gpt3-350m").Gpus(1));
  f.AddJob(MakeJob("gpt1").Model("gpt3-350m").Gpus(1));
  f.AddJob(MakeJob("cnn0").Model("resnet-50").Gpus(1));
  f.AddJob(MakeJob("cnn1").Model("resnet-50").Gpus(1));
  const bool is_gpt[] = {true, true, false, false};
  Snapshot snap = f.Snap(0);
  // The premise: relative speedups differ.
  auto speed = [&](int j, int t) { return 1 / f.belief().Rate(*f.jobs()[j].spec, t, 1, 1).iteration_time_s; };
  ASSERT_GT(speed(0, a100) / speed(0, v100), 1.5 * speed(2, a100) / speed(2, v100));

  GavelObjective objective =
      GetParam().policy == "gavel" ? GavelObjective::kMaxMinFairness : GavelObjective::kMaxSumThroughput;
  GavelProblem problem = BuildGavelProblem(snap);
  ASSERT_EQ(problem.jobs, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(problem.capacity, (std::vector<int>{1, 1}));
  Result<GavelLpSolution> sol = SolveGavelLp(objective, problem.rows, problem.capacity);
  ASSERT_TRUE(sol.ok());
  const auto& x = sol->time_fraction;
  double gpt_a100 = x[0][a100] + x[1][a100], gpt_v100 = x[0][v100] + x[1][v100];
  double cnn_a100 = x[2][a100] + x[3][a100], cnn_v100 = x[2][v100] + x[3][v100];
  EXPECT_GT(gpt_a100, gpt_v100) << "transformer rows skewed to the A100";
  EXPECT_GT(cnn_v100, cnn_a100) << "CNN rows skewed to the V100";
  EXPECT_GT(gpt_a100, cnn_a100);
  if (objective == GavelObjective::kMaxMinFairness) {
    for (double u : sol->normalized_throughput) EXPECT_NEAR(u, sol->objective, 1e-6);
  } else {
    EXPECT_NEAR(gpt_a100, 1.0, 1e-9) << "the A100 goes to the transformers";
    EXPECT_NEAR(cnn_v100, 1.0, 1e-9) << "the V100 goes to the CNNs";
  }

  // The first round follows the skew: one transformer on the A100, one CNN
  // on the V100.
  Decision d = MakePolicy(GetParam().policy)->Decide(snap);
  EXPECT_TRUE(d.reject.empty());
  int placed = 0;
  for (const auto& [job, alloc] : d.assign) {
    ASSERT_FALSE(alloc.empty());
    EXPECT_EQ(alloc.type, is_gpt[job] ? a100 : v100) << "job " << job;
    ++placed;
  }
  EXPECT_EQ(placed, 2);
}

INSTANTIATE_TEST_SUITE_P(Gavel, GavelHeterogeneityTest,
                         ::testing::Values(HeteroCase{"MaxMinFairness", "gavel"},
                                           HeteroCase{"MaxSumThroughput", "gavel-throughput"}),
                         [](const ::testing::TestParamInfo<HeteroCase>& info) { return info.param.name; });

// Replays a sequence of rounds: who holds the GPU since when, and the
// service each job attained, rebuilt into a fresh fixture each round.
struct RoundState {
  int holder = -1;  // job index on the GPU, or -1
  Allocation alloc;
  SimTime since = 0;
  std::vector<double> attained = {0, 0};  // GPU-seconds on the A100
};

Decision DecideAt(Policy& policy, const std::string& cluster, const RoundState& s, SimTime now) {
  PolicyFixture f(cluster);
  f.AddJob(MakeJob("a").Model("resnet-50").Gpus(1));
  f.AddJob(MakeJob("b").Model("resnet-50").Gpus(1));
  for (int j = 0; j < 2; ++j) {
    f.jobs()[j].attained_gpu_s_by_type[0] = s.attained[j];
    f.jobs()[j].attained_gpu_s = s.attained[j];
  }
  if (s.holder >= 0) f.Run(f.jobs()[s.holder], s.alloc, s.since);
  return policy.Decide(f.Snap(now));
}

TEST(GavelRoundsTest, TwoJobsTimeSliceOneGpu) {
  const std::string cluster = OneGpuCluster();
  std::unique_ptr<Policy> policy = MakePolicy("gavel");
  ASSERT_TRUE(policy->traits().uses_rounds);
  const SimTime round = Seconds(300);
  RoundState s;
  std::vector<int> rounds_run = {0, 0};
  int switches = 0;
  for (int r = 0; r < 10; ++r) {
    SimTime now = r * round;
    if (s.holder >= 0) s.attained[s.holder] += ToSeconds(round);
    Decision d = DecideAt(*policy, cluster, s, now);
    int next = s.holder;
    for (const auto& [job, alloc] : d.assign) {
      if (!alloc.empty()) {
        next = job;
        s.alloc = alloc;
        s.since = now;
      } else if (job == s.holder && next == s.holder) {
        next = -1;
      }
    }
    if (next != s.holder && s.holder >= 0) ++switches;
    s.holder = next;
    ASSERT_GE(s.holder, 0) << "round " << r << ": the GPU idles";
    ++rounds_run[s.holder];
    // Mid-round, nothing is preempted (the holder's lease runs to the next
    // round) and the waiting job stays waiting.
    RoundState mid = s;
    mid.attained[s.holder] += ToSeconds(round) / 2;
    Decision m = DecideAt(*policy, cluster, mid, now + round / 2);
    EXPECT_TRUE(m.assign.empty()) << "round " << r;
  }
  EXPECT_EQ(rounds_run[0], 5);
  EXPECT_EQ(rounds_run[1], 5);
  EXPECT_GE(switches, 5);
}

TEST(GavelRoundsTest, KeepsGpusWhileLeasedAndWhenChosenAgain) {
  PolicyFixture f("demo");
  const int h100 = f.Type("h100-sxm"), a100 = f.Type("a100-80g");
  JobView& job = f.AddJob(MakeJob("gpt").Model("gpt3-1.3b").Gpus(8));
  // Alone, the job belongs on the H100s (fastest relative to its average).
  Allocation on_a100 = f.Place(a100, 8);
  f.Run(job, on_a100, 0);
  std::unique_ptr<Policy> policy = MakePolicy("gavel");
  job.attained_gpu_s_by_type[a100] = 8 * 100.0;
  EXPECT_TRUE(policy->Decide(f.Snap(Seconds(100))).assign.empty()) << "leased until t = 300 s";
  job.attained_gpu_s_by_type[a100] = 8 * 300.0;
  Decision d = policy->Decide(f.Snap(Seconds(300)));
  const Allocation* moved = Assigned(d, job.index);
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->type, h100);

  PolicyFixture g("demo");
  JobView& again = g.AddJob(MakeJob("gpt").Model("gpt3-1.3b").Gpus(8));
  Allocation on_h100 = g.Place(h100, 8);
  g.Run(again, on_h100, 0);
  again.attained_gpu_s_by_type[h100] = 8 * 600.0;
  EXPECT_TRUE(policy->Decide(g.Snap(Seconds(600))).assign.empty()) << "chosen again: keeps its GPUs";
}

TEST(GavelRoundsTest, FillsIdleGpusMidRoundWithoutPreempting) {
  PolicyFixture f("demo");
  const int h100 = f.Type("h100-sxm");
  JobView& running = f.AddJob(MakeJob("running").Model("gpt3-1.3b").Gpus(8));
  f.Run(running, f.Place(h100, 8), Seconds(300));
  running.attained_gpu_s_by_type[h100] = 8 * 100.0;
  JobView& arrived = f.AddJob(MakeJob("arrived").Model("gpt3-1.3b").Gpus(8).Submit(Seconds(400)));
  Decision d = MakePolicy("gavel")->Decide(f.Snap(Seconds(400)));
  EXPECT_EQ(Assigned(d, running.index), nullptr) << "leased until t = 600 s";
  const Allocation* placed = Assigned(d, arrived.index);
  ASSERT_NE(placed, nullptr);
  EXPECT_EQ(placed->gpus(), 8);
}

struct RejectCase {
  std::string name;
  JobBuilder job;
  bool rejected;
};

class GavelRejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(GavelRejectTest, RejectsJobsThatFitNowhere) {
  PolicyFixture f("demo");
  JobView& ok = f.AddJob(MakeJob("ok").Model("gpt3-350m").Gpus(1));
  JobView& job = f.AddJob(GetParam().job);
  for (const char* spec : {"gavel", "gavel-throughput"}) {
    Decision d = MakePolicy(spec)->Decide(f.Snap(0));
    ASSERT_EQ(d.reject.size(), GetParam().rejected ? 1u : 0u) << spec;
    if (GetParam().rejected) {
      EXPECT_EQ(d.reject[0].first, job.index);
      EXPECT_NE(d.reject[0].second.find("fits on no GPU type"), std::string::npos) << d.reject[0].second;
      EXPECT_EQ(Assigned(d, job.index), nullptr);
    }
    EXPECT_NE(Assigned(d, ok.index), nullptr) << spec;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Gavel, GavelRejectTest,
    ::testing::Values(RejectCase{"MoreGpusThanAnyType", MakeJob("big").Model("gpt3-350m").Gpus(64), true},
                      RejectCase{"OutOfMemoryEverywhere", MakeJob("oom").Model("llama2-7b").Gpus(1), true},
                      // Gavel ignores the requested type: a V100 request may
                      // run anywhere, and is not rejected.
                      RejectCase{"RequestedTypeIsIgnored", MakeJob("v").Model("gpt3-350m").Gpus(8).Type("v100-32g"),
                                 false}),
    [](const ::testing::TestParamInfo<RejectCase>& info) { return info.param.name; });

// A busy demo cluster: 40 jobs of mixed models and sizes, some running.
void FillBusyCluster(PolicyFixture& f) {
  const char* models[] = {"gpt3-125m", "gpt3-350m", "gpt3-1.3b", "resnet-50", "bert-large", "bert-base"};
  const int sizes[] = {1, 2, 4, 8, 16};
  for (int i = 0; i < 40; ++i) {
    std::string id = "j";  // (not "j" + to_string: GCC 12's -Wrestrict false positive, PR 105329)
    id += std::to_string(i);
    JobView& j = f.AddJob(MakeJob(id)
                              .Model(models[i % 6])
                              .Gpus(sizes[(i * 7) % 5])
                              .Submit(Seconds(10.0 * i)));
    for (size_t t = 0; t < j.attained_gpu_s_by_type.size(); ++t) j.attained_gpu_s_by_type[t] = (i * 37 + t * 11) % 500;
  }
  // A few running (placed on what is free, in order).
  for (int i = 0; i < 40; i += 3) {
    JobView& j = f.jobs()[i];
    for (int t = 0; t < static_cast<int>(f.cluster().types().size()); ++t) {
      if (FreeMap(f.Snap(0)).CanPlace(t, j.spec->requested_gpus)) {
        f.Run(j, f.Place(t, j.spec->requested_gpus), Seconds(i % 2 ? 0 : 400));
        break;
      }
    }
  }
}

void ExpectSameDecision(const Decision& a, const Decision& b) {
  EXPECT_EQ(a.assign, b.assign);
  EXPECT_EQ(a.reject, b.reject);
  EXPECT_EQ(a.wake_at, b.wake_at);
}

class GavelDeterminismTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GavelDeterminismTest, SameSnapshotSameDecision) {
  PolicyFixture f("demo");
  FillBusyCluster(f);
  Snapshot snap = f.Snap(Seconds(900));
  std::unique_ptr<Policy> p1 = MakePolicy(GetParam());
  std::unique_ptr<Policy> p2 = MakePolicy(GetParam());
  Decision first = p1->Decide(snap);
  EXPECT_FALSE(first.assign.empty());
  ExpectSameDecision(first, p1->Decide(snap));  // memoised LP
  ExpectSameDecision(first, p2->Decide(snap));  // fresh policy
  // After another job set, the same snapshot again.
  PolicyFixture g("demo");
  g.AddJob(MakeJob("other").Model("bert-base").Gpus(2));
  p1->Decide(g.Snap(0));
  ExpectSameDecision(first, p1->Decide(snap));

  // The decision is valid: no GPU handed out twice, sizes as requested.
  FreeMap free(snap);
  for (const auto& [job, alloc] : first.assign) {
    const JobView& v = *snap.jobs[job];
    if (!v.alloc.empty()) free.Release(v.alloc);
  }
  for (const auto& [job, alloc] : first.assign) {
    if (alloc.empty()) continue;
    EXPECT_EQ(alloc.gpus(), snap.jobs[job]->spec->requested_gpus);
    free.Take(alloc);  // asserts the GPUs are free
  }
}

INSTANTIATE_TEST_SUITE_P(Gavel, GavelDeterminismTest, ::testing::Values("gavel", "gavel-throughput"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "gavel" ? std::string("MaxMin") : std::string("MaxSum");
                         });

TEST(GavelRegistryTest, RegisteredWithRoundsAndNoOptions) {
  PolicyContext ctx;
  ctx.baseline_plan_mode = PlanMode::kBest;
  for (const char* name : {"gavel", "gavel-throughput"}) {
    auto p = PolicyRegistry::Builtin().Create(name, ctx);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->name(), name);
    EXPECT_TRUE((*p)->traits().uses_rounds);
    EXPECT_EQ((*p)->traits().plan_mode, PlanMode::kBest);
  }
  auto bad = PolicyRegistry::Builtin().Create("gavel:rounds=3", ctx);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("takes no options"), std::string::npos);
}

// What a simulator hands the belief ahead (LikelyQuestions) covers every
// question gavel asks: each job's throughput row at its scale factor, for
// jobs pending and running, one on a requested type, one larger than some
// types.
TEST(GavelTest, LikelyQuestionsCoverWhatItAsks) {
  for (const std::string spec : {"gavel", "gavel-throughput"}) {
    SCOPED_TRACE(spec);
    PolicyFixture f("arena-1280");
    JobView& running = f.AddJob(MakeJob("running").Model("gpt3-350m").Gpus(8).Iterations(1e4));
    f.Run(running, f.Place(f.Type("a40"), 8));
    f.AddJob(MakeJob("typed").Model("bert__1.3B").Batch(128).Gpus(4).Type("v100-32g"));
    f.AddJob(MakeJob("wide").Model("moe__690M").Batch(256).Gpus(128));
    f.AddJob(MakeJob("one").Model("gpt3-1.3b").Gpus(1));
    auto policy = PolicyRegistry::Builtin().Create(spec, PolicyContext{}).value();
    EXPECT_GT(testing::ExpectLikelyQuestionsCover(*policy, f, {Seconds(0), Seconds(300)}), 8u);
  }
}

}  // namespace
}  // namespace tessel
