#include "network/network_model.h"

#include <gtest/gtest.h>

#include "policy/policy.h"
#include "policy/throughput.h"
#include "sim/engine.h"

namespace tessel {
namespace {

// `nodes` nodes x 4 A100 at `gbps`, racks of `per_rack` nodes at `over`:1
// (per_rack >= nodes: one switch).
Cluster Fabricated(int nodes, int per_rack, double over, double gbps = 100) {
  std::string yaml = "name: fab\nracks: {nodes_per_rack: " + std::to_string(per_rack) +
                     ", oversubscription: " + std::to_string(over) +
                     "}\npools:\n  - {name: a100, gpu: a100-80g, nodes: " + std::to_string(nodes) +
                     ", gpus_per_node: 4, intra: nvswitch, network_gbps: " + std::to_string(gbps) + "}\n";
  return Cluster::Build(ParseClusterYaml(yaml, "fab.yaml").value()).value();
}

Allocation On(std::vector<Placement> parts) { return Allocation{0, std::move(parts)}; }

NetworkOptions With(CommSchedule s, double overhead = 0) {
  NetworkOptions o;
  o.schedule = s;
  o.contention_overhead = overhead;
  return o;
}

// Jobs on disjoint nodes share no link: separate groups, each at its rate.
TEST(NetworkModel, DisjointJobsDoNotSlowEachOther) {
  Cluster c = Fabricated(4, 4, 1);
  NetworkModel m(c, With(CommSchedule::kConcurrent));
  Allocation a = On({{0, 4}, {1, 4}}), b = On({{2, 4}, {3, 4}});
  std::vector<CommJob> jobs = {{1, &a, 1.0, 0.6, 0.6}, {2, &b, 2.0, 2.0, 1.0}};
  auto groups = m.Components(jobs);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<double> t = m.IterationTimes(jobs);
  EXPECT_DOUBLE_EQ(t[0], 1.0);
  EXPECT_DOUBLE_EQ(t[1], 2.0);
}

// Two jobs always on the wire through one node's NIC share it max-min:
// each moves at half the NIC, so each iteration takes twice as long.
TEST(NetworkModel, JobsThroughOneNicShareItMaxMin) {
  Cluster c = Fabricated(3, 3, 1);
  Allocation a = On({{0, 2}, {1, 4}}), b = On({{0, 2}, {2, 4}});
  std::vector<CommJob> jobs = {{1, &a, 1.0, 1.0, 1.0}, {2, &b, 1.0, 1.0, 1.0}};
  for (CommSchedule s : {CommSchedule::kConcurrent, CommSchedule::kSerial, CommSchedule::kAdaDual}) {
    NetworkModel m(c, With(s));
    ASSERT_EQ(m.Components(jobs).size(), 1u);
    std::vector<double> t = m.IterationTimes(jobs);
    EXPECT_NEAR(t[0], 2.0, 1e-6) << CommScheduleName(s);
    EXPECT_NEAR(t[1], 2.0, 1e-6) << CommScheduleName(s);
  }
  // The mean field agrees when both are always on the wire.
  NetworkModel m(c, With(CommSchedule::kConcurrent));
  std::vector<double> mf = m.MeanFieldIterationTimes(jobs);
  EXPECT_NEAR(mf[0], 2.0, 1e-6);
  EXPECT_NEAR(mf[1], 2.0, 1e-6);
}

// Half compute, half transfer: waiting for the link makes the two jobs
// alternate (each transfers while the other computes), so neither is
// slowed; sharing at once from unaligned phases costs both something.
TEST(NetworkModel, SerialTransfersInterleaveWithCompute) {
  Cluster c = Fabricated(3, 3, 1);
  Allocation a = On({{0, 2}, {1, 4}}), b = On({{0, 2}, {2, 4}});
  std::vector<CommJob> jobs = {{1, &a, 2.0, 1.0, 1.0}, {2, &b, 2.0, 1.0, 1.0}};
  std::vector<double> serial = NetworkModel(c, With(CommSchedule::kSerial)).IterationTimes(jobs);
  EXPECT_NEAR(serial[0], 2.0, 1e-6);
  EXPECT_NEAR(serial[1], 2.0, 1e-6);
  std::vector<double> shared = NetworkModel(c, With(CommSchedule::kConcurrent)).IterationTimes(jobs);
  EXPECT_GE(shared[0], 2.0);
  EXPECT_GE(shared[1], 2.0);
}

// Contention overhead (Wang et al.): two transfers on one link carry
// capacity / (1 + x/2) together.
TEST(NetworkModel, ContentionOverheadSlowsSharedTransfers) {
  Cluster c = Fabricated(3, 3, 1);
  Allocation a = On({{0, 2}, {1, 4}}), b = On({{0, 2}, {2, 4}});
  std::vector<CommJob> jobs = {{1, &a, 1.0, 1.0, 1.0}, {2, &b, 1.0, 1.0, 1.0}};
  std::vector<double> t = NetworkModel(c, With(CommSchedule::kConcurrent, 0.5)).IterationTimes(jobs);
  EXPECT_NEAR(t[0], 2.0 * 1.25, 1e-6);
  EXPECT_NEAR(t[1], 2.0 * 1.25, 1e-6);
}

// Overlapped traffic that finishes behind compute costs nothing; the
// exposed part is what contention stretches.
TEST(NetworkModel, HiddenTrafficCostsNothingAlone) {
  Cluster c = Fabricated(2, 2, 1);
  NetworkModel m(c, With(CommSchedule::kConcurrent));
  Allocation a = On({{0, 4}, {1, 4}});
  std::vector<CommJob> jobs = {{7, &a, 3.0, 1.0, 0.0}};
  EXPECT_DOUBLE_EQ(m.IterationTimes(jobs)[0], 3.0);
}

// An oversubscribed uplink is the bottleneck of jobs across racks: with
// racks of one node at 4:1, a ring across two racks moves at a quarter of
// its NIC even alone; a job inside a rack does not cross it.
TEST(NetworkModel, OversubscribedUplinksSlowJobsAcrossRacks) {
  Cluster c = Fabricated(4, 1, 4.0);
  NetworkModel m(c, With(CommSchedule::kConcurrent));
  Allocation across = On({{0, 4}, {1, 4}});
  std::vector<CommJob> one = {{1, &across, 1.0, 0.5, 0.5}};
  EXPECT_NEAR(m.IterationTimes(one)[0], 0.5 + 4 * 0.5, 1e-9);
  Cluster flat = Fabricated(4, 4, 4.0);
  NetworkModel f(flat, With(CommSchedule::kConcurrent));
  EXPECT_DOUBLE_EQ(f.IterationTimes(one)[0], 1.0);
}

// The belief: a grid that must span racks expects the uplink share left by
// the multi-node jobs there, weighted by how often they are on the wire.
TEST(NetworkLoad, ExpectedShareFollowsDutyCycles) {
  Cluster c = Fabricated(4, 2, 2.0);  // racks {0,1}, {2,3}; uplink 100 Gb/s = one NIC
  NetworkModel m(c, With(CommSchedule::kConcurrent));
  NetworkLoad load(m);
  EXPECT_DOUBLE_EQ(load.ExpectedShare(0, 2), 1.0);  // a rack holds it
  EXPECT_DOUBLE_EQ(load.ExpectedShare(0, 3), 1.0);  // uplinks idle
  load.Add(On({{1, 4}, {2, 4}}), 1.0);
  load.Add(On({{0, 4}, {3, 4}}), 1.0);
  EXPECT_NEAR(load.ExpectedShare(0, 3), 1.0 / 3.0, 1e-12);  // two always-on flows per uplink already
  NetworkLoad light(m);
  light.Add(On({{1, 4}, {2, 4}}), 0.5);
  EXPECT_NEAR(light.ExpectedShare(0, 3), 1.0 / 1.5, 1e-12);
}

// The estimator reports a multi-node plan's traffic; one node has none.
TEST(NetworkModel, EstimatorReportsInterNodeTraffic) {
  Cluster c = Fabricated(2, 2, 1, 25);
  EstimatorThroughput est(c, PlanMode::kDataParallel);
  JobSpec j;
  j.model = "gpt3-1.3b";
  j.global_batch = 64;
  const JobRate& two = est.Rate(j, 0, 8, 2);
  ASSERT_TRUE(two.fits);
  EXPECT_GT(two.network_s, 0);
  EXPECT_LE(two.network_exposed_s, two.network_s);
  EXPECT_LE(two.network_s, two.iteration_time_s);
  const JobRate& one = est.Rate(j, 0, 4, 1);
  EXPECT_EQ(one.network_s, 0);
  // Less network, longer iterations (arena's expected-share pricing).
  EXPECT_GT(est.RateShared(j, 0, 8, 2, 0.25).iteration_time_s, two.iteration_time_s);
}

// In the engine: two data-parallel jobs whose rings cross one node's NIC
// finish later than the same jobs on disjoint nodes, and later than with
// the network model off.
TEST(NetworkModel, EngineSlowsJobsSharingANic) {
  Cluster c = Fabricated(3, 3, 1, 10);
  auto run = [&](bool network) {
    Workload w;
    for (int i = 0; i < 2; ++i) {
      JobSpec j;
      j.id = "j" + std::to_string(i);
      j.model = "gpt3-350m";
      j.global_batch = 48;
      j.iterations = 500;
      j.requested_gpus = j.min_gpus = j.max_gpus = 6;
      w.jobs.push_back(j);
    }
    auto policy = PolicyRegistry::Builtin().Create("fcfs", PolicyContext{}).value();
    EstimatorThroughput belief(c, policy->traits().plan_mode);
    SimConfig cfg;
    cfg.network.enabled = network;
    Simulator sim(c, w, *policy, belief, belief, cfg);
    auto r = sim.Run();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r->summary.avg_jct_s;
  };
  // 6 + 6 GPUs on 3 nodes of 4: the jobs must share a node (and its NIC).
  double with = run(true), without = run(false);
  EXPECT_GT(with, without * 1.01);
}


// AdaDUAL in the periodic model: a small transfer that finds a large one on
// its link starts at once (both finish sooner on average than queueing it
// behind the large one), so the small job runs faster than under serial
// and the pair's mean iteration beats serial's.
TEST(NetworkModel, AdaDualLetsASmallTransferJoinALargeOne) {
  Cluster c = Fabricated(3, 3, 1, 10);
  Allocation a = On({{0, 2}, {1, 4}}), b = On({{0, 2}, {2, 4}});
  // 1.25 GB/s NICs: the large job moves 0.5 GB (0.4 s) after 0.1 s of
  // compute, the small one 0.05 GB (0.04 s) after 0.06 s.
  std::vector<CommJob> jobs = {{1, &a, 0.5, 0.4, 0.4}, {2, &b, 0.1, 0.04, 0.04}};
  const double o = 0.2745;
  std::vector<double> serial = NetworkModel(c, With(CommSchedule::kSerial, o)).IterationTimes(jobs);
  std::vector<double> ada = NetworkModel(c, With(CommSchedule::kAdaDual, o)).IterationTimes(jobs);
  EXPECT_LT(ada[1], serial[1] * 0.95);
  EXPECT_LT(ada[0] + ada[1], serial[0] + serial[1]);
}

}  // namespace
}  // namespace tessel
