#include "policy/arena.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "policy/goodput_alloc.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {
using testing::MakeJob;
using testing::PolicyFixture;

std::string ClusterYaml(const std::string& name, const std::string& pools) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\npools:\n" << pools;
  return path;
}
// 2 nodes x 4 A100-80G.
std::string TwoByFourA100() {
  return ClusterYaml("arena_2x4", "  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch}\n");
}
// One node of 8 H100 (type 0) and one of 8 V100 (type 1).
std::string H100AndV100() {
  return ClusterYaml("arena_h100_v100",
                     "  - {name: h100, gpu: h100-sxm, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                     "  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 8, intra: nvlink-mesh}\n");
}
// One node of 4 T4 (16 GB each).
std::string FourT4() {
  return ClusterYaml("arena_4xt4", "  - {name: t4, gpu: t4, nodes: 1, gpus_per_node: 4, intra: pcie}\n");
}

std::unique_ptr<Policy> Arena(const std::string& spec = "arena") {
  auto p = PolicyRegistry::Builtin().Create(spec, PolicyContext{});
  EXPECT_TRUE(p.ok()) << spec << ": " << p.status().ToString();
  return std::move(p).value();
}

PlanMode ModeOf(const std::string& spec) { return Arena(spec)->traits().plan_mode; }

std::string Show(const Decision& d, const Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  for (const auto& [job, why] : d.reject) s += (s.empty() ? "reject j" : "; reject j") + std::to_string(job) + ": " + why;
  return s;
}

Allocation On(int type, std::vector<Placement> parts) { return Allocation{type, std::move(parts)}; }

// Each active job's allocation after `d` is applied (index -> allocation).
std::map<int, Allocation> After(const Snapshot& snap, const Decision& d) {
  std::map<int, Allocation> out;
  for (const JobView* j : snap.jobs) out[j->index] = j->alloc;
  for (const auto& [job, alloc] : d.assign) out[job] = alloc;
  for (const auto& [job, why] : d.reject) out.erase(job);
  return out;
}

const JobView* Find(const Snapshot& snap, int index) {
  for (const JobView* j : snap.jobs)
    if (j->index == index) return j;
  return nullptr;
}

struct Expect {
  bool keep_count = false;  // arena-no-elastic: every job on exactly its request
  bool keep_type = false;   // arena-no-hetero: every job on its requested type
};

// The invariants every arena decision must keep; returns the final allocations.
std::map<int, Allocation> CheckInvariants(const Snapshot& snap, const Decision& d, Expect e = {}) {
  const Cluster& c = *snap.cluster;
  // Each job named at most once, only active jobs; rejected jobs not assigned.
  std::map<int, int> named;
  for (const auto& [job, alloc] : d.assign) {
    EXPECT_NE(Find(snap, job), nullptr) << "assigns unknown job " << job;
    EXPECT_EQ(++named[job], 1) << "job " << job << " assigned twice";
  }
  for (const auto& [job, why] : d.reject) {
    EXPECT_EQ(named.count(job), 0u) << "job " << job << " is both rejected and assigned";
    EXPECT_FALSE(why.empty()) << "job " << job << " rejected without a reason";
  }
  // Apply the decision to the free map: release, then take.
  std::vector<int> free(snap.free_gpus.begin(), snap.free_gpus.end());
  for (const auto& [job, alloc] : d.assign) {
    const JobView* j = Find(snap, job);
    if (j == nullptr) continue;
    for (const Placement& p : j->alloc.parts) free[p.node] += p.gpus;
  }
  for (const auto& [job, alloc] : d.assign) {
    for (const Placement& p : alloc.parts) {
      EXPECT_GE(p.node, 0);
      EXPECT_LT(p.node, static_cast<int>(free.size()));
      if (p.node < 0 || p.node >= static_cast<int>(free.size())) continue;
      EXPECT_GT(p.gpus, 0) << "job " << job;
      EXPECT_EQ(c.nodes()[p.node].type, alloc.type) << "job " << job << " on a node of another type";
      free[p.node] -= p.gpus;
    }
  }
  for (size_t n = 0; n < free.size(); ++n) {
    EXPECT_GE(free[n], 0) << "node " << n << " over-committed by " << Show(d, c);
    EXPECT_LE(free[n], c.nodes()[n].gpus) << "node " << n;
  }
  // Every new allocation comes with its plan set for the executor: plans
  // that use exactly its GPUs and fit in memory, fastest first, each later
  // one using less memory.
  std::map<int, const std::vector<PlanChoice>*> sets;
  for (const auto& [job, set] : d.plans) EXPECT_TRUE(sets.emplace(job, &set).second) << "job " << job << " has two plan sets";
  for (const auto& [job, alloc] : d.assign) {
    if (alloc.empty()) {
      EXPECT_EQ(sets.count(job), 0u) << "job " << job << " is suspended but has a plan set";
      continue;
    }
    auto it = sets.find(job);
    if (it == sets.end()) {
      ADD_FAILURE() << "job " << job << " on " << alloc.ToString(c) << " has no plan set";
      continue;
    }
    const std::vector<PlanChoice>& set = *it->second;
    EXPECT_FALSE(set.empty());
    EXPECT_LE(set.size(), 4u);
    for (size_t k = 0; k < set.size(); ++k) {
      EXPECT_EQ(set[k].plan.Gpus(), alloc.gpus()) << "job " << job << " plan " << set[k].plan.ToString();
      EXPECT_LE(set[k].memory_gib_per_gpu, c.types()[alloc.type].gpu->memory_gib) << set[k].plan.ToString();
      if (k > 0) {
        EXPECT_GE(set[k].iteration_time_s, set[k - 1].iteration_time_s);
        EXPECT_LT(set[k].memory_gib_per_gpu, set[k - 1].memory_gib_per_gpu);
      }
    }
  }
  std::map<int, Allocation> after = After(snap, d);
  for (const auto& [index, alloc] : after) {
    const JobView& j = *Find(snap, index);
    const JobSpec& s = *j.spec;
    if (alloc.empty()) continue;
    SCOPED_TRACE("job " + std::to_string(index) + " (" + s.id + ") on " + alloc.ToString(c));
    for (size_t k = 1; k < alloc.parts.size(); ++k) EXPECT_LT(alloc.parts[k - 1].node, alloc.parts[k].node);
    EXPECT_TRUE(snap.belief->Rate(s, alloc.type, alloc.gpus(), alloc.nodes()).fits) << "no plan fits the allocation";
    if (RigidJob(j) || e.keep_count) {
      EXPECT_EQ(alloc.gpus(), s.requested_gpus);
    } else {
      EXPECT_GE(alloc.gpus(), std::max(1, s.min_gpus));
      EXPECT_LE(alloc.gpus(), s.max_gpus);
    }
    if (e.keep_type && !s.requested_gpu_type.empty()) {
      EXPECT_EQ(alloc.type, c.FindType(s.requested_gpu_type));
    }
  }
  return after;
}

