#include "policy/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <random>
#include <tuple>

namespace tessel {
namespace {

// 2 racks of 3 nodes x 4 A100 each.
Cluster Racked() {
  const char* yaml = R"(name: racked
racks: {nodes_per_rack: 3, oversubscription: 2.0}
pools:
  - {name: a100, gpu: a100-80g, nodes: 6, gpus_per_node: 4, intra: nvswitch, network_gbps: 200}
)";
  return Cluster::Build(ParseClusterYaml(yaml, "racked.yaml").value()).value();
}

struct Fixture {
  Cluster cluster = Racked();
  std::vector<int> free;
  std::vector<uint8_t> up;
  Snapshot snap;
  Fixture() {
    free.assign(cluster.nodes().size(), 4);
    up.assign(cluster.nodes().size(), 1);
    snap.cluster = &cluster;
    snap.free_gpus = free;
    snap.node_up = up;
  }
};

TEST(FreeMapRacks, MultiNodeJobStaysInOneRack) {
  Fixture f;
  // Rack 0 (nodes 0-2) has 2 + 4 + 4 free; rack 1 (nodes 3-5) has 1 + 1 + 4.
  f.free = {2, 4, 4, 1, 1, 4};
  f.snap.free_gpus = f.free;
  FreeMap fm(f.snap);
  // 8 GPUs: fullest-first over the whole cluster would take nodes 1 and 2
  // (both in rack 0) -- fine; 9 GPUs need three nodes: rack 0 holds them
  // (4 + 4 + 2), rack 1 does not (6 free).
  auto a = fm.Place(0, 9);
  ASSERT_TRUE(a.has_value());
  for (const Placement& p : a->parts) EXPECT_EQ(f.cluster.nodes()[p.node].rack, 0) << a->ToString(f.cluster);
  EXPECT_EQ(a->gpus(), 9);
}

TEST(FreeMapRacks, PrefersTheRackNeedingFewestNodes) {
  Fixture f;
  // 6 GPUs: rack 0 needs 3 nodes (2 + 2 + 2), rack 1 needs 2 (4 + 2).
  f.free = {2, 2, 2, 4, 2, 0};
  f.snap.free_gpus = f.free;
  FreeMap fm(f.snap);
  auto a = fm.Place(0, 6);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->nodes(), 2) << a->ToString(f.cluster);
  for (const Placement& p : a->parts) EXPECT_EQ(f.cluster.nodes()[p.node].rack, 1) << a->ToString(f.cluster);
}

TEST(FreeMapRacks, SpansRacksOnlyWhenNoRackHoldsTheJob) {
  Fixture f;
  FreeMap fm(f.snap);
  auto a = fm.Place(0, 16);  // 12 GPUs per rack
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->nodes(), 4);
  EXPECT_EQ(a->gpus(), 16);
}

// --- placement rules ---------------------------------------------------------

// One rack of `nodes` x `gpus` A100s.
Cluster Flat(int nodes, int gpus) {
  std::string yaml = "name: flat\npools:\n  - {name: a100, gpu: a100-80g, nodes: " + std::to_string(nodes) +
                     ", gpus_per_node: " + std::to_string(gpus) + ", intra: nvswitch, network_gbps: 200}\n";
  return Cluster::Build(ParseClusterYaml(yaml, "flat.yaml").value()).value();
}

