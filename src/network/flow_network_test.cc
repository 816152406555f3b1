#include "network/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tessel {
namespace {

constexpr double kGB = 1e9;

// Two jobs on disjoint links do not slow each other: each finishes as if
// alone.
TEST(FlowNetwork, DisjointLinksDoNotInterfere) {
  FlowNetwork net;
  int a = *net.AddLink("nic-a", 1.25 * kGB), b = *net.AddLink("nic-b", 1.25 * kGB);
  int fa = *net.AddFlow({a}, 2.5 * kGB), fb = *net.AddFlow({b}, 1.25 * kGB);
  EXPECT_DOUBLE_EQ(net.Rate(fa), 1.25 * kGB);
  EXPECT_DOUBLE_EQ(net.Rate(fb), 1.25 * kGB);
  net.RunToCompletion();
  EXPECT_DOUBLE_EQ(net.FinishTime(fa), 2.0);
  EXPECT_DOUBLE_EQ(net.FinishTime(fb), 1.0);
}

// Two on one link share it max-min: equal halves while both run; the
// survivor then takes the whole link.
TEST(FlowNetwork, SharedLinkSplitsMaxMinFairly) {
  FlowNetwork net;
  int l = *net.AddLink("uplink", 1 * kGB);
  int f1 = *net.AddFlow({l}, 1 * kGB), f2 = *net.AddFlow({l}, 3 * kGB);
  EXPECT_DOUBLE_EQ(net.Rate(f1), 0.5 * kGB);
  EXPECT_DOUBLE_EQ(net.Rate(f2), 0.5 * kGB);
  auto done = net.Advance();
  ASSERT_EQ(done, std::vector<int>{f1});
  EXPECT_DOUBLE_EQ(net.now(), 2.0);
  EXPECT_DOUBLE_EQ(net.Rate(f2), 1 * kGB);
  net.RunToCompletion();
  EXPECT_DOUBLE_EQ(net.FinishTime(f2), 4.0);  // 4 GB over a 1 GB/s link
}

// The textbook max-min case: a flow limited elsewhere leaves its share of a
// common link to the others.
TEST(FlowNetwork, BottleneckElsewhereFreesShare) {
  // Link 0: 10, link 1: 2. Flow A crosses both, B and C only link 0.
  auto r = MaxMinRates({10, 2}, {{0, 1}, {0}, {0}});
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_DOUBLE_EQ(r[1], 4);
  EXPECT_DOUBLE_EQ(r[2], 4);
}

// Bytes are conserved: whatever the sharing, each flow moves exactly its
// bytes, and the links never carry more than their capacity.
TEST(FlowNetwork, BytesConservedAndCapacityRespected) {
  FlowNetwork net;
  std::vector<int> links;
  for (int i = 0; i < 4; ++i) links.push_back(*net.AddLink("l" + std::to_string(i), (1 + i) * kGB));
  std::vector<std::pair<int, double>> flows;
  const std::vector<std::vector<int>> paths = {{0, 1}, {1, 2}, {2, 3}, {0, 3}, {1}, {0, 1, 2, 3}};
  for (size_t i = 0; i < paths.size(); ++i) {
    double bytes = (0.5 + i) * kGB;
    flows.push_back({*net.AddFlow(paths[i], bytes), bytes});
  }
  double moved_integral = 0;  // sum over flows of rate * dt
  while (net.active_flows() > 0) {
    double t0 = net.now();
    std::vector<double> load(4, 0);
    double rate_sum = 0;
    for (auto [f, bytes] : flows) {
      rate_sum += net.Rate(f);
      for (int l : paths[f]) load[l] += net.Rate(f);
    }
    for (int l = 0; l < 4; ++l) EXPECT_LE(load[l], (1 + l) * kGB * (1 + 1e-12));
    net.Advance();
    moved_integral += rate_sum * (net.now() - t0);
  }
  double total = 0;
  for (auto [f, bytes] : flows) {
    EXPECT_NEAR(net.Moved(f), bytes, 1e-6 * bytes);
    EXPECT_EQ(net.Remaining(f), 0);
    total += bytes;
  }
  EXPECT_NEAR(moved_integral, total, 1e-6 * total);
}

TEST(FlowNetwork, RefusesBadInput) {
  FlowNetwork net;
  EXPECT_FALSE(net.AddLink("x", 0).ok());
  EXPECT_FALSE(net.AddLink("x", std::nan("")).ok());
  int l = *net.AddLink("x", 1);
  EXPECT_FALSE(net.AddFlow({}, 1).ok());
  EXPECT_FALSE(net.AddFlow({l + 1}, 1).ok());
  EXPECT_FALSE(net.AddFlow({l}, -1).ok());
}

// AdaDUAL: a short task arriving behind a long one finishes both sooner
// together (it need not wait out the long transfer); a long task behind a
// nearly finished one does not, and waits.
TEST(AdaDual, ConcurrentWhenThatFinishesBothSooner) {
  const double b = 1.25 * kGB;  // 10 Gb/s
  DualChoice c = AdaDual(/*running remaining=*/4 * kGB, /*new=*/0.5 * kGB, b, 0.1);
  EXPECT_TRUE(c.concurrent);
  EXPECT_LT(c.concurrent_running + c.concurrent_new, c.serial_running + c.serial_new);
  EXPECT_LT(c.concurrent_new, c.serial_new);
}

TEST(AdaDual, SerialWhenOverlapFinishesBothLater) {
  const double b = 1.25 * kGB;
  DualChoice c = AdaDual(0.5 * kGB, 4 * kGB, b, 0.1);
  EXPECT_FALSE(c.concurrent);
  EXPECT_GT(c.concurrent_running + c.concurrent_new, c.serial_running + c.serial_new);
  // Equal sizes with contention overhead: overlapping only loses bandwidth.
  EXPECT_FALSE(AdaDual(1 * kGB, 1 * kGB, b, 0.1).concurrent);
  // Heavy contention overhead turns even a small newcomer away.
  EXPECT_FALSE(AdaDual(4 * kGB, 1 * kGB, b, 2.0).concurrent);
}

// The fabric of a racked cluster: a ring inside a rack crosses only node
// links; across racks it loads the oversubscribed uplinks, which then
// bottleneck it.
TEST(Fabric, RingsCrossUplinksOnlyBetweenRacks) {
  auto spec = ParseClusterYaml(R"(name: racked
pools:
  - {name: a, gpu: a100-80g, nodes: 4, gpus_per_node: 8, network_gbps: 100}
racks: {nodes_per_rack: 2, oversubscription: 4.0}
)", "racked.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto cluster = Cluster::Build(*spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  Fabric f = BuildFabric(*cluster);
  ASSERT_EQ(f.rack_up.size(), 2u);
  EXPECT_EQ(f.Path(0, 1).size(), 2u);  // node 0 up, node 1 down
  EXPECT_EQ(f.Path(0, 2).size(), 4u);  // + rack 0 up, rack 1 down
  EXPECT_TRUE(f.Path(3, 3).empty());
  // Two racks' worth of 12.5 GB/s NICs over a 4:1 uplink: 6.25 GB/s.
  std::vector<double> caps;
  for (int l = 0; l < 4 * 2 + 4; ++l) caps.push_back(l < 8 ? 12.5e9 : 6.25e9);
  auto inside = MaxMinRates(caps, f.Ring({0, 1}));
  for (double r : inside) EXPECT_DOUBLE_EQ(r, 12.5e9);
  auto across = MaxMinRates(caps, f.Ring({0, 1, 2, 3}));
  // Hops 1->2 and 3->0 cross the uplinks, alone on them: 6.25 GB/s each.
  EXPECT_DOUBLE_EQ(across[1], 6.25e9);
  EXPECT_DOUBLE_EQ(across[3], 6.25e9);
}

}  // namespace
// Progressive filling as first written (every unfrozen flow's rate and
// every link it crosses updated flow by flow, one bottleneck per round): the
// reference MaxMinRates must equal bit for bit, ties, empty links and
// repeated links included.
std::vector<double> ReferenceMaxMin(const std::vector<double>& caps, const std::vector<std::vector<int>>& paths) {
  const size_t nf = paths.size();
  std::vector<double> rate(nf, 0.0), residual = caps;
  std::vector<int> unfrozen_on(caps.size(), 0), touched;
  std::vector<char> frozen(nf, 0);
  size_t left = nf;
  for (size_t f = 0; f < nf; ++f) {
    if (paths[f].empty()) {
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = 1;
      --left;
      continue;
    }
    for (int l : paths[f])
      if (unfrozen_on[l]++ == 0) touched.push_back(l);
  }
  while (left > 0) {
    int bottleneck = -1;
    double share = std::numeric_limits<double>::infinity();
    for (int l : touched) {
      if (unfrozen_on[l] == 0) continue;
      double s = std::max(0.0, residual[l]) / unfrozen_on[l];
      if (s < share) {
        share = s;
        bottleneck = l;
      }
    }
    if (bottleneck < 0) break;
    for (size_t f = 0; f < nf; ++f) {
      if (frozen[f]) continue;
      rate[f] += share;
      for (int l : paths[f]) residual[l] -= share;
    }
    for (size_t f = 0; f < nf; ++f) {
      if (frozen[f] || std::find(paths[f].begin(), paths[f].end(), bottleneck) == paths[f].end()) continue;
      frozen[f] = 1;
      --left;
      for (int l : paths[f]) unfrozen_on[l]--;
    }
  }
  return rate;
}

TEST(FlowNetwork, FillingEqualsTheReferenceBitForBit) {
  std::mt19937 rng(7);
  int cases = 0;
  for (int round = 0; round < 400; ++round) {
    const int links = 2 + static_cast<int>(rng() % 12);
    std::vector<double> caps(links);
    // Few distinct capacities: equal shares and exact ties are common, as
    // on a fabric of identical NICs.
    for (double& c : caps) c = (1 + rng() % 3) * 1.25e9;
    std::vector<std::vector<int>> paths;
    const int flows = 1 + static_cast<int>(rng() % 16);
    for (int f = 0; f < flows; ++f) {
      std::vector<int> p;
      const int hops = static_cast<int>(rng() % 4);  // 0: a flow crossing nothing
      for (int h = 0; h < hops; ++h) p.push_back(static_cast<int>(rng() % links));
      paths.push_back(p);
    }
    std::vector<double> want = ReferenceMaxMin(caps, paths), got = MaxMinRates(caps, paths);
    ASSERT_EQ(got.size(), want.size());
    for (size_t f = 0; f < want.size(); ++f) EXPECT_EQ(got[f], want[f]) << "round " << round << " flow " << f;
    ++cases;
  }
  // Rings of equal flows over equal NICs, the network model's common case.
  Fabric fabric;
  for (int n = 0; n < 6; ++n) {
    fabric.node_up.push_back(*fabric.network.AddLink("up", 1.25e9));
    fabric.node_down.push_back(*fabric.network.AddLink("down", 1.25e9));
  }
  std::vector<double> caps(12, 1.25e9);
  std::vector<std::vector<int>> paths;
  for (auto ring : {std::vector<int>{0, 1, 2, 3}, std::vector<int>{2, 3, 4, 5}, std::vector<int>{0, 5}}) {
    auto r = fabric.Ring(ring);
    paths.insert(paths.end(), r.begin(), r.end());
  }
  std::vector<double> want = ReferenceMaxMin(caps, paths), got = MaxMinRates(caps, paths);
  for (size_t f = 0; f < want.size(); ++f) EXPECT_EQ(got[f], want[f]) << "ring flow " << f;
  EXPECT_EQ(cases, 400);
}

}  // namespace tessel