// The checker itself catches double booking, a range violation and an
// allocation no plan fits (so the invariant tests can fail).
TEST(ArenaInvariants, CheckerCatchesViolations) {
  PolicyFixture f(FourT4(), PlanMode::kBest);
  int t4 = f.Type("t4");
  JobView& a = f.AddJob(MakeJob("a").Gpus(2).Iterations(100));
  f.Run(a, On(t4, {{0, 2}}));
  f.AddJob(MakeJob("b").Gpus(1).Elastic(1, 2).Iterations(100));
  f.AddJob(MakeJob("huge").Model("gpt3-175b").Batch(64).Gpus(1).Iterations(100));
  Snapshot snap = f.Snap(0);
  auto failures = [&](const Decision& d) {
    ::testing::TestPartResultArray results;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      CheckInvariants(snap, d);
    }
    return results.size();
  };
  // b's 2 GPUs with its plan set (as arena hands it over).
  std::vector<PlanChoice> plans = snap.belief->PlanSet(*f.jobs()[1].spec, t4, 2, 1, 4);
  ASSERT_FALSE(plans.empty());
  Decision good{{{1, On(t4, {{0, 2}})}}, {}, kNever, {{1, plans}}, {}};
  EXPECT_EQ(failures(good), 0);
  EXPECT_GT(failures(Decision{{{1, On(t4, {{0, 2}})}}, {}, kNever, {}, {}}), 0);  // no plan set
  Decision wrong_size = good;
  wrong_size.plans[0].second = snap.belief->PlanSet(*f.jobs()[1].spec, t4, 1, 1, 4);
  EXPECT_GT(failures(wrong_size), 0);  // plans for 1 GPU on 2
  EXPECT_GT(failures(Decision{{{1, On(t4, {{0, 3}})}}, {}, kNever, {}, {}}), 0);  // 5 GPUs on a node of 4
  EXPECT_GT(failures(Decision{{{0, On(t4, {{0, 1}})}}, {}, kNever, {}, {}}), 0);  // rigid job shrunk
  EXPECT_GT(failures(Decision{{{2, On(t4, {{0, 1}})}}, {}, kNever, {}, {}}), 0);  // 175B on one T4
}