// A cluster, its free GPUs and running jobs' allocations, and a snapshot
// of them under a placement rule.
struct RuleFixture {
  Cluster cluster;
  std::vector<int> free;
  std::vector<uint8_t> up;
  std::deque<JobView> jobs;
  std::vector<const JobView*> ptrs;
  Snapshot snap;
  RuleFixture(Cluster c, PlacementRule rule) : cluster(std::move(c)) {
    for (const ClusterNode& n : cluster.nodes()) free.push_back(n.gpus);
    up.assign(cluster.nodes().size(), 1);
    snap.cluster = &cluster;
    snap.placement = rule;
    Refresh();
  }
  // A job running on `parts` (takes the GPUs).
  void Run(std::vector<Placement> parts) {
    JobView v;
    v.index = static_cast<int>(jobs.size());
    v.phase = JobPhase::kRunning;
    v.alloc.type = 0;
    v.alloc.parts = std::move(parts);
    for (const Placement& p : v.alloc.parts) free[p.node] -= p.gpus;
    jobs.push_back(v);
    Refresh();
  }
  void Refresh() {
    ptrs.clear();
    for (const JobView& j : jobs) ptrs.push_back(&j);
    snap.free_gpus = free;
    snap.node_up = up;
    snap.jobs = ptrs;
  }
};

PlacementRule Rule(std::string_view text) { return ParsePlacementRule(text).value(); }

// The fewest nodes whose free GPUs hold `gpus` (fullest first).
int FewestNodes(std::vector<int> free, int gpus) {
  std::sort(free.begin(), free.end(), std::greater<int>());
  int n = 0;
  for (int f : free) {
    if (gpus <= 0) break;
    gpus -= f;
    ++n;
  }
  return n;
}

// Interference avoidance: a spread job takes no node that another spread
// job uses (node 1, shared by the running spread job), though a job on one
// node may still go there; under first-fit, a spread over such a node is
// refused rather than moved. Released spread jobs free their nodes for it.
TEST(FreeMapAvoidance, SpreadJobsNeverShareANode) {
  RuleFixture f(Flat(4, 4), Rule("consolidate"));
  f.Run({{0, 4}, {1, 2}});  // a spread job: node 1 keeps 2 free GPUs
  f.Run({{2, 2}});          // jobs on one node: nodes 2 and 3 keep 2 and 3
  f.Run({{3, 1}});
  FreeMap fm(f.snap);
  fm.AvoidSpreadSharing(f.snap);
  auto spread = fm.Place(0, 5);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->ToString(f.cluster), "a100-80g x5 on n2:2,n3:3");
  EXPECT_TRUE(fm.SharesSpreadNode(Allocation{0, {{1, 1}, {2, 1}}}));
  EXPECT_FALSE(fm.SharesSpreadNode(Allocation{0, {{1, 1}}}));
  auto single = fm.Place(0, 2);  // one node: node 1 may hold it
  ASSERT_TRUE(single.has_value());
  EXPECT_EQ(single->ToString(f.cluster), "a100-80g x2 on n1:2");
  // Without avoidance the same spread takes node 1's two GPUs.
  FreeMap plain(f.snap);
  auto tight = plain.Place(0, 5);
  ASSERT_TRUE(tight.has_value());
  EXPECT_EQ(tight->ToString(f.cluster), "a100-80g x5 on n1:2,n3:3");

  RuleFixture g(Flat(4, 4), Rule("first-fit"));
  g.Run({{0, 2}, {1, 2}});
  FreeMap ff(g.snap);
  ff.AvoidSpreadSharing(g.snap);
  EXPECT_FALSE(ff.Place(0, 4).has_value()) << "first-fit would spread over nodes 0 and 1";
  ff.Release(g.jobs[0].alloc);
  auto after = ff.Place(0, 4);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->ToString(g.cluster), "a100-80g x4 on n0:4");
}

// Each type's GPUs on up nodes: the whole count when every node is up, less
// a failed node's GPUs when one is down.
TEST(UpGpusByType, CountsOnlyNodesThatAreUp) {
  RuleFixture f(Flat(4, 4), Rule("consolidate"));
  EXPECT_EQ(UpGpusByType(f.snap), std::vector<int>{16});
  f.up[2] = 0;
  f.free[2] = 0;
  f.Refresh();
  EXPECT_EQ(UpGpusByType(f.snap), std::vector<int>{12});
}

