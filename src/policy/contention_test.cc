#include "policy/contention.h"

#include <gtest/gtest.h>

#include "policy/policy.h"
#include "policy/throughput.h"
#include "sim/engine.h"

namespace tessel {
namespace {

// 4 nodes x 4 A100, racks of `per_rack` nodes at `over`:1.
Cluster Racked(int per_rack, double over) {
  std::string yaml = "name: racked\nracks: {nodes_per_rack: " + std::to_string(per_rack) +
                     ", oversubscription: " + std::to_string(over) +
                     "}\npools:\n  - {name: a100, gpu: a100-80g, nodes: 4, gpus_per_node: 4, intra: nvswitch, "
                     "network_gbps: 200}\n";
  return Cluster::Build(ParseClusterYaml(yaml, "racked.yaml").value()).value();
}

Allocation On(std::vector<Placement> parts) { return Allocation{0, std::move(parts)}; }

TEST(Contention, SharesOnlyAcrossOversubscribedRacks) {
  Cluster c = Racked(2, 2.0);  // racks {0,1}, {2,3}; uplink = 2 x 200 / 2 = 200 Gb/s
  Allocation in_rack = On({{0, 4}, {1, 4}});
  Allocation across = On({{1, 4}, {2, 4}});  // 200 Gb/s into each uplink: fits alone
  std::vector<const Allocation*> alone = {&in_rack, &across};
  std::vector<double> s = NetworkShares(c, alone);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 1.0);
  Allocation across2 = On({{0, 4}, {3, 4}});  // a second cross-rack job: 400 Gb/s asked of 200
  std::vector<const Allocation*> two = {&across, &across2};
  s = NetworkShares(c, two);
  EXPECT_DOUBLE_EQ(s[0], 0.5);
  EXPECT_DOUBLE_EQ(s[1], 0.5);
  // One switch: no sharing at all.
  Cluster flat = Racked(4, 2.0);
  s = NetworkShares(flat, two);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
}

TEST(Contention, ExpectedShareForGridsThatMustSpanRacks) {
  Cluster c = Racked(1, 4.0);  // every node its own rack, uplink 50 Gb/s
  RackLoad load(c);
  EXPECT_DOUBLE_EQ(load.ExpectedShare(0, 1), 1.0);
  EXPECT_NEAR(load.ExpectedShare(0, 2), 0.25, 1e-12);  // 200 Gb/s asked of 50
  load.Add(On({{0, 4}, {1, 4}}));
  load.Add(On({{2, 4}, {3, 4}}));
  EXPECT_NEAR(load.ExpectedShare(0, 2), 50.0 / 400.0, 1e-12);  // each uplink already carries 200
}

TEST(Contention, EstimatorSlowsMultiNodeJobsWithLessNetwork) {
  Cluster c = Racked(1, 4.0);
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  JobSpec j;
  j.model = "gpt3-1.3b";
  j.global_batch = 64;
  double full = est.Rate(j, 0, 8, 2).iteration_time_s;
  double quarter = est.RateShared(j, 0, 8, 2, 0.25).iteration_time_s;
  EXPECT_GT(quarter, full);
  EXPECT_DOUBLE_EQ(est.RateShared(j, 0, 4, 1, 0.25).iteration_time_s, est.Rate(j, 0, 4, 1).iteration_time_s);
}

// In the engine, a job across racks runs slower than on one switch.
TEST(Contention, EngineRatesJobsAcrossRacksAtTheirShare) {
  JobSpec j;
  j.id = "wide";
  j.model = "gpt3-1.3b";
  j.global_batch = 64;
  j.iterations = 2000;
  j.requested_gpus = j.min_gpus = j.max_gpus = 8;
  Workload w;
  w.jobs = {j};
  auto jct = [&](const Cluster& c) {
    auto policy = PolicyRegistry::Builtin().Create("fcfs", PolicyContext{}).value();
    EstimatorThroughput belief(c, policy->traits().plan_mode);
    Simulator sim(c, w, *policy, belief, belief, SimConfig{});
    auto r = sim.Run();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r->summary.avg_jct_s;
  };
  double racked = jct(Racked(1, 4.0));
  double flat = jct(Racked(4, 4.0));
  EXPECT_GT(racked, flat * 1.01);
}

}  // namespace
}  // namespace tessel
