#include "policy/gandiva.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <fstream>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {
using testing::MakeJob;
using testing::PolicyFixture;

// `nodes` nodes of `per_node` A100s.
std::string Cluster(int nodes, int per_node) {
  std::string name = "gandiva_" + std::to_string(nodes) + "x" + std::to_string(per_node);
  std::string path = ::tessel::testing::ProcessTempDir() + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\npools:\n  - {name: a100, gpu: a100-80g, nodes: " << nodes
                      << ", gpus_per_node: " << per_node << ", intra: nvswitch}\n";
  return path;
}

std::unique_ptr<Policy> Gandiva() { return PolicyRegistry::Builtin().Create("gandiva", PolicyContext{}).value(); }

std::string Show(const Decision& d, const tessel::Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  return s;
}

Allocation On(int type, std::vector<Placement> parts) { return Allocation{type, std::move(parts)}; }

// Two 4-GPU jobs fill the cluster (a since 0, b since 200); c waits since 100.
struct OversubscribedCase {
  OversubscribedCase() : f(Cluster(2, 4)) {
    int a100 = f.Type("a100-80g");
    JobView& a = f.AddJob(MakeJob("a").Gpus(4));
    JobView& b = f.AddJob(MakeJob("b").Gpus(4).Submit(Seconds(50)));
    JobView& c = f.AddJob(MakeJob("c").Gpus(4).Submit(Seconds(100)));
    f.Run(a, On(a100, {{0, 4}}), 0);
    f.Run(b, On(a100, {{1, 4}}), Seconds(200));
    c.alloc_since = Seconds(100);
  }
  PolicyFixture f;
};

TEST(GandivaTest, TimeSlicesWhenOversubscribed) {
  OversubscribedCase c;
  auto policy = Gandiva();
  EXPECT_TRUE(policy->traits().uses_rounds);
  // Nobody has had a 300 s round yet: c waits.
  EXPECT_EQ(Show(policy->Decide(c.f.Snap(Seconds(250))), c.f.cluster()), "");
  // a has (400 s): c swaps in for it; b (200 s) keeps running.
  EXPECT_EQ(Show(policy->Decide(c.f.Snap(Seconds(400))), c.f.cluster()), "j0=-; j2=a100-80g x4 on n0:4");
  // Both have: the longest-running one (a) goes.
  EXPECT_EQ(Show(policy->Decide(c.f.Snap(Seconds(600))), c.f.cluster()), "j0=-; j2=a100-80g x4 on n0:4");
}

TEST(GandivaTest, TimeSliceNeedsSimilarSize) {
  PolicyFixture f(Cluster(2, 4));
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(4));
  JobView& b = f.AddJob(MakeJob("b").Gpus(4));
  f.Run(a, On(a100, {{0, 4}}), 0);
  f.Run(b, On(a100, {{1, 4}}), 0);
  f.AddJob(MakeJob("one").Gpus(1));  // a 4-GPU job is more than twice its size
  EXPECT_EQ(Show(Gandiva()->Decide(f.Snap(Seconds(1000))), f.cluster()), "");
}

TEST(GandivaTest, GrowsIntoIdleGpusWhenNobodyWaits) {
  PolicyFixture f(Cluster(2, 8));
  int a100 = f.Type("a100-80g");
  JobView& e = f.AddJob(MakeJob("e").Gpus(4).Elastic(4, 8).Batch(256));
  f.Run(e, On(a100, {{0, 4}}), 0);
  // The belief expects >= 1.5x from doubling on one node.
  const JobRate& r4 = f.belief().Rate(*e.spec, a100, 4, 1);
  const JobRate& r8 = f.belief().Rate(*e.spec, a100, 8, 1);
  ASSERT_GE(r8.samples_per_s, 1.5 * r4.samples_per_s);
  Decision d = Gandiva()->Decide(f.Snap(Seconds(10)));
  EXPECT_EQ(Show(d, f.cluster()), "j0=a100-80g x8 on n0:8");
  // Never past max_gpus, and not when the belief sees no gain.
  auto stingy = PolicyRegistry::Builtin().Create("gandiva:grow_speedup=2.5", {}).value();
  EXPECT_EQ(Show(stingy->Decide(f.Snap(Seconds(10))), f.cluster()), "");
}

TEST(GandivaTest, ShrinksGrownJobWhenAJobWaits) {
  PolicyFixture f(Cluster(2, 8));
  int a100 = f.Type("a100-80g");
  JobView& e = f.AddJob(MakeJob("e").Gpus(4).Elastic(4, 8).Batch(256));
  JobView& r = f.AddJob(MakeJob("rigid").Gpus(8));
  f.Run(e, On(a100, {{0, 8}}), 0);  // grown earlier
  f.Run(r, On(a100, {{1, 8}}), 0);
  f.AddJob(MakeJob("w").Gpus(4));
  Decision d = Gandiva()->Decide(f.Snap(Seconds(10)));
  EXPECT_EQ(Show(d, f.cluster()), "j0=a100-80g x4 on n0:4; j2=a100-80g x4 on n0:4");
}

TEST(GandivaTest, MigratesSpreadJobToOneNode) {
  PolicyFixture f(Cluster(2, 8));
  int a100 = f.Type("a100-80g");
  JobView& x = f.AddJob(MakeJob("x").Gpus(4));
  JobView& m = f.AddJob(MakeJob("m").Gpus(4));
  f.Run(x, On(a100, {{0, 4}}), 0);
  f.Run(m, On(a100, {{0, 2}, {1, 2}}), 0);
  // n0 has 2 free GPUs beside m's 2: m moves onto n0 alone (best fit).
  Decision d = Gandiva()->Decide(f.Snap(Seconds(10)));
  EXPECT_EQ(Show(d, f.cluster()), "j1=a100-80g x4 on n0:4");
}

TEST(GandivaTest, SameSnapshotSameDecision) {
  OversubscribedCase c;
  c.f.AddJob(MakeJob("d").Gpus(2).Submit(Seconds(150))).alloc_since = Seconds(150);
  Snapshot s = c.f.Snap(Seconds(700));
  auto policy = Gandiva();
  Decision d1 = policy->Decide(s);
  Decision d2 = policy->Decide(s);
  Decision d3 = Gandiva()->Decide(s);
  EXPECT_EQ(d1.assign, d2.assign);
  EXPECT_EQ(d1.assign, d3.assign);
  // c (waiting longest) swaps in for a; d (2 GPUs) for b, leaving 2 idle.
  EXPECT_EQ(Show(d1, c.f.cluster()), "j0=-; j1=-; j2=a100-80g x4 on n0:4; j3=a100-80g x2 on n1:2");
}

TEST(GandivaTest, RejectsJobThatFitsNowhere) {
  PolicyFixture f(Cluster(2, 4));
  f.AddJob(MakeJob("huge").Gpus(12));
  f.AddJob(MakeJob("ok").Gpus(3));
  Decision d = Gandiva()->Decide(f.Snap(0));
  ASSERT_EQ(d.reject.size(), 1u);
  EXPECT_EQ(d.reject[0].first, 0);
  EXPECT_EQ(d.reject[0].second, "needs 12 GPUs; the largest GPU type in the cluster has 8");
  EXPECT_EQ(Show(d, f.cluster()), "j1=a100-80g x3 on n0:3");
}

}  // namespace
}  // namespace tessel