TEST(PlacementRule, ParsesTheThreeRulesAndNamesThemBack) {
  struct Case {
    const char* text;
    PlacementRule::Kind kind;
    int kappa;
    const char* name;
  };
  for (const Case& c : {Case{"consolidate", PlacementRule::Kind::kConsolidate, 2, "consolidate"},
                        Case{"first-fit", PlacementRule::Kind::kFirstFit, 2, "first-fit"},
                        Case{"lwf-kappa", PlacementRule::Kind::kLwfKappa, 2, "lwf-kappa:kappa=2"},
                        Case{"LWF-Kappa:kappa=3", PlacementRule::Kind::kLwfKappa, 3, "lwf-kappa:kappa=3"},
                        Case{"lwf-kappa:kappa=1", PlacementRule::Kind::kLwfKappa, 1, "lwf-kappa:kappa=1"}}) {
    auto r = ParsePlacementRule(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
    EXPECT_EQ(r->kind, c.kind) << c.text;
    EXPECT_EQ(r->kappa, c.kappa) << c.text;
    EXPECT_EQ(PlacementRuleName(*r), c.name);
    EXPECT_EQ(ParsePlacementRule(PlacementRuleName(*r)).value(), *r);
  }
  EXPECT_EQ(Snapshot{}.placement.kind, PlacementRule::Kind::kConsolidate);
}

TEST(PlacementRule, RejectsBadValuesSayingWhatIsAccepted) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c :
       {Case{"best-fit", "unknown placement 'best-fit'"},
        Case{"best-fit", "consolidate, first-fit, lwf-kappa or lwf-kappa:kappa=N"},
        Case{"", "unknown placement ''"},
        Case{"first-fit:kappa=2", "placement first-fit takes no options"},
        Case{"lwf-kappa:k=2", "placement lwf-kappa: unknown option 'k=2'; it takes kappa=N"},
        Case{"lwf-kappa:kappa", "unknown option 'kappa'"},
        Case{"lwf-kappa:kappa=0", "placement lwf-kappa: kappa must be an integer >= 1 (at most 1000000), got 0"},
        Case{"lwf-kappa:kappa=two", "placement lwf-kappa: kappa: expected an integer, got 'two'"}}) {
    auto r = ParsePlacementRule(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << c.text << ": " << r.status().message();
  }
}

TEST(PlacementConsolidate, IsTheDefaultAndBestFits) {
  RuleFixture f(Flat(4, 4), PlacementRule{});
  f.Run({{0, 1}});
  f.Run({{2, 2}});  // free: 3, 4, 2, 4
  FreeMap fm(f.snap);
  EXPECT_EQ(fm.rule().kind, PlacementRule::Kind::kConsolidate);
  EXPECT_EQ(fm.Place(0, 2)->parts, (std::vector<Placement>{{2, 2}}));          // tightest node
  EXPECT_EQ(fm.Place(0, 7)->parts, (std::vector<Placement>{{1, 4}, {3, 3}}));  // fullest first
}

