#include "policy/srtf.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <fstream>

#include "policy/corrected_throughput.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {
using testing::MakeJob;
using testing::PolicyFixture;

// Two nodes of four A100s: small enough to state every expected allocation.
std::string TwoByFour() {
  std::string path = ::tessel::testing::ProcessTempDir() + "/srtf_2x4.yaml";
  std::ofstream(path) << "name: srtf-2x4\npools:\n"
                         "  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch}\n";
  return path;
}

std::unique_ptr<Policy> Srtf() { return PolicyRegistry::Builtin().Create("srtf", PolicyContext{}).value(); }

// "j0=a100-80g x4 on n0:4; j1=-"
std::string Show(const Decision& d, const Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  return s;
}

Allocation On(int type, std::vector<Placement> parts) { return Allocation{type, std::move(parts)}; }

TEST(SrtfTest, PreemptsLongJobForShortArrival) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& long_job = f.AddJob(MakeJob("long").Gpus(8).Iterations(1e6));
  f.Run(long_job, On(a100, {{0, 4}, {1, 4}}));
  f.AddJob(MakeJob("short").Gpus(4).Iterations(100).Submit(Seconds(60)));
  auto policy = Srtf();
  Decision d = policy->Decide(f.Snap(Seconds(60)));
  EXPECT_EQ(Show(d, f.cluster()), "j0=-; j1=a100-80g x4 on n0:4");
  EXPECT_TRUE(d.reject.empty());
  EXPECT_FALSE(policy->traits().uses_rounds);
}

TEST(SrtfTest, KeepsJobsThatStayAndTakesFromTheLongest) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(4).Iterations(100));
  JobView& b = f.AddJob(MakeJob("b").Gpus(4).Iterations(1e6));
  f.Run(a, On(a100, {{0, 4}}));
  f.Run(b, On(a100, {{1, 4}}));
  f.AddJob(MakeJob("c").Gpus(4).Iterations(1000));
  Decision d = Srtf()->Decide(f.Snap(Seconds(10)));
  // a (shortest) keeps n0 untouched; c takes b's node; b waits.
  EXPECT_EQ(Show(d, f.cluster()), "j1=-; j2=a100-80g x4 on n1:4");
}

TEST(SrtfTest, DisplacedJobWhoseGpusAreUnusedKeepsThem) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& w = f.AddJob(MakeJob("w").Gpus(2).Iterations(10));
  JobView& x = f.AddJob(MakeJob("x").Gpus(2).Iterations(1e6));
  JobView& v = f.AddJob(MakeJob("v").Gpus(4).Iterations(1e5));
  f.Run(w, On(a100, {{0, 2}}));
  f.Run(x, On(a100, {{0, 2}}));
  f.Run(v, On(a100, {{1, 4}}));
  f.AddJob(MakeJob("z").Gpus(4).Iterations(100));
  // Room for z: x (longest) is released first, then v; z fits best on v's
  // node, so x keeps its GPUs untouched.
  EXPECT_EQ(Show(Srtf()->Decide(f.Snap(Seconds(10))), f.cluster()), "j2=-; j3=a100-80g x4 on n1:4");
}

TEST(SrtfTest, LongerArrivalWaits) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(8).Iterations(100));
  f.Run(a, On(a100, {{0, 4}, {1, 4}}));
  f.AddJob(MakeJob("b").Gpus(4).Iterations(1e6));
  Decision d = Srtf()->Decide(f.Snap(Seconds(10)));
  EXPECT_EQ(Show(d, f.cluster()), "");
}

TEST(SrtfTest, SameSnapshotSameDecision) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  JobView& a = f.AddJob(MakeJob("a").Gpus(2).Iterations(5000));
  f.Run(a, On(a100, {{0, 2}}));
  f.AddJob(MakeJob("b").Gpus(4).Iterations(100));
  f.AddJob(MakeJob("c").Gpus(4).Iterations(100));
  f.AddJob(MakeJob("d").Gpus(2).Iterations(10));
  Snapshot s = f.Snap(Seconds(5));
  auto p1 = Srtf();
  Decision d1 = p1->Decide(s);
  Decision d2 = p1->Decide(s);
  Decision d3 = Srtf()->Decide(s);
  EXPECT_EQ(d1.assign, d2.assign);
  EXPECT_EQ(d1.assign, d3.assign);
  // d (shortest) takes the free pair on n0, b the free node n1; c cannot
  // displace enough (a holds only 2 GPUs) and waits.
  EXPECT_EQ(Show(d1, f.cluster()), "j1=a100-80g x4 on n1:4; j3=a100-80g x2 on n0:2");
}

// The policy keeps what it learnt about jobs between decisions; a belief
// corrected in between (the daemon's measured step times) is seen at once.
TEST(SrtfTest, SeesACorrectedBeliefAtTheNextDecision) {
  PolicyFixture f(TwoByFour());
  int a100 = f.Type("a100-80g");
  f.AddJob(MakeJob("a").Gpus(8).Iterations(100));
  f.AddJob(MakeJob("b").Gpus(8).Iterations(200));
  auto policy = Srtf();
  // a measured 10x slower: b is the shorter now
  std::vector<Decision> d = testing::DecisionsAroundACorrection(*policy, f, "a", a100, 10);
  EXPECT_EQ(Show(d[0], f.cluster()), "j0=a100-80g x8 on n0:4,n1:4");
  EXPECT_EQ(Show(d[1], f.cluster()), "j0=a100-80g x8 on n0:4,n1:4");
  EXPECT_EQ(Show(d[2], f.cluster()), "j1=a100-80g x8 on n0:4,n1:4");
}

TEST(SrtfTest, RejectsJobThatFitsNowhere) {
  PolicyFixture f(TwoByFour());
  f.AddJob(MakeJob("huge").Gpus(16));
  f.AddJob(MakeJob("h100").Gpus(1).Type("h100-sxm"));
  f.AddJob(MakeJob("ok").Gpus(1));
  Decision d = Srtf()->Decide(f.Snap(0));
  ASSERT_EQ(d.reject.size(), 2u);
  EXPECT_EQ(d.reject[0].first, 0);
  EXPECT_EQ(d.reject[0].second, "needs 16 GPUs; the largest GPU type in the cluster has 8");
  EXPECT_EQ(d.reject[1].first, 1);
  EXPECT_EQ(d.reject[1].second, "requested GPU type 'h100-sxm' is not in the cluster");
  EXPECT_EQ(Show(d, f.cluster()), "j2=a100-80g x1 on n0:1");
}

}  // namespace
}  // namespace tessel