// A mixed scenario on `demo` (h100 = type 0 on n0-n1, a100 = 1 on n2-n7,
// v100 = 2 on n8-n13): GPT and BERT jobs, elastic and rigid, running and
// pending, some naming a type. With `after`, each job holds after[index]
// instead (since `at` where that differs from the script): the state a
// decision leads to.
struct MixedCase {
  explicit MixedCase(PlanMode mode, const std::map<int, Allocation>* after = nullptr, SimTime at = 0)
      : f("demo", mode), after_(after), at_(at) {
    int h100 = f.Type("h100-sxm"), a100 = f.Type("a100-80g"), v100 = f.Type("v100-32g");
    Add(MakeJob("gpt-rigid-a100").Model("gpt3-1.3b").Batch(128).Gpus(8).Iterations(5e4), On(a100, {{2, 8}}), 1e4);
    Add(MakeJob("bert-elastic-v100").Model("bert-large").Batch(256).Gpus(4).Elastic(2, 16).Iterations(2e5)
            .Submit(Seconds(60)),
        On(v100, {{8, 4}}), 5e3);
    Add(MakeJob("gpt-elastic-typed").Model("gpt3-2.7b").Batch(128).Gpus(16).Elastic(8, 32).Type("a100-80g")
            .Iterations(3e4).Submit(Seconds(120)));
    Add(MakeJob("gpt-tiny").Model("gpt3-350m").Batch(64).Gpus(1).Iterations(300).Submit(Seconds(180)));
    Add(MakeJob("bert-1.3b-h100").Model("bert__1.3B").Batch(128).Gpus(8).Elastic(4, 16).Iterations(8e4)
            .Submit(Seconds(200)),
        On(h100, {{0, 8}}), 2e3);
    Add(MakeJob("gpt-6.7b-rigid").Model("gpt3-6.7b").Batch(256).Gpus(16).Iterations(2e4).Submit(Seconds(240)));
    Add(MakeJob("bert-base-elastic").Model("bert-base").Batch(128).Gpus(2).Elastic(1, 8).Iterations(5e4)
            .Submit(Seconds(300)));
    Add(MakeJob("gpt-760m-v100").Model("gpt3-760m").Batch(128).Gpus(4).Type("v100-32g").Iterations(4e4)
            .Submit(Seconds(320)),
        On(v100, {{9, 4}}), 1e3);
    Add(MakeJob("gpt-13b-elastic").Model("gpt3-13b").Batch(256).Gpus(32).Elastic(16, 64).Iterations(1e4)
            .Submit(Seconds(400)));
    Add(MakeJob("gpt-125m-typed").Model("gpt3-125m").Batch(32).Gpus(2).Type("h100-sxm").Iterations(2e3)
            .Submit(Seconds(420)));
  }
  PolicyFixture f;

 private:
  void Add(const testing::JobBuilder& b, const Allocation& scripted = {}, double done = 0) {
    JobView& j = f.AddJob(b);
    j.done_iterations = done;
    SimTime since = b.spec().submit;
    Allocation alloc = scripted;
    if (after_ != nullptr) {
      alloc = after_->at(j.index);
      if (alloc != scripted) since = at_;
      if (!scripted.empty()) j.first_start = b.spec().submit;
    }
    if (!alloc.empty()) f.Run(j, alloc, since);
    j.alloc_since = since;
  }
  const std::map<int, Allocation>* after_;
  SimTime at_;
};

const char* const kVariants[] = {"arena",    "arena-no-elastic",  "arena-no-hetero",
                                 "arena-dp", "arena-no-backfill", "arena-full-search"};

// 1. Invariants on a mixed scenario, for arena and every ablation.
TEST(ArenaInvariants, MixedScenario) {
  for (const char* name : kVariants) {
    SCOPED_TRACE(name);
    std::string spec = name;
    MixedCase c(ModeOf(spec));
    auto policy = Arena(spec);
    Expect e;
    e.keep_count = spec == "arena-no-elastic";
    e.keep_type = spec == "arena-no-hetero";
    for (double now : {600.0, 7200.0}) {
      SCOPED_TRACE("now=" + std::to_string(now));
      Snapshot snap = c.f.Snap(Seconds(now));
      Decision d = policy->Decide(snap);
      std::map<int, Allocation> after = CheckInvariants(snap, d, e);
      EXPECT_TRUE(d.reject.empty()) << Show(d, c.f.cluster());
      // The cluster is big enough that most of the work runs.
      int running = 0;
      for (const auto& [index, alloc] : after) running += !alloc.empty();
      EXPECT_GE(running, 5) << Show(d, c.f.cluster());
    }
  }
}

TEST(ArenaInvariants, SameSnapshotSameDecision) {
  for (const char* name : kVariants) {
    SCOPED_TRACE(name);
    MixedCase c(ModeOf(name));
    Snapshot snap = c.f.Snap(Seconds(900));
    auto policy = Arena(name);
    Decision d1 = policy->Decide(snap);
    Decision d2 = policy->Decide(snap);            // memoised belief, same policy
    Decision d3 = Arena(name)->Decide(snap);       // a fresh policy
    EXPECT_FALSE(d1.assign.empty());
    EXPECT_EQ(d1.assign, d2.assign) << Show(d1, c.f.cluster()) << "\nvs\n" << Show(d2, c.f.cluster());
    EXPECT_EQ(d1.reject, d2.reject);
    EXPECT_EQ(d1.wake_at, d2.wake_at);
    EXPECT_EQ(d1.assign, d3.assign) << Show(d1, c.f.cluster()) << "\nvs\n" << Show(d3, c.f.cluster());
    EXPECT_EQ(d1.reject, d3.reject);
  }
}