// The consolidated rule as a plain scan of the type's nodes (what FreeMap's
// buckets must reproduce): the tightest single node (first in the type's
// order among equals), else the nodes most-free first (ties in the type's
// order) within the rack needing the fewest of them (then the tightest rack,
// then the lowest), filled in that order.
std::optional<Allocation> ScanConsolidated(const Cluster& c, const std::vector<int>& free, int type, int gpus,
                                           int max_nodes) {
  const std::vector<int>& nodes = c.types()[type].nodes;
  int best = -1;
  for (int id : nodes)
    if (free[id] >= gpus && (best < 0 || free[id] < free[best])) best = id;
  if (best >= 0) return Allocation{type, {{best, gpus}}};
  std::vector<int> order;
  for (int id : nodes)
    if (free[id] > 0) order.push_back(id);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return free[a] > free[b]; });
  int best_rack = -1, best_nodes = 0, best_free = 0;
  for (int r = 0; r < c.num_racks(); ++r) {
    int sum = 0, used = 0, total = 0;
    for (int id : order) {
      if (c.nodes()[id].rack != r) continue;
      if (sum < gpus) ++used, sum += free[id];
      total += free[id];
    }
    if (total < gpus) continue;
    if (best_rack < 0 || used < best_nodes || (used == best_nodes && total < best_free))
      best_rack = r, best_nodes = used, best_free = total;
  }
  if (c.num_racks() > 1 && best_rack >= 0)
    std::erase_if(order, [&](int id) { return c.nodes()[id].rack != best_rack; });
  Allocation a{type, {}};
  int left = gpus;
  for (int id : order) {
    int take = std::min(left, free[id]);
    if (take > 0) a.parts.push_back({id, take}), left -= take;
  }
  if (left > 0 || (max_nodes > 0 && a.nodes() > max_nodes)) return std::nullopt;
  std::sort(a.parts.begin(), a.parts.end(), [](const Placement& x, const Placement& y) { return x.node < y.node; });
  return a;
}

// Random free GPUs, placements and releases on racked nodes of mixed sizes
// (one GPU type on 2- and 8-GPU nodes, another on 4-GPU nodes): every
// placement equals the scan's.
TEST(PlacementConsolidate, BucketsPlaceAsTheScanOfEveryNode) {
  const char* yaml = R"(name: mixed
racks: {nodes_per_rack: 5, oversubscription: 2.0}
pools:
  - {name: small, gpu: a100-80g, nodes: 70, gpus_per_node: 2, intra: pcie, network_gbps: 100}
  - {name: big, gpu: a100-80g, nodes: 9, gpus_per_node: 8, intra: nvswitch, network_gbps: 100}
  - {name: v, gpu: v100-32g, nodes: 13, gpus_per_node: 4, intra: nvlink-mesh, network_gbps: 100}
)";
  Cluster c = Cluster::Build(ParseClusterYaml(yaml, "mixed.yaml").value()).value();
  ASSERT_EQ(c.types().size(), 2u);
  std::mt19937 rng(7);
  int placed = 0, multi = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> free(c.nodes().size());
    for (const ClusterNode& n : c.nodes()) free[n.id] = std::uniform_int_distribution<int>(0, n.gpus)(rng);
    Snapshot snap;
    snap.cluster = &c;
    snap.free_gpus = free;
    FreeMap fm(snap);
    std::vector<Allocation> held;
    for (int op = 0; op < 30; ++op) {
      if (!held.empty() && rng() % 3 == 0) {
        size_t k = rng() % held.size();
        fm.Release(held[k]);
        for (const Placement& p : held[k].parts) free[p.node] += p.gpus;
        held.erase(held.begin() + static_cast<long>(k));
        continue;
      }
      int type = static_cast<int>(rng() % 2);
      int gpus = std::uniform_int_distribution<int>(1, rng() % 4 == 0 ? 40 : 8)(rng);
      int max_nodes = rng() % 5 == 0 ? 3 : 0;
      std::optional<Allocation> want =
          fm.free_of_type(type) >= gpus ? ScanConsolidated(c, free, type, gpus, max_nodes) : std::nullopt;
      std::optional<Allocation> got = fm.Place(type, gpus, max_nodes);
      ASSERT_EQ(got.has_value(), want.has_value()) << "trial " << trial << " op " << op;
      if (!got) continue;
      ASSERT_EQ(*got, *want) << got->ToString(c) << " vs " << want->ToString(c);
      for (const Placement& p : got->parts) free[p.node] -= p.gpus;
      for (const ClusterNode& n : c.nodes()) ASSERT_EQ(fm.free_on(n.id), free[n.id]);
      held.push_back(*got);
      ++placed;
      multi += got->nodes() > 1;
    }
  }
  EXPECT_GT(placed, 1000);
  EXPECT_GT(multi, 200);
}

