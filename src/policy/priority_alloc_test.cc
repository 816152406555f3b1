#include "policy/priority_alloc.h"

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
  std::string path = ::tessel::testing::ProcessTempDir() + "/priority_alloc_2x4.yaml";
  std::ofstream(path) << "name: priority-alloc-2x4\npools:\n"
                         "  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch}\n";
  return path;
}

std::string Show(const Decision& d, const Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  return s;
}

Allocation On(int type, std::vector<Placement> parts) { return Allocation{type, std::move(parts)}; }

TEST(JobFactsCacheTest, KeepsFactsWhileTheBeliefIsUnchanged) {
  PolicyFixture f(TwoByFour());
  f.AddJob(MakeJob("a").Gpus(1));
  CorrectedThroughput belief(f.belief());
  Snapshot s = f.Snap(0);
  s.belief = &belief;
  JobFactsCache<int> cache;
  cache.Begin(s);
  EXPECT_EQ(cache.At(0), 0);  // made empty the first time
  cache.At(0) = 7;
  cache.Begin(s);
  EXPECT_EQ(cache.At(0), 7);
  belief.SetFactor("a", 0, 2.0);  // a new version: every answer may have changed
  cache.Begin(s);
  EXPECT_EQ(cache.At(0), 0);
  cache.At(0) = 7;
  Snapshot other = f.Snap(0);  // another belief
  cache.Begin(other);
  EXPECT_EQ(cache.At(0), 0);
}

// Jobs come and go, and the snapshot's order may change: each job finds its
// own facts, a job that left loses them, another spec under a known index
// starts empty.
TEST(JobFactsCacheTest, FollowsJobsAcrossSnapshots) {
  PolicyFixture f(TwoByFour());
  for (int i = 0; i < 6; ++i) f.AddJob(MakeJob("j" + std::to_string(i)).Gpus(1));
  Snapshot s = f.Snap(0);
  std::vector<const JobView*> all(s.jobs.begin(), s.jobs.end());
  JobFactsCache<int> cache;
  auto begin = [&](std::vector<const JobView*> jobs) {
    Snapshot t = s;
    t.jobs = jobs;
    cache.Begin(t);
    std::vector<int> facts;
    for (size_t p = 0; p < jobs.size(); ++p) facts.push_back(cache.At(p));
    for (size_t p = 0; p < jobs.size(); ++p) cache.At(p) = 10 + jobs[p]->index;
    return facts;
  };
  EXPECT_EQ(begin({all[0], all[1], all[2]}), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(begin({all[0], all[2], all[3]}), (std::vector<int>{10, 12, 0}));  // 1 left, 3 came
  EXPECT_EQ(begin({all[3], all[0], all[4], all[2]}), (std::vector<int>{13, 10, 0, 12}));
  EXPECT_EQ(begin({all[2], all[1], all[3]}), (std::vector<int>{12, 0, 13}));  // 1 is new again
  JobView reused = *all[5];
  reused.index = all[2]->index;
  EXPECT_EQ(begin({&reused, all[1], all[3]}), (std::vector<int>{0, 11, 13}));
  EXPECT_EQ(begin({}), (std::vector<int>{}));
  EXPECT_EQ(begin({all[3]}), (std::vector<int>{0}));
}

std::vector<PriorityEntry> Order(const std::vector<const JobView*>& jobs, std::span<const int> types) {
  std::vector<PriorityEntry> order;
  for (const JobView* j : jobs) order.push_back({j, j->spec->requested_gpus, types});
  return order;
}

TEST(AllocateByPriorityTest, NobodyWaitingChangesNothing) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(4));
  JobView& b = f.AddJob(MakeJob("b").Gpus(2));
  f.Run(a, On(a100, {{0, 4}}));
  f.Run(b, On(a100, {{1, 2}}));
  const int types[] = {a100};
  Decision d;
  AllocateByPriority(f.Snap(0), Order({&b, &a}, types), d);
  EXPECT_EQ(Show(d, f.cluster()), "");
}

// Only jobs below a waiting one give it GPUs, those above keep theirs
// however far down the walk it comes; a waiting job that fits on free GPUs
// takes them first.
TEST(AllocateByPriorityTest, TakesOnlyFromJobsBelow) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& high = f.AddJob(MakeJob("high").Gpus(2));
  JobView& small = f.AddJob(MakeJob("small").Gpus(2));
  JobView& big = f.AddJob(MakeJob("big").Gpus(4));
  JobView& low = f.AddJob(MakeJob("low").Gpus(4));
  f.Run(high, On(a100, {{0, 2}}));
  f.Run(low, On(a100, {{1, 4}}));
  const int types[] = {a100};
  Decision d;
  AllocateByPriority(f.Snap(0), Order({&high, &small, &big, &low}, types), d);
  EXPECT_EQ(Show(d, f.cluster()), "j1=a100-80g x2 on n0:2; j2=a100-80g x4 on n1:4; j3=-");
}

TEST(PriorityTypesOrRejectTest, CandidatesElseItsOwnTypeElseRejected) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& running = f.AddJob(MakeJob("running").Gpus(4));
  JobView& waiting = f.AddJob(MakeJob("waiting").Gpus(4));
  f.Run(running, On(a100, {{0, 4}}));
  Snapshot s = f.Snap(0);
  Decision d;
  const int candidates[] = {a100};
  auto types = PriorityTypesOrReject(waiting, candidates, s, d);
  ASSERT_TRUE(types);
  EXPECT_EQ(std::vector<int>(types->begin(), types->end()), std::vector<int>{a100});
  types = PriorityTypesOrReject(running, {}, s, d);
  ASSERT_TRUE(types);
  EXPECT_EQ(std::vector<int>(types->begin(), types->end()), std::vector<int>{a100});
  EXPECT_TRUE(d.reject.empty());
  EXPECT_FALSE(PriorityTypesOrReject(waiting, {}, s, d));
  ASSERT_EQ(d.reject.size(), 1u);
  EXPECT_EQ(d.reject[0].first, waiting.index);
}

}  // namespace
}  // namespace tessel