// Applying a decision and deciding again at once changes nothing.
TEST(ArenaInvariants, StableOnItsOwnDecision) {
  for (const char* name : kVariants) {
    SCOPED_TRACE(name);
    MixedCase c(ModeOf(name));
    Snapshot snap = c.f.Snap(Seconds(600));
    Decision d = Arena(name)->Decide(snap);
    std::map<int, Allocation> after = CheckInvariants(snap, d);
    MixedCase next(ModeOf(name), &after, Seconds(600));
    Decision again = Arena(name)->Decide(next.f.Snap(Seconds(600)));
    EXPECT_EQ(Show(again, next.f.cluster()), "") << "first: " << Show(d, c.f.cluster());
  }
}

// A request outside [min_gpus, max_gpus] (the native trace format accepts
// one) must not take the job outside its bounds.
TEST(ArenaInvariants, RequestOutsideMinMax) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  f.AddJob(MakeJob("over").Model("gpt3-1.3b").Batch(128).Gpus(8).Elastic(1, 4).Iterations(1e5));
  Snapshot snap = f.Snap(0);
  Decision d = Arena()->Decide(snap);
  std::map<int, Allocation> after = After(snap, d);
  CheckInvariants(snap, d);
  EXPECT_EQ(after[0].gpus(), 4) << Show(d, f.cluster());
}

// 2. A shrink admits a waiting job.
TEST(ArenaShrink, ElasticJobShrinksForArrival) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  int a100 = f.Type("a100-80g");
  JobView& big = f.AddJob(MakeJob("big").Model("gpt3-1.3b").Batch(128).Gpus(8).Elastic(1, 8).Iterations(1e5));
  f.Run(big, On(a100, {{0, 4}, {1, 4}}), 0);
  big.done_iterations = 100;
  f.AddJob(MakeJob("short").Model("gpt3-350m").Batch(128).Gpus(2).Iterations(200).Submit(Seconds(3500)));
  auto policy = Arena();
  // (Today: big 8 -> 4 and short 2, leaving 2 GPUs idle: grids are powers of two.)
  Snapshot snap = f.Snap(Seconds(3600));
  Decision d = policy->Decide(snap);
  std::map<int, Allocation> after = CheckInvariants(snap, d);
  EXPECT_GT(after[0].gpus(), 0) << Show(d, f.cluster());
  EXPECT_LT(after[0].gpus(), 8) << Show(d, f.cluster());
  EXPECT_EQ(after[1].gpus(), 2) << Show(d, f.cluster());
}

TEST(ArenaShrink, AloneKeepsEverything) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  int a100 = f.Type("a100-80g");
  JobView& big = f.AddJob(MakeJob("big").Model("gpt3-1.3b").Batch(128).Gpus(8).Elastic(1, 8).Iterations(1e5));
  f.Run(big, On(a100, {{0, 4}, {1, 4}}), 0);
  big.done_iterations = 100;
  EXPECT_EQ(Show(Arena()->Decide(f.Snap(Seconds(3600))), f.cluster()), "");
}

// A user's required GPU type binds arena; a trace's requested type is only
// where the job ran, and arena may choose a faster type for it.
TEST(ArenaTypes, RequiredTypeIsAConstraintARequestedOneIsNot) {
  for (bool required : {false, true}) {
    PolicyFixture f("demo", PlanMode::kBest);
    f.AddJob(MakeJob("j").Model("gpt3-1.3b").Batch(64).Gpus(8).Iterations(1e4).Type("v100-32g").Required(required));
    Snapshot snap = f.Snap(0);
    Decision d = Arena()->Decide(snap);
    std::map<int, Allocation> after = CheckInvariants(snap, d);
    ASSERT_FALSE(after[0].empty()) << Show(d, f.cluster());
    if (required) {
      EXPECT_EQ(after[0].type, f.Type("v100-32g")) << Show(d, f.cluster());
    } else {
      EXPECT_NE(after[0].type, f.Type("v100-32g")) << "an idle H100/A100 is faster: " << Show(d, f.cluster());
    }
  }
}

TEST(ArenaTypes, OnlyAllowedTypes) {
  PolicyFixture f("demo", PlanMode::kBest);
  f.AddJob(MakeJob("j").Model("gpt3-1.3b").Batch(64).Gpus(8).Iterations(1e4).Allowed({"v100-32g", "a100-80g"}));
  Snapshot snap = f.Snap(0);
  Decision d = Arena()->Decide(snap);
  std::map<int, Allocation> after = CheckInvariants(snap, d);
  ASSERT_FALSE(after[0].empty()) << Show(d, f.cluster());
  EXPECT_NE(after[0].type, f.Type("h100-sxm")) << "the idle, faster H100s are not allowed: " << Show(d, f.cluster());
}