TEST(PlacementFirstFit, TakesNodesInIdOrder) {
  Fixture rack;  // racks do not matter to first-fit
  rack.free = {1, 0, 3, 4, 2, 4};
  rack.snap.free_gpus = rack.free;
  rack.snap.placement = Rule("first-fit");
  FreeMap fm(rack.snap);
  auto a = fm.Place(0, 6);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->parts, (std::vector<Placement>{{0, 1}, {2, 3}, {3, 2}})) << a->ToString(rack.cluster);
  // What is left: 0, 0, 0, 2, 2, 4. A 1-GPU job takes the first node with a
  // free GPU, not the tightest or the emptiest.
  EXPECT_EQ(fm.Place(0, 1)->parts, (std::vector<Placement>{{3, 1}}));
  // The same free GPUs under consolidate: the two fullest nodes (3 and 5).
  rack.snap.placement = PlacementRule{};
  FreeMap consolidated(rack.snap);
  EXPECT_EQ(consolidated.Place(0, 6)->parts, (std::vector<Placement>{{3, 4}, {5, 2}}));
}

TEST(PlacementFirstFit, FallsBackToConsolidateWhenMaxNodesIsExceeded) {
  Fixture rack;
  rack.free = {1, 0, 3, 4, 2, 4};
  rack.snap.free_gpus = rack.free;
  rack.snap.placement = Rule("first-fit");
  FreeMap fm(rack.snap);
  // First-fit would take nodes 0 and 2; one node is allowed: best fit.
  EXPECT_EQ(fm.Place(0, 4, 1)->parts, (std::vector<Placement>{{3, 4}}));
  // Within two nodes first-fit's own choice stands.
  EXPECT_EQ(fm.Place(0, 4, 2)->parts, (std::vector<Placement>{{0, 1}, {2, 3}}));
  // Nothing holds 5 GPUs on one node now (free: 0, 0, 0, 0, 2, 4).
  EXPECT_FALSE(fm.Place(0, 5, 1).has_value());
}

TEST(PlacementLwfKappa, PrefersTheNodeWithoutMultiNodeTraffic) {
  RuleFixture f(Flat(4, 4), Rule("lwf-kappa"));
  f.Run({{0, 2}, {1, 2}});  // a multi-node job: its traffic crosses n0's and n1's NICs
  f.Run({{2, 2}});          // as busy, on one node
  f.Run({{3, 4}});
  FreeMap fm(f.snap);
  EXPECT_DOUBLE_EQ(fm.Load(0), 1.5);
  EXPECT_DOUBLE_EQ(fm.Load(2), 0.5);
  EXPECT_EQ(fm.Place(0, 2)->parts, (std::vector<Placement>{{2, 2}}));
  // Consolidate takes the lowest id among equally tight nodes.
  f.snap.placement = PlacementRule{};
  FreeMap consolidated(f.snap);
  EXPECT_EQ(consolidated.Place(0, 2)->parts, (std::vector<Placement>{{0, 2}}));
}

TEST(PlacementLwfKappa, PrefersAnIdleNodeToATighterBusyOne) {
  RuleFixture f(Flat(4, 4), Rule("lwf-kappa"));
  f.Run({{0, 1}, {1, 1}});  // free: 3, 3, 4, 4
  FreeMap fm(f.snap);
  EXPECT_EQ(fm.Place(0, 1)->parts, (std::vector<Placement>{{2, 1}}));
  // Best fit would use a node the multi-node job already loads.
  f.snap.placement = PlacementRule{};
  FreeMap consolidated(f.snap);
  EXPECT_EQ(consolidated.Place(0, 1)->parts, (std::vector<Placement>{{0, 1}}));
}

