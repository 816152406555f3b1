// The auto-scaling rule against a scripted policy whose speedups are known.
#include "sched/autoscaler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using testing::MakeJob;
using testing::PolicyFixture;

// Current speedup: a fixed number; at a capacity of G GPUs: sqrt(G) x k
// (so utility at n nodes of 4 GPUs is k / sqrt(4n), falling with n).
class ScriptedPolicy : public Policy {
 public:
  std::string_view name() const override { return "scripted"; }
  PolicyTraits traits() const override { return {}; }
  Decision Decide(const Snapshot&) override { return {}; }
  std::optional<double> TotalSpeedup(const Snapshot&, std::span<const int> capacity, SpeedupBasis basis) override {
    asked_by = basis;
    if (capacity.empty()) return current;
    int gpus = 0;
    for (int c : capacity) gpus += c;
    ++priced;
    return k * std::sqrt(static_cast<double>(gpus));
  }
  double current = 0;
  double k = 1;
  int priced = 0;
  SpeedupBasis asked_by = SpeedupBasis::kGoodput;
};

class NoGoodput : public ScriptedPolicy {
 public:
  std::optional<double> TotalSpeedup(const Snapshot&, std::span<const int>, SpeedupBasis) override {
    return std::nullopt;
  }
};

TEST(ParseAutoscale, ReadsNodesAndBandAndRefusesTheRest) {
  auto a = ParseAutoscale("2:16", 16);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->min_nodes, 2);
  EXPECT_EQ(a->max_nodes, 16);
  EXPECT_DOUBLE_EQ(a->low, 0.35);
  EXPECT_DOUBLE_EQ(a->high, 0.65);
  auto b = ParseAutoscale("1:4:0.2,0.8", 16);
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->low, 0.2);
  EXPECT_DOUBLE_EQ(b->high, 0.8);
  for (const char* bad : {"", "4", "0:4", "5:4", "1:17", "1:4:0.8,0.2", "1:4:0.5", "a:b", "1:4:x,1", "1:4:5"}) {
    auto r = ParseAutoscale(bad, 16);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("expected MIN:MAX or MIN:MAX:LOW,HIGH (nodes 1 <= MIN <= MAX <= 16"),
              std::string::npos)
        << r.status().message();
  }
}

class AutoscalerTest : public ::testing::Test {
 protected:
  // The pollux-64 cluster: 16 nodes x 4 GPUs.
  AutoscalerTest() : f_("pollux-64") { f_.AddJob(MakeJob("a").Gpus(4)); }
  PolicyFixture f_;
};

// Nothing moves until the window holds 15 rounds past its first (the
// artifact acts on the 16th); a mean above the band scales out to the count
// whose utility is nearest the band's middle, and the window starts again.
TEST_F(AutoscalerTest, ScalesOutToTheCountNearestTheBandsMiddleAfterAFullWindow) {
  AutoscaleConfig c;
  c.min_nodes = 1;
  c.max_nodes = 16;
  Autoscaler as(c, f_.cluster());
  ScriptedPolicy p;
  p.current = 4;  // 4 speedup on 4 GPUs: utility 1.0, above 0.65
  p.k = 4;        // utility at n nodes: 4 / sqrt(4n) = 2 / sqrt(n); 0.5 at n = 16
  for (int r = 0; r < 15; ++r) {
    auto t = as.Round(f_.Snap(0), p, 1);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(*t, 1) << r;
  }
  EXPECT_EQ(p.priced, 0);
  auto t = as.Round(f_.Snap(0), p, 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, 16);  // 2/sqrt(16) = 0.5 exactly the middle
  EXPECT_GT(p.priced, 0);
  // The window restarted: 15 more rounds before the next move.
  p.current = 0;
  for (int r = 0; r < 15; ++r) EXPECT_EQ(*as.Round(f_.Snap(0), p, 16), 16) << r;
}

// Utility below the band with nodes above the minimum scales in; a mean in
// the band changes nothing.
TEST_F(AutoscalerTest, ScalesInBelowTheBandAndHoldsInsideIt) {
  AutoscaleConfig c;
  c.min_nodes = 2;
  c.max_nodes = 16;
  Autoscaler as(c, f_.cluster());
  ScriptedPolicy p;
  p.k = 2;  // utility at n nodes: 1 / sqrt(n): 0.5 at n = 4
  p.current = 0.5 * 64;  // in the band on 16 nodes
  for (int r = 0; r < 40; ++r) EXPECT_EQ(*as.Round(f_.Snap(0), p, 16), 2);  // target stays at the minimum
  p.current = 0.1 * 64;
  int t = 0;
  for (int r = 0; r < 16; ++r) t = *as.Round(f_.Snap(0), p, 16);
  EXPECT_EQ(t, 4);
}

// A round without active jobs counts as utility 0: an idle cluster shrinks
// to its minimum.
TEST_F(AutoscalerTest, AnIdleClusterShrinksToItsMinimum) {
  PolicyFixture empty("pollux-64");
  AutoscaleConfig c;
  c.min_nodes = 3;
  c.max_nodes = 16;
  Autoscaler as(c, empty.cluster());
  ScriptedPolicy p;
  int t = 0;
  for (int r = 0; r < 16; ++r) t = *as.Round(empty.Snap(0), p, 10);
  EXPECT_EQ(t, 3);
}

// --autoscale-by reaches the policy: the utility is priced by throughput.
TEST_F(AutoscalerTest, AsksThePolicyForTheSpeedupBasisConfigured) {
  auto a = ParseAutoscale("1:16", 16, 15, "throughput");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->basis, SpeedupBasis::kThroughput);
  EXPECT_EQ(ParseAutoscale("1:16", 16)->basis, SpeedupBasis::kGoodput);
  auto bad = ParseAutoscale("1:16", 16, 15, "samples");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--autoscale-by 'samples': expected goodput (Pollux) or throughput"),
            std::string::npos)
      << bad.status().message();
  Autoscaler as(*a, f_.cluster());
  ScriptedPolicy p;
  p.current = 4;
  p.k = 4;
  for (int r = 0; r < 16; ++r) ASSERT_TRUE(as.Round(f_.Snap(0), p, 1).ok());
  EXPECT_GT(p.priced, 0);
  EXPECT_EQ(p.asked_by, SpeedupBasis::kThroughput);
}

TEST_F(AutoscalerTest, RefusesAPolicyWithoutAGoodputModel) {
  AutoscaleConfig c;
  c.min_nodes = 1;
  c.max_nodes = 4;
  Autoscaler as(c, f_.cluster());
  NoGoodput p;
  auto t = as.Round(f_.Snap(0), p, 1);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("policy scripted has no goodput model"), std::string::npos);
}

}  // namespace
}  // namespace tessel