// 2b. The admission search: the marginal allocation is greedy per GPU, so
// it can give an elastic job its last two GPUs and leave a rigid 4-GPU job
// out with two GPUs idle. Shrinking the elastic job (6 -> 4) admits it and
// is worth more; with the search off (admit_jobs=0) the job stays out.
TEST(ArenaAdmit, ShrinkAdmitsWhatTheGreedyLeftOut) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  f.AddJob(MakeJob("e").Model("gpt3-1.3b").Batch(120).Gpus(6).Elastic(1, 6).Iterations(1e3));
  f.AddJob(MakeJob("w").Model("gpt3-350m").Batch(128).Gpus(4).Iterations(3500));
  Snapshot snap = f.Snap(0);
  Decision off = Arena("arena:admit_jobs=0")->Decide(snap);
  std::map<int, Allocation> a_off = CheckInvariants(snap, off);
  EXPECT_EQ(a_off[0].gpus(), 6) << Show(off, f.cluster());
  EXPECT_TRUE(a_off[1].empty()) << Show(off, f.cluster());
  Decision on = Arena()->Decide(snap);
  std::map<int, Allocation> a_on = CheckInvariants(snap, on);
  EXPECT_EQ(a_on[0].gpus(), 4) << Show(on, f.cluster());
  EXPECT_EQ(a_on[1].gpus(), 4) << Show(on, f.cluster());
  // admit_actions=0 disables it too.
  EXPECT_EQ(Show(Arena("arena:admit_actions=0")->Decide(snap), f.cluster()), Show(off, f.cluster()));
}

// The same with a GPU-type change: a short 2-GPU job takes two of the
// eight H100s, which leaves a rigid 8-GPU job out; moving the short job to
// the two V100s admits the big one. A very short job is not worth moving
// (the big one waits), and one long enough is put on the V100s anyway.
TEST(ArenaAdmit, TypeChangeAdmits) {
  std::string yaml = ClusterYaml("arena_h100x8_v100x2",
                                 "  - {name: h100, gpu: h100-sxm, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                                 "  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 2, intra: nvlink-mesh}\n");
  for (double short_iters : {100.0, 2000.0}) {
    SCOPED_TRACE("short job iterations " + std::to_string(short_iters));
    PolicyFixture f(yaml, PlanMode::kBest);
    int h100 = f.Type("h100-sxm"), v100 = f.Type("v100-32g");
    f.AddJob(MakeJob("e").Model("gpt3-350m").Batch(128).Gpus(2).Elastic(1, 2).Iterations(short_iters));
    f.AddJob(MakeJob("w").Model("gpt3-1.3b").Batch(128).Gpus(8).Iterations(2000));
    Snapshot snap = f.Snap(0);
    std::map<int, Allocation> off = CheckInvariants(snap, Arena("arena:admit_jobs=0")->Decide(snap));
    EXPECT_EQ(off[0].type, h100);
    EXPECT_TRUE(off[1].empty());
    Decision d = Arena()->Decide(snap);
    std::map<int, Allocation> on = CheckInvariants(snap, d);
    if (short_iters < 1000) {
      EXPECT_EQ(on, off) << Show(d, f.cluster());
    } else {
      EXPECT_EQ(on[0].type, v100) << Show(d, f.cluster());
      EXPECT_EQ(on[1].type, h100) << Show(d, f.cluster());
      EXPECT_EQ(on[1].gpus(), 8) << Show(d, f.cluster());
    }
  }
}

// The executor's plan sets: the grid search (Arena's pruned one) finds a
// first plan close to the full search's best, and later plans trade speed
// for memory; plan_set=0 hands none over.
TEST(ArenaPlans, ParetoSetPerGrid) {
  MixedCase c(PlanMode::kBest);
  Snapshot snap = c.f.Snap(Seconds(600));
  Decision d = Arena()->Decide(snap);
  CheckInvariants(snap, d);
  ASSERT_FALSE(d.plans.empty());
  size_t longer = 0;
  for (const auto& [job, set] : d.plans) {
    const Allocation* alloc = nullptr;
    for (const auto& [j, a] : d.assign)
      if (j == job) alloc = &a;
    ASSERT_NE(alloc, nullptr);
    const JobRate& best = snap.belief->Rate(*Find(snap, job)->spec, alloc->type, alloc->gpus(), alloc->nodes());
    EXPECT_GE(set.front().iteration_time_s, best.iteration_time_s * 0.999) << "the grid search is a subset of the full one";
    EXPECT_LE(set.front().iteration_time_s, best.iteration_time_s * 1.10) << set.front().plan.ToString();
    longer += set.size() > 1;
  }
  EXPECT_GT(longer, 0u) << "some grid offers a memory fallback";
  EXPECT_TRUE(Arena("arena:plan_set=0")->Decide(snap).plans.empty());
  for (const auto& [job, set] : Arena("arena:plan_set=1")->Decide(snap).plans) EXPECT_EQ(set.size(), 1u);
}