TEST(PlacementLwfKappa, KeepsLoadCurrentInPlaceTakeAndRelease) {
  RuleFixture f(Flat(4, 4), Rule("lwf-kappa:kappa=2"));
  FreeMap fm(f.snap);
  auto a = fm.Place(0, 6);  // two nodes: 4 + 2
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->nodes(), 2);
  for (const Placement& p : a->parts) EXPECT_DOUBLE_EQ(fm.Load(p.node), 1.0 + p.gpus / 4.0) << p.node;
  fm.Release(*a);
  for (int n = 0; n < 4; ++n) EXPECT_DOUBLE_EQ(fm.Load(n), 0.0);
  fm.Take(*a);
  EXPECT_DOUBLE_EQ(fm.Load(a->parts[0].node), 1.0 + a->parts[0].gpus / 4.0);
  // The next job avoids both nodes while idle ones have room.
  auto b = fm.Place(0, 2);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->nodes(), 1);
  EXPECT_EQ(fm.Load(b->parts[0].node), 0.5);
}

TEST(PlacementLwfKappa, SpreadsLeastLoadedFirstWithinKappa) {
  // Loads: n0 1.25 (multi-node), n1 1.25, n2 0.75, n3 0.5; a 3-GPU job fits
  // on n0 or n1 alone but the least-loaded GPUs are on n3 and n2.
  RuleFixture f(Flat(4, 4), Rule("lwf-kappa:kappa=2"));
  f.Run({{0, 1}, {1, 1}});
  f.Run({{2, 3}});
  f.Run({{3, 2}});  // free: 3, 3, 1, 2
  FreeMap fm(f.snap);
  EXPECT_EQ(fm.Place(0, 3)->parts, (std::vector<Placement>{{2, 1}, {3, 2}}));
  // kappa=1: the least-loaded node that holds it alone.
  f.snap.placement = Rule("lwf-kappa:kappa=1");
  FreeMap one(f.snap);
  EXPECT_EQ(one.Place(0, 3)->parts, (std::vector<Placement>{{0, 3}}));
}

// LWF-κ never spreads a job over more than κ nodes when κ nodes can hold
// it, and otherwise uses the fewest nodes that can; checked over seeded
// random free-GPU patterns, multi-node jobs (loads) and max_nodes bounds.
class LwfKappaSpread : public ::testing::TestWithParam<int> {};