// 3. A job on slow GPUs moves to idle fast ones when the restart pays.
TEST(ArenaMove, ToFasterTypeWhenRestartPays) {
  for (double left : {1e4, 1.0}) {
    SCOPED_TRACE("left=" + std::to_string(left));
    PolicyFixture f(H100AndV100(), PlanMode::kBest);
    int h100 = f.Type("h100-sxm"), v100 = f.Type("v100-32g");
    JobView& j =
        f.AddJob(MakeJob("j").Model("gpt3-1.3b").Batch(128).Gpus(8).Type("v100-32g").Iterations(1e4 + 100));
    f.Run(j, f.Place(v100, 8), 0);
    j.done_iterations = 1e4 + 100 - left;
    Snapshot snap = f.Snap(Seconds(600));
    Decision d = Arena()->Decide(snap);
    std::map<int, Allocation> after = CheckInvariants(snap, d);
    if (left > 100) {
      EXPECT_EQ(Show(d, f.cluster()), "j0=h100-sxm x8 on n0:8");
      EXPECT_EQ(after[0].type, h100);
    } else {
      EXPECT_EQ(Show(d, f.cluster()), "");  // one iteration left: not worth a restart
    }
    // arena-no-hetero keeps it on the V100s it asked for either way.
    EXPECT_EQ(Show(Arena("arena-no-hetero")->Decide(snap), f.cluster()), "");
  }
}

// The restart arena-full-search charges (600 s of plan search instead of
// 40) makes a move that pays under arena not worth it: 60 iterations left
// take ~27 s on the H100s against ~270 s on the V100s.
TEST(ArenaMove, FullSearchRaisesTheBar) {
  PolicyFixture f(H100AndV100(), PlanMode::kBest);
  int v100 = f.Type("v100-32g");
  JobView& j = f.AddJob(MakeJob("j").Model("gpt3-1.3b").Batch(128).Gpus(8).Type("v100-32g").Iterations(1000));
  f.Run(j, f.Place(v100, 8), 0);
  j.done_iterations = 1000 - 60;
  Snapshot snap = f.Snap(Seconds(600));
  EXPECT_EQ(Show(Arena()->Decide(snap), f.cluster()), "j0=h100-sxm x8 on n0:8");
  EXPECT_EQ(Show(Arena("arena-full-search")->Decide(snap), f.cluster()), "");
  EXPECT_EQ(Show(Arena("arena:search_s_per_gpu=150:search_cap=600")->Decide(snap), f.cluster()), "");
}

// restart_penalty raises the bar for a change: whatever moves under the
// default penalty (3) also moves when only the job's own delay counts (1),
// and some moves that pay their own delay are not worth 3 times it.
TEST(ArenaMove, RestartPenaltyRaisesTheBar) {
  int only_at_1 = 0;
  for (double left = 10; left <= 2000; left *= 1.3) {
    SCOPED_TRACE("left=" + std::to_string(left));
    PolicyFixture f(H100AndV100(), PlanMode::kBest);
    int v100 = f.Type("v100-32g");
    JobView& j = f.AddJob(MakeJob("j").Model("gpt3-1.3b").Batch(128).Gpus(8).Type("v100-32g").Iterations(1e4));
    f.Run(j, f.Place(v100, 8), 0);
    j.done_iterations = 1e4 - left;
    Snapshot snap = f.Snap(Seconds(600));
    bool moves1 = !Arena("arena:restart_penalty=1")->Decide(snap).assign.empty();
    bool moves3 = !Arena()->Decide(snap).assign.empty();
    if (moves3) EXPECT_TRUE(moves1);
    only_at_1 += moves1 && !moves3;
  }
  EXPECT_GT(only_at_1, 0);
}

// 4. Backfill, then yield.
//   phase 1: `hold` (4 GPUs, almost done) runs; `big` (8 GPUs, short) waits
//   for it; `small` (2 GPUs, long) fits in the 4 free GPUs.
//   phase 2: `hold` has finished: `big` takes the cluster, `small` yields.
struct BackfillCase {
  explicit BackfillCase(bool hold_done, const Allocation& small_alloc = {})
      : f(TwoByFourA100(), PlanMode::kBest) {
    int a100 = f.Type("a100-80g");
    if (!hold_done) {
      JobView& hold = f.AddJob(MakeJob("hold").Model("gpt3-350m").Batch(128).Gpus(4).Iterations(1e4));
      f.Run(hold, On(a100, {{0, 4}}), 0);
      hold.done_iterations = 1e4 - 20;
    }
    f.AddJob(MakeJob("big").Model("gpt3-350m").Batch(128).Gpus(8).Iterations(200).Submit(Seconds(100)));
    JobView& small = f.AddJob(MakeJob("small").Model("gpt3-350m").Batch(128).Gpus(2).Iterations(1e5).Submit(Seconds(200)));
    if (!small_alloc.empty()) f.Run(small, small_alloc, Seconds(300));
  }
  PolicyFixture f;
};

TEST(ArenaBackfill, SmallJobBackfillsThenYields) {
  BackfillCase p1(/*hold_done=*/false);
  Snapshot s1 = p1.f.Snap(Seconds(300));
  Decision d1 = Arena()->Decide(s1);
  std::map<int, Allocation> a1 = CheckInvariants(s1, d1);
  EXPECT_EQ(a1[0], p1.f.jobs()[0].alloc) << "hold keeps its GPUs: " << Show(d1, p1.f.cluster());
  EXPECT_TRUE(a1[1].empty()) << "big waits: " << Show(d1, p1.f.cluster());
  ASSERT_EQ(a1[2].gpus(), 2) << "small is backfilled: " << Show(d1, p1.f.cluster());

  BackfillCase p2(/*hold_done=*/true, a1[2]);
  Snapshot s2 = p2.f.Snap(Seconds(330));
  Decision d2 = Arena()->Decide(s2);
  std::map<int, Allocation> a2 = CheckInvariants(s2, d2);
  EXPECT_EQ(a2[0].gpus(), 8) << "big runs: " << Show(d2, p2.f.cluster());
  EXPECT_TRUE(a2[1].empty()) << "small yields: " << Show(d2, p2.f.cluster());
}

TEST(ArenaBackfill, NoBackfillKeepsPriorityOrder) {
  BackfillCase p1(/*hold_done=*/false);
  Snapshot s1 = p1.f.Snap(Seconds(300));
  Decision d1 = Arena("arena-no-backfill")->Decide(s1);
  std::map<int, Allocation> a1 = CheckInvariants(s1, d1);
  EXPECT_EQ(a1[0], p1.f.jobs()[0].alloc) << Show(d1, p1.f.cluster());
  EXPECT_TRUE(a1[1].empty()) << Show(d1, p1.f.cluster());
  EXPECT_TRUE(a1[2].empty()) << "small must not jump big: " << Show(d1, p1.f.cluster());
  // Once the GPUs free up, big runs.
  BackfillCase p2(/*hold_done=*/true);
  Snapshot s2 = p2.f.Snap(Seconds(330));
  std::map<int, Allocation> a2 = CheckInvariants(s2, Arena("arena-no-backfill")->Decide(s2));
  EXPECT_EQ(a2[0].gpus(), 8);
}

// arena-no-backfill removes backfilling only: a lone elastic job on an idle
// cluster should still get what arena gives it (its request, 8 GPUs).
TEST(ArenaBackfill, NoBackfillStillGrowsALoneElasticJob) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  f.AddJob(MakeJob("a").Model("gpt3-1.3b").Batch(128).Gpus(8).Elastic(1, 8).Iterations(1e5));
  Snapshot snap = f.Snap(0);
  EXPECT_EQ(Show(Arena()->Decide(snap), f.cluster()), "j0=a100-80g x8 on n0:4,n1:4");
  Decision d = Arena("arena-no-backfill")->Decide(snap);
  EXPECT_EQ(Show(d, f.cluster()), "j0=a100-80g x8 on n0:4,n1:4");
}

// 5. Ablations.
TEST(ArenaAblations, Traits) {
  for (const char* name : kVariants) {
    SCOPED_TRACE(name);
    auto p = Arena(name);
    EXPECT_EQ(p->name(), name);
    PolicyTraits t = p->traits();
    EXPECT_TRUE(t.searches_plans);
    EXPECT_TRUE(t.uses_rounds);
    EXPECT_FALSE(t.adapts_batch);
    EXPECT_EQ(t.plan_mode, std::string(name) == "arena-dp" ? PlanMode::kDataParallel : PlanMode::kBest);
    EXPECT_EQ(t.full_plan_search, std::string(name) == "arena-full-search");
  }
  EXPECT_EQ(Arena("arena:parallelism=dp")->traits().plan_mode, PlanMode::kDataParallel);
  EXPECT_EQ(Arena("arena-dp:parallelism=best")->traits().plan_mode, PlanMode::kBest);
  EXPECT_TRUE(Arena("arena:full_search=true")->traits().full_plan_search);
}

// Elastic jobs on an otherwise idle cluster: arena grows them, no-elastic
// keeps every job at its request.
TEST(ArenaAblations, NoElasticKeepsRequestedCounts) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  f.AddJob(MakeJob("a").Model("gpt3-1.3b").Batch(128).Gpus(2).Elastic(1, 8).Iterations(1e5));
  f.AddJob(MakeJob("b").Model("bert-large").Batch(256).Gpus(1).Elastic(1, 4).Iterations(1e5));
  Snapshot snap = f.Snap(Seconds(60));
  Decision grow = Arena()->Decide(snap);
  std::map<int, Allocation> g = CheckInvariants(snap, grow);
  EXPECT_GT(g[0].gpus() + g[1].gpus(), 3) << "arena uses the idle GPUs: " << Show(grow, f.cluster());
  Decision keep = Arena("arena-no-elastic")->Decide(snap);
  std::map<int, Allocation> k = CheckInvariants(snap, keep, {.keep_count = true});
  EXPECT_EQ(k[0].gpus(), 2) << Show(keep, f.cluster());
  EXPECT_EQ(k[1].gpus(), 1) << Show(keep, f.cluster());
  EXPECT_EQ(Arena("arena:elastic=false")->Decide(snap).assign, keep.assign);
}