TEST_P(LwfKappaSpread, NeverSpreadsPastKappaWhenKappaNodesHoldTheJob) {
  const int kappa = GetParam();
  const int kNodes = 8, kGpus = 8;
  std::mt19937 rng(20240601u + kappa);  // raw draws: portable across standard libraries
  auto draw = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  PlacementRule rule{PlacementRule::Kind::kLwfKappa, kappa};
  int placed = 0, spread = 0, held_back = 0, beyond_kappa = 0;  // what the patterns covered
  for (int trial = 0; trial < 400; ++trial) {
    RuleFixture f(Flat(kNodes, kGpus), rule);
    // Multi-node jobs first (they set the loads), then single-node ones.
    for (int j = draw(4); j > 0; --j) {
      int a = draw(kNodes), b = draw(kNodes);
      if (a == b || f.free[a] < 1 || f.free[b] < 1) continue;
      int ga = 1 + draw(f.free[a]), gb = 1 + draw(f.free[b]);
      f.Run(a < b ? std::vector<Placement>{{a, ga}, {b, gb}} : std::vector<Placement>{{b, gb}, {a, ga}});
    }
    for (int n = 0; n < kNodes; ++n) {
      if (f.free[n] > 0 && draw(2) == 0) f.Run({{n, 1 + draw(f.free[n])}});
    }
    int total = 0;
    for (int v : f.free) total += v;
    if (total == 0) continue;
    FreeMap fm(f.snap);
    const std::vector<int> before = f.free;
    for (int k = 0; k < 3 && fm.free_of_type(0) > 0; ++k) {
      const int gpus = 1 + draw(fm.free_of_type(0));
      const int max_nodes = draw(3) == 0 ? 1 + draw(kNodes) : 0;
      std::vector<int> now(kNodes);
      for (int n = 0; n < kNodes; ++n) now[n] = fm.free_on(n);
      const int fewest = FewestNodes(now, gpus);
      // Nodes a least-loaded-first spread would use.
      std::vector<int> by_load;
      for (int n = 0; n < kNodes; ++n)
        if (now[n] > 0) by_load.push_back(n);
      std::sort(by_load.begin(), by_load.end(), [&](int x, int y) {
        return std::make_tuple(fm.Load(x), -now[x], x) < std::make_tuple(fm.Load(y), -now[y], y);
      });
      int greedy = 0;
      for (int left = gpus; left > 0; left -= now[by_load[greedy++]]) {
      }
      auto a = fm.Place(0, gpus, max_nodes);
      std::string where = "trial " + std::to_string(trial) + " job " + std::to_string(k) + ": " +
                          std::to_string(gpus) + " GPUs, max_nodes " + std::to_string(max_nodes) +
                          ", fewest nodes " + std::to_string(fewest);
      if (max_nodes > 0 && fewest > max_nodes) {
        EXPECT_FALSE(a.has_value()) << where;
        continue;
      }
      ASSERT_TRUE(a.has_value()) << where;
      ++placed;
      spread += a->nodes() > fewest;
      held_back += fewest <= kappa && greedy > kappa && max_nodes == 0;
      beyond_kappa += fewest > kappa;
      EXPECT_EQ(a->gpus(), gpus) << where;
      if (fewest <= kappa) {
        EXPECT_LE(a->nodes(), kappa) << where << ": " << a->ToString(f.cluster);
      } else {
        EXPECT_EQ(a->nodes(), fewest) << where << ": " << a->ToString(f.cluster);
      }
      if (max_nodes > 0) {
        EXPECT_LE(a->nodes(), max_nodes) << where;
      }
      for (size_t i = 0; i < a->parts.size(); ++i) {
        EXPECT_GT(a->parts[i].gpus, 0) << where;
        EXPECT_LE(a->parts[i].gpus, now[a->parts[i].node]) << where;
        if (i > 0) {
          EXPECT_LT(a->parts[i - 1].node, a->parts[i].node) << where;
        }
      }
    }
    EXPECT_EQ(f.free, before);  // the snapshot is never touched
  }
  EXPECT_GT(placed, 400);
  // Both branches ran: jobs spread least-loaded-first past the fewest
  // nodes (within κ); jobs whose least-loaded spread would pass κ although
  // κ nodes hold them, and jobs needing more than κ nodes, took the fewest.
  const std::string covered = std::to_string(placed) + " placed, " + std::to_string(spread) + " spread, " +
                              std::to_string(held_back) + " held back to the fewest, " +
                              std::to_string(beyond_kappa) + " beyond kappa";
  RecordProperty("covered", covered);
  if (kappa >= 2) {
    EXPECT_GE(spread, 10) << covered;
  }
  if (kappa <= 3) {
    EXPECT_GE(held_back, 10) << covered;
    EXPECT_GE(beyond_kappa, 10) << covered;
  }
}

INSTANTIATE_TEST_SUITE_P(Kappas, LwfKappaSpread, ::testing::Values(1, 2, 3, 4, 6),
                         [](const auto& info) { return "kappa" + std::to_string(info.param); });

TEST(PlacementLwfKappa, IsDeterministic) {
  RuleFixture f(Flat(6, 4), Rule("lwf-kappa:kappa=3"));
  f.Run({{1, 2}, {4, 1}});
  f.Run({{2, 3}});
  std::vector<std::optional<Allocation>> runs[2];
  for (auto& out : runs) {
    FreeMap fm(f.snap);
    for (int gpus : {3, 5, 1, 4, 2}) out.push_back(fm.Place(0, gpus));
  }
  EXPECT_EQ(runs[0], runs[1]);
}

}  // namespace
}  // namespace tessel