TEST(ArenaAblations, NoHeteroKeepsRequestedType) {
  PolicyFixture f(H100AndV100(), PlanMode::kBest);
  int h100 = f.Type("h100-sxm"), v100 = f.Type("v100-32g");
  f.AddJob(MakeJob("a").Model("gpt3-1.3b").Batch(128).Gpus(4).Type("v100-32g").Iterations(1e4));
  f.AddJob(MakeJob("b").Model("gpt3-350m").Batch(128).Gpus(2).Type("v100-32g").Iterations(1e4));
  Snapshot snap = f.Snap(Seconds(60));
  // arena puts at least one of them on the idle, ~10x faster H100s.
  std::map<int, Allocation> any = CheckInvariants(snap, Arena()->Decide(snap));
  EXPECT_TRUE(any[0].type == h100 || any[1].type == h100);
  Decision d = Arena("arena-no-hetero")->Decide(snap);
  std::map<int, Allocation> same = CheckInvariants(snap, d, {.keep_type = true});
  EXPECT_EQ(same[0].type, v100) << Show(d, f.cluster());
  EXPECT_EQ(same[1].type, v100) << Show(d, f.cluster());
  EXPECT_EQ(same[0].gpus(), 4);
  EXPECT_EQ(same[1].gpus(), 2);
}

// 6. A job that fits nowhere is rejected, not assigned; the others run.
TEST(ArenaReject, HugeModelOnSmallGpus) {
  PolicyFixture f(FourT4(), PlanMode::kBest);
  f.AddJob(MakeJob("huge").Model("gpt3-175b").Batch(64).Gpus(4).Iterations(100));
  f.AddJob(MakeJob("huge-elastic").Model("gpt3-175b").Batch(64).Gpus(2).Elastic(1, 4).Iterations(100));
  f.AddJob(MakeJob("ok").Model("gpt3-125m").Batch(32).Gpus(1).Iterations(100));
  Snapshot snap = f.Snap(0);
  Decision d = Arena()->Decide(snap);
  CheckInvariants(snap, d);
  ASSERT_EQ(d.reject.size(), 2u) << Show(d, f.cluster());
  EXPECT_EQ(d.reject[0].first, 0);
  EXPECT_EQ(d.reject[1].first, 1);
  EXPECT_NE(d.reject[0].second.find("does not fit"), std::string::npos) << d.reject[0].second;
  EXPECT_EQ(Show(Decision{d.assign, {}, kNever, {}, {}}, f.cluster()), "j2=t4 x1 on n0:1");
}

TEST(ArenaReject, MoreGpusThanTheCluster) {
  PolicyFixture f(TwoByFourA100(), PlanMode::kBest);
  f.AddJob(MakeJob("wide").Model("gpt3-350m").Batch(128).Gpus(16).Iterations(100));
  Decision d = Arena()->Decide(f.Snap(0));
  ASSERT_EQ(d.reject.size(), 1u) << Show(d, f.cluster());
  EXPECT_TRUE(d.assign.empty());
  EXPECT_NE(d.reject[0].second.find("16"), std::string::npos) << d.reject[0].second;
}

// 7. Bad options.
TEST(ArenaOptions, BadOptionsAreRejected) {
  struct Row {
    const char* spec;
    const char* needle;
  };
  for (const Row& r : {Row{"arena:aging=0", "aging"}, Row{"arena:aging=-1", "aging"},
                       Row{"arena:storage_gbs=0", "storage_gbs"}, Row{"arena:restart_overhead=-3", "restart_overhead"},
                       Row{"arena:aging=soon", "aging"}, Row{"arena:elastic=maybe", "elastic"},
                       Row{"arena-no-backfill:backfill=2", "backfill"}, Row{"arena:parallelism=weird", "weird"},
                       Row{"arena:bogus=1", "unknown option 'bogus'"}, Row{"arena:aging", "key=value"},
                       Row{"arena:admit_jobs=-1", "admit_jobs"}, Row{"arena:admit_actions=1.5", "admit_actions"},
                       Row{"arena:defrag_moves=1e6", "defrag_moves"}, Row{"arena:restart_penalty=-1", "restart_penalty"},
                       Row{"arena:plan_set=two", "plan_set"}}) {
    SCOPED_TRACE(r.spec);
    auto p = PolicyRegistry::Builtin().Create(r.spec, PolicyContext{});
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find(r.needle), std::string::npos) << p.status().ToString();
  }
  EXPECT_NE(PolicyRegistry::Builtin().Create("arena:parallelism=weird", {}).status().message().find("arena"),
            std::string::npos);
  for (const char* ok : {"arena:aging=3600:restart_overhead=0:storage_gbs=10:search_s_per_gpu=0:search_cap=0",
                         "arena:elastic=false:hetero=no:backfill=off:full_search=1:parallelism=dp"}) {
    EXPECT_TRUE(PolicyRegistry::Builtin().Create(ok, {}).ok()) << ok;
  }
}

}  // namespace
}  // namespace tessel
