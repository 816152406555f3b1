#include "policy/goodput_alloc.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using testing::MakeJob;
using testing::PolicyFixture;
using testing::Assigned;
using testing::After;
using testing::ExpectNoDoubleBooking;

// ---------------------------------------------------------------------------
// AllocateByMarginalUtility against exhaustive search.

// splitmix64: a portable, seeded stream (std::*_distribution is not
// portable across standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * (static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0));
  }
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1)); }

 private:
  uint64_t state_;
};

// A strictly concave, strictly increasing function of g >= 0 with f(0) = 0,
// chosen at random among a few families.
std::function<double(double)> RandomConcave(Rng& rng) {
  const double a = rng.Uniform(0.5, 10.0);
  const double b = rng.Uniform(0.1, 2.0);
  switch (rng.Int(0, 3)) {
    case 0: return [a, b](double g) { return a * std::log1p(b * g); };
    case 1: return [a, b](double g) { return a * (1.0 - std::exp(-b * g)); };
    case 2: {
      const double e = rng.Uniform(0.2, 0.9);
      return [a, e](double g) { return a * std::pow(g, e); };
    }
    default: {
      // Pollux-like: a negative power of a saturating speedup.
      return [a, b](double g) { return -a / (1e-3 + b * g / (1.0 + 0.3 * g)) + a / 1e-3; };
    }
  }
}

// A non-decreasing but not concave function: convex, sigmoidal or random
// increments.
std::function<double(double)> RandomNonConcave(Rng& rng) {
  const double a = rng.Uniform(0.5, 10.0);
  switch (rng.Int(0, 2)) {
    case 0: {
      const double e = rng.Uniform(1.1, 2.5);
      return [a, e](double g) { return a * std::pow(g, e); };
    }
    case 1: {
      const double mid = rng.Uniform(1.0, 6.0), k = rng.Uniform(0.5, 3.0);
      return [a, mid, k](double g) {
        return a * (1.0 / (1.0 + std::exp(-k * (g - mid))) - 1.0 / (1.0 + std::exp(k * mid)));
      };
    }
    default: {
      double s = 0;
      std::vector<double> prefix(65, 0.0);
      for (int g = 1; g <= 64; ++g) {
        s += rng.Uniform(0.0, a);
        prefix[g] = s;
      }
      return [prefix](double g) { return prefix[static_cast<int>(g)]; };
    }
  }
}

struct Instance {
  std::vector<int> capacity;
  std::vector<JobView> views;  // only index is set
  std::vector<JobCurves> jobs;  // job pointers into views
};

// `njobs` jobs; each has a curve on `types_per_job` of the instance's types
// (all when it equals capacity.size()), counts 0..cap (cap <= the type's
// capacity), or a random subset of them when `skip` is set.
Instance MakeInstance(Rng& rng, int njobs, std::vector<int> capacity, bool concave, bool skip) {
  Instance in;
  in.capacity = std::move(capacity);
  in.views.resize(njobs);
  for (int j = 0; j < njobs; ++j) in.views[j].index = j;
  for (int j = 0; j < njobs; ++j) {
    JobCurves jc;
    jc.job = &in.views[j];
    const double base = rng.Uniform(-5.0, 5.0);  // utility of no GPUs
    for (int t = 0; t < static_cast<int>(in.capacity.size()); ++t) {
      auto f = concave ? RandomConcave(rng) : RandomNonConcave(rng);
      TypeCurve tc;
      tc.type = t;
      tc.points.push_back({0, base});
      const int cap = rng.Int(1, in.capacity[t]);
      for (int g = 1; g <= cap; ++g) {
        if (skip && g > 1 && rng.Int(0, 2) == 0) continue;
        tc.points.push_back({g, base + f(g)});
      }
      jc.types.push_back(std::move(tc));
    }
    in.jobs.push_back(std::move(jc));
  }
  return in;
}

double UtilityAt(const JobCurves& jc, int type, int gpus) {
  for (const TypeCurve& tc : jc.types) {
    if (tc.type != type) continue;
    for (const CurvePoint& p : tc.points)
      if (p.gpus == gpus) return p.utility;
  }
  ADD_FAILURE() << "no point for " << gpus << " GPUs of type " << type;
  return 0;
}

// The best total utility over every choice of (type, point) per job within
// the capacities; jobs with nothing count their points[0] utility.
double Exhaustive(const Instance& in) {
  double best = -1e300;
  std::vector<int> free = in.capacity;
  std::function<void(size_t, double)> rec = [&](size_t j, double sum) {
    if (j == in.jobs.size()) {
      best = std::max(best, sum);
      return;
    }
    const JobCurves& jc = in.jobs[j];
    rec(j + 1, sum + jc.types.front().points.front().utility);
    for (const TypeCurve& tc : jc.types) {
      for (size_t k = 1; k < tc.points.size(); ++k) {
        if (tc.points[k].gpus > free[tc.type]) break;
        free[tc.type] -= tc.points[k].gpus;
        rec(j + 1, sum + tc.points[k].utility);
        free[tc.type] += tc.points[k].gpus;
      }
    }
  };
  rec(0, 0.0);
  return best;
}

// Checks the grants' invariants and returns their total utility (jobs with
// no grant count their points[0] utility).
double CheckGrants(const Instance& in, const std::vector<GoodputGrant>& grants) {
  std::vector<int> used(in.capacity.size(), 0);
  std::vector<int> seen(in.jobs.size(), 0);
  std::vector<double> utility(in.jobs.size());
  for (size_t j = 0; j < in.jobs.size(); ++j) utility[j] = in.jobs[j].types.front().points.front().utility;
  for (const GoodputGrant& g : grants) {
    EXPECT_NE(g.job, nullptr);
    if (g.job == nullptr) continue;
    const int j = g.job->index;
    EXPECT_EQ(++seen[j], 1) << "job " << j << " granted twice";
    EXPECT_GT(g.gpus, 0) << "job " << j << ": jobs without GPUs are omitted";
    EXPECT_GE(g.type, 0);
    EXPECT_LT(g.type, static_cast<int>(in.capacity.size()));
    used[g.type] += g.gpus;
    utility[j] = UtilityAt(in.jobs[j], g.type, g.gpus);
  }
  for (size_t t = 0; t < in.capacity.size(); ++t) EXPECT_LE(used[t], in.capacity[t]) << "type " << t;
  double sum = 0;
  for (double u : utility) sum += u;
  return sum;
}

bool SameGrants(const std::vector<GoodputGrant>& a, const std::vector<GoodputGrant>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].job != b[i].job || a[i].type != b[i].type || a[i].gpus != b[i].gpus) return false;
  }
  return true;
}

// One type, capacity 8, 2-5 jobs on strictly concave curves: the greedy is
// exact (the total equals the exhaustive optimum up to rounding of the sum).
TEST(GoodputAllocTest, ConcaveSingleTypeMatchesExhaustive) {
  Rng rng(20231);
  for (int trial = 0; trial < 300; ++trial) {
    const int njobs = rng.Int(2, 5);
    Instance in = MakeInstance(rng, njobs, {8}, /*concave=*/true, /*skip=*/false);
    std::vector<GoodputGrant> grants = AllocateByMarginalUtility(in.jobs, in.capacity);
    const double got = CheckGrants(in, grants);
    const double best = Exhaustive(in);
    ASSERT_NEAR(got, best, 1e-9 * std::max(1.0, std::abs(best))) << "trial " << trial << " jobs " << njobs;
    // Deterministic: the same input gives the same grants.
    ASSERT_TRUE(SameGrants(grants, AllocateByMarginalUtility(in.jobs, in.capacity))) << "trial " << trial;
  }
}

// Concave curves whose total demand is below capacity: every job takes its
// whole curve (the utilities only grow).
TEST(GoodputAllocTest, ConcaveUnderfullGivesEveryJobItsLargestCount) {
  Rng rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    Instance in = MakeInstance(rng, 3, {8}, /*concave=*/true, /*skip=*/false);
    std::vector<int> capacity = {0};
    for (const JobCurves& jc : in.jobs) capacity[0] += jc.types[0].points.back().gpus;
    std::vector<GoodputGrant> grants = AllocateByMarginalUtility(in.jobs, capacity);
    ASSERT_EQ(grants.size(), 3u);
    for (const GoodputGrant& g : grants) EXPECT_EQ(g.gpus, in.jobs[g.job->index].types[0].points.back().gpus);
  }
}

// Ties go to the lower job: two identical jobs, three GPUs.
TEST(GoodputAllocTest, TiesBreakOnJobOrder) {
  std::vector<JobView> views(2);
  views[0].index = 0;
  views[1].index = 1;
  auto curve = [](int type) {
    TypeCurve tc;
    tc.type = type;
    tc.points = {{0, 0.0}, {1, 4.0}, {2, 6.0}, {3, 7.0}};
    return tc;
  };
  std::vector<JobCurves> jobs = {{&views[0], {curve(0)}}, {&views[1], {curve(0)}}};
  std::vector<GoodputGrant> grants = AllocateByMarginalUtility(jobs, {3});
  ASSERT_EQ(grants.size(), 2u);
  EXPECT_EQ(grants[0].job, &views[0]);
  EXPECT_EQ(grants[0].gpus, 2);
  EXPECT_EQ(grants[1].job, &views[1]);
  EXPECT_EQ(grants[1].gpus, 1);
}

// Every job gets one type; capacities per type hold; when one type has room
// for everyone and the other is full, jobs spill to the other.
TEST(GoodputAllocTest, EachJobOnOneTypeAndCapacityPerType) {
  Rng rng(99);
  for (int trial = 0; trial < 200; ++trial) {
    const int njobs = rng.Int(2, 5);
    Instance in = MakeInstance(rng, njobs, {rng.Int(1, 8), rng.Int(1, 8)}, trial % 2 == 0, trial % 3 == 0);
    std::vector<GoodputGrant> grants = AllocateByMarginalUtility(in.jobs, in.capacity);
    CheckGrants(in, grants);  // one grant per job, capacity per type
    ASSERT_TRUE(SameGrants(grants, AllocateByMarginalUtility(in.jobs, in.capacity)));
    // A grant is a count the job's curve on that type has.
    for (const GoodputGrant& g : grants) {
      bool found = false;
      for (const TypeCurve& tc : in.jobs[g.job->index].types) {
        if (tc.type != g.type) continue;
        for (const CurvePoint& p : tc.points) found = found || p.gpus == g.gpus;
      }
      EXPECT_TRUE(found) << "job " << g.job->index << " got " << g.gpus << " GPUs of type " << g.type
                         << ", not a point of its curve";
    }
  }
}

// Curves that decrease beyond some count: a job stops where its utility
// peaks even with GPUs left over, and a job whose curve never rises gets
// nothing.
TEST(GoodputAllocTest, StopsWhereUtilityPeaksAndOmitsJobsThatNeverGain) {
  std::vector<JobView> views(2);
  views[0].index = 0;
  views[1].index = 1;
  TypeCurve peak{0, {{0, 0.0}, {1, 3.0}, {2, 5.0}, {3, 4.0}, {4, 2.0}}};
  TypeCurve flat{0, {{0, 1.0}, {1, 1.0}, {2, 0.5}}};
  std::vector<GoodputGrant> grants = AllocateByMarginalUtility({{&views[0], {peak}}, {&views[1], {flat}}}, {16});
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].job, &views[0]);
  EXPECT_EQ(grants[0].gpus, 2);
}

// Greedy vs exhaustive where the greedy is a heuristic: non-concave curves
// (convex, sigmoidal, random increments; some counts skipped), and curves
// over two types (a job keeps the type of its first step). Capacity always
// holds and the greedy never beats the optimum; its shortfall is bounded by
// what was measured on these seeded instances (ratio of utility above the
// no-GPU utility, greedy / optimum; 300 instances each, 2-4 jobs):
//   non-concave, one type (capacity 8):         worst 0.832, mean 0.996, 276 exact
//   non-concave, two types (capacity 2-8 each): worst 0.452, mean 0.975, 239 exact
//   concave, two types (capacity 2-8 each):     worst 0.689, mean 0.989, 230 exact
// The bounds asserted are those, rounded down (the instances are seeded
// and generated without std:: distributions, so they are reproducible).
struct GapStats {
  int n = 0, exact = 0;
  double worst = 1.0, sum = 0;
};

GapStats MeasureGap(uint64_t seed, int trials, bool concave, bool two_types) {
  Rng rng(seed);
  GapStats s;
  for (int trial = 0; trial < trials; ++trial) {
    const int njobs = rng.Int(2, 4);
    std::vector<int> capacity = two_types ? std::vector<int>{rng.Int(2, 8), rng.Int(2, 8)} : std::vector<int>{8};
    Instance in = MakeInstance(rng, njobs, capacity, concave, /*skip=*/!concave && trial % 3 == 0);
    std::vector<GoodputGrant> grants = AllocateByMarginalUtility(in.jobs, in.capacity);
    double got = CheckGrants(in, grants);
    double best = Exhaustive(in);
    EXPECT_LE(got, best + 1e-9 * std::max(1.0, std::abs(best))) << "trial " << trial;
    double floor = 0;  // the utility of giving nothing to anyone
    for (const JobCurves& jc : in.jobs) floor += jc.types.front().points.front().utility;
    if (best - floor <= 1e-12) continue;
    double ratio = (got - floor) / (best - floor);
    s.worst = std::min(s.worst, ratio);
    s.sum += ratio;
    ++s.n;
    if (ratio > 1 - 1e-9) ++s.exact;
  }
  std::printf("[ measured ] %s, %s: %d instances, %d exact, worst ratio %.4f, mean %.4f\n",
              concave ? "concave" : "non-concave", two_types ? "two types" : "one type", s.n, s.exact, s.worst,
              s.n ? s.sum / s.n : 0.0);
  return s;
}

TEST(GoodputAllocTest, NonConcaveOneTypeStaysNearExhaustive) {
  GapStats s = MeasureGap(4242, 300, /*concave=*/false, /*two_types=*/false);
  ASSERT_GT(s.n, 250);
  EXPECT_GE(s.worst, 0.8);
  EXPECT_GE(s.sum / s.n, 0.98);
}

TEST(GoodputAllocTest, NonConcaveTwoTypesStaysNearExhaustive) {
  GapStats s = MeasureGap(4243, 300, /*concave=*/false, /*two_types=*/true);
  ASSERT_GT(s.n, 250);
  EXPECT_GE(s.worst, 0.4);
  EXPECT_GE(s.sum / s.n, 0.95);
}

TEST(GoodputAllocTest, ConcaveTwoTypesStaysNearExhaustive) {
  GapStats s = MeasureGap(4244, 300, /*concave=*/true, /*two_types=*/true);
  ASSERT_GT(s.n, 250);
  EXPECT_GE(s.worst, 0.65);
  EXPECT_GE(s.sum / s.n, 0.97);
}

// The greedy is not exact on non-concave curves: the textbook knapsack
// counter-example (a 1-GPU job with a slightly better ratio blocks an
// all-or-nothing 8-GPU job). Documents the heuristic's limit.
TEST(GoodputAllocTest, NonConcaveKnownGap) {
  std::vector<JobView> views(2);
  views[0].index = 0;
  views[1].index = 1;
  TypeCurve small{0, {{0, 0.0}, {1, 1.0}}};
  TypeCurve big{0, {{0, 0.0}, {8, 7.9}}};
  std::vector<GoodputGrant> grants = AllocateByMarginalUtility({{&views[0], {small}}, {&views[1], {big}}}, {8});
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].job, &views[0]);  // 1.0 where 7.9 was possible
}

// The greedy fixes a job's type by its first step: type 0's 8 GPUs are
// worth more per GPU, so it climbs type 0 to 32 (10.0) where type 1's 32
// are worth 12.0. The single-move pass takes the better grid when the
// GPUs are free, and only then.
TEST(GoodputAllocTest, SingleMovesTakeTheBestGridTheFirstStepMissed) {
  std::vector<JobView> views(1);
  views[0].index = 0;
  TypeCurve t0{0, {{0, 0.0}, {8, 8.0}, {32, 10.0}}};
  TypeCurve t1{1, {{0, 0.0}, {8, 6.0}, {32, 12.0}}};
  std::vector<JobCurves> jobs = {{&views[0], {t0, t1}}};
  std::vector<GoodputGrant> grants = AllocateByMarginalUtility(jobs, {32, 32});
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].type, 0);  // the greedy's blind spot
  EXPECT_EQ(grants[0].gpus, 32);
  EXPECT_EQ(ImproveBySingleMoves(jobs, {32, 32}, grants), 1);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].type, 1);
  EXPECT_EQ(grants[0].gpus, 32);
  EXPECT_EQ(ImproveBySingleMoves(jobs, {32, 32}, grants), 0);  // a fixed point
  // Type 1 holds only 16: nothing better fits, the grant stands.
  std::vector<GoodputGrant> short_of_room = AllocateByMarginalUtility(jobs, {32, 16});
  EXPECT_EQ(ImproveBySingleMoves(jobs, {32, 16}, short_of_room), 0);
  EXPECT_EQ(short_of_room[0].type, 0);
  EXPECT_EQ(short_of_room[0].gpus, 32);
}

// On random instances the pass never breaks capacity, never lowers the
// total, and never beats the exhaustive optimum.
TEST(GoodputAllocTest, SingleMovesOnlyRaiseTheTotal) {
  Rng rng(977);
  int improved = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> capacity = {rng.Int(2, 8), rng.Int(2, 8)};
    Instance in = MakeInstance(rng, rng.Int(2, 4), capacity, /*concave=*/trial % 2 == 0, /*skip=*/trial % 3 == 0);
    std::vector<GoodputGrant> grants = AllocateByMarginalUtility(in.jobs, in.capacity);
    const double before = CheckGrants(in, grants);
    ImproveBySingleMoves(in.jobs, in.capacity, grants);
    const double after = CheckGrants(in, grants);
    ASSERT_GE(after, before - 1e-12) << "trial " << trial;
    ASSERT_LE(after, Exhaustive(in) + 1e-9 * std::max(1.0, std::abs(after))) << "trial " << trial;
    if (after > before + 1e-12) ++improved;
  }
  EXPECT_GT(improved, 0);  // the pass does something on these instances
}

// ---------------------------------------------------------------------------
// PlaceGrants.

// Type 0: two nodes of 4 T4s; type 1: one node of 8 A100s.
std::string SmallCluster() {
  std::string path = ::tessel::testing::ProcessTempDir() + "/goodput_alloc_small.yaml";
  std::ofstream(path) << R"(name: goodput-alloc-small
pools:
  - {name: t4, gpu: t4, nodes: 2, gpus_per_node: 4}
  - {name: a100, gpu: a100-40g, nodes: 1, gpus_per_node: 8}
)";
  return path;
}

TEST(GoodputAllocTest, PlaceGrantsKeepsUnchangedAllocationsExactly) {
  PolicyFixture f(SmallCluster());
  const int t4 = f.Type("t4");
  JobView& a = f.AddJob(MakeJob("a").Elastic(1, 8));
  JobView& b = f.AddJob(MakeJob("b").Elastic(1, 8));
  JobView& c = f.AddJob(MakeJob("c").Elastic(1, 8));
  // a is spread 2 + 2 over both T4 nodes (not how FreeMap would place it).
  Allocation spread{t4, {{0, 2}, {1, 2}}};
  f.Run(a, spread);
  f.Run(b, Allocation{t4, {{0, 1}}});
  Snapshot snap = f.Snap(Seconds(100));
  std::vector<GoodputGrant> grants = {{&a, t4, 4}, {&b, t4, 2}, {&c, t4, 2}};
  Decision d = PlaceGrants(snap, grants);
  EXPECT_EQ(Assigned(d, a.index), nullptr) << "a keeps its GPUs: not named";
  std::vector<Allocation> after = After(snap, d);
  EXPECT_EQ(after[a.index], spread);
  EXPECT_EQ(after[b.index].gpus(), 2);
  EXPECT_EQ(after[c.index].gpus(), 2);
  ExpectNoDoubleBooking(snap, after);
  EXPECT_TRUE(d.reject.empty());
}

TEST(GoodputAllocTest, PlaceGrantsSuspendsJobsWithoutGrant) {
  PolicyFixture f(SmallCluster());
  const int t4 = f.Type("t4"), a100 = f.Type("a100-40g");
  JobView& a = f.AddJob(MakeJob("a").Elastic(1, 8));
  JobView& b = f.AddJob(MakeJob("b").Elastic(1, 8));
  f.Run(a, f.Place(t4, 4));
  f.Run(b, f.Place(a100, 2));
  Snapshot snap = f.Snap(Seconds(100));
  Decision d = PlaceGrants(snap, {{&b, a100, 8}});
  const Allocation* aa = Assigned(d, a.index);
  ASSERT_NE(aa, nullptr);
  EXPECT_TRUE(aa->empty());
  const Allocation* bb = Assigned(d, b.index);
  ASSERT_NE(bb, nullptr);
  EXPECT_EQ(bb->type, a100);
  EXPECT_EQ(bb->gpus(), 8);
}

// Grants that exceed what is free: the largest is placed first; the next
// shrinks down to its min_gpus, else it is dropped; a rigid job is never
// shrunk.
TEST(GoodputAllocTest, PlaceGrantsShrinksToMinGpusOrDrops) {
  struct Case {
    const char* name;
    int b_min, b_max;
    int expect_b;  // GPUs b ends with (0 = dropped)
  };
  for (const Case& k : {Case{"elastic shrinks to what is left", 1, 8, 2},
                        Case{"elastic not below min_gpus", 3, 8, 0},
                        Case{"min_gpus exactly what is left", 2, 8, 2},
                        Case{"rigid never shrinks", 4, 4, 0}}) {
    SCOPED_TRACE(k.name);
    PolicyFixture f(SmallCluster());
    const int t4 = f.Type("t4");
    JobView& a = f.AddJob(MakeJob("a").Elastic(1, 8));
    JobView& b = f.AddJob(MakeJob("b").Elastic(k.b_min, k.b_max));
    b.agent = nullptr;  // rigid when min == max and no agent
    Snapshot snap = f.Snap(Seconds(10));
    Decision d = PlaceGrants(snap, {{&a, t4, 6}, {&b, t4, 4}});
    std::vector<Allocation> after = After(snap, d);
    EXPECT_EQ(after[a.index].gpus(), 6);
    EXPECT_EQ(after[b.index].gpus(), k.expect_b);
    if (k.expect_b > 0) {
      EXPECT_EQ(after[b.index].type, t4);
    }
    ExpectNoDoubleBooking(snap, after);
  }
}

// A job with an agent is never "rigid", but does not shrink below its
// min_gpus either.
TEST(GoodputAllocTest, PlaceGrantsAgentJobShrinksWithinItsMinimum) {
  PolicyFixture f(SmallCluster());
  const int t4 = f.Type("t4");
  AgentReport report;
  JobView& a = f.AddJob(MakeJob("a").Elastic(1, 8));
  JobView& b = f.AddJob(MakeJob("b").Gpus(4).Elastic(2, 4));
  b.agent = &report;
  Snapshot snap = f.Snap(Seconds(10));
  Decision d = PlaceGrants(snap, {{&a, t4, 5}, {&b, t4, 4}});
  std::vector<Allocation> after = After(snap, d);
  EXPECT_EQ(after[a.index].gpus(), 5);
  EXPECT_EQ(after[b.index].gpus(), 3);
  ExpectNoDoubleBooking(snap, after);
}

// Random running states and grants (whose totals fit each type, as the
// allocator's do, or overflow it): never a GPU twice; every job ends with
// its grant's type and at most its count, at least min(grant, min_gpus)
// unless dropped, exactly its count when rigid, and nothing without one.
TEST(GoodputAllocTest, PlaceGrantsRandomNeverDoubleBooks) {
  Rng rng(123);
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    PolicyFixture f(SmallCluster());
    const int ntypes = static_cast<int>(f.cluster().types().size());
    const int njobs = rng.Int(1, 6);
    for (int j = 0; j < njobs; ++j) {
      int lo = rng.Int(1, 4), hi = lo + rng.Int(0, 4);
      JobView& v = f.AddJob(MakeJob("j" + std::to_string(j)).Gpus(lo).Elastic(lo, hi));
      // Some run already where FreeMap puts them.
      if (rng.Int(0, 1) == 0) {
        int t = rng.Int(0, ntypes - 1);
        int g = rng.Int(1, 4);
        Snapshot s = f.Snap(0);
        FreeMap fm(s);
        if (auto alloc = fm.Place(t, g)) f.Run(v, *alloc);
      }
    }
    Snapshot snap = f.Snap(Seconds(60));
    const bool overflow = trial % 2 == 1;
    std::vector<int> left(ntypes);
    for (int t = 0; t < ntypes; ++t) left[t] = f.cluster().types()[t].total_gpus;
    std::vector<GoodputGrant> grants;
    for (JobView& v : f.jobs()) {
      if (rng.Int(0, 3) == 0) continue;  // no grant
      int t = rng.Int(0, ntypes - 1);
      // Half the time the job's current allocation, to exercise "keep".
      int g = !v.alloc.empty() && rng.Int(0, 1) == 0 ? v.alloc.gpus() : rng.Int(1, 8);
      if (!v.alloc.empty() && g == v.alloc.gpus()) t = v.alloc.type;
      if (!overflow && g > left[t]) continue;
      left[t] -= g;
      grants.push_back({&v, t, g});
    }
    for (int defrag : {0, 2}) {
    SCOPED_TRACE("defrag_moves " + std::to_string(defrag));
    PlaceOptions options;
    options.defrag_moves = defrag;
    PlaceStats stats;
    Decision d = PlaceGrants(snap, grants, options, &stats);
    std::vector<Allocation> after = After(snap, d);
    ExpectNoDoubleBooking(snap, after);
    std::vector<const GoodputGrant*> by_job(njobs, nullptr);
    for (const GoodputGrant& g : grants) by_job[g.job->index] = &g;
    int moved_kept = 0;
    for (int j = 0; j < njobs; ++j) {
      const JobView& v = f.jobs()[j];
      const Allocation& a = after[j];
      const GoodputGrant* g = by_job[j];
      if (g == nullptr) {
        EXPECT_TRUE(a.empty()) << "job " << j << " has no grant";
        continue;
      }
      if (!overflow) {
        EXPECT_EQ(a.gpus(), g->gpus) << "job " << j << ": grants that fit by count are placed whole";
      }
      if (a.empty()) continue;  // dropped (overflow only)
      EXPECT_EQ(a.type, g->type) << "job " << j;
      EXPECT_LE(a.gpus(), g->gpus) << "job " << j;
      EXPECT_GE(a.gpus(), std::min(g->gpus, v.spec->min_gpus)) << "job " << j;
      if (v.spec->min_gpus == v.spec->max_gpus) {
        EXPECT_EQ(a.gpus(), g->gpus) << "rigid job " << j;
      }
      if (!v.alloc.empty() && v.alloc.type == g->type && v.alloc.gpus() == g->gpus) {
        if (a != v.alloc) {
          ++moved_kept;
          continue;
        }
        EXPECT_EQ(Assigned(d, j), nullptr) << "job " << j << " keeps its GPUs: not named";
      }
    }
    // Without defragmentation, a job granted its current shape keeps its
    // exact GPUs (unless the repack won); with it, only the counted
    // migrations move, each a single-node job, at most defrag_moves per grant.
    if (!stats.repacked) {
      EXPECT_EQ(moved_kept, stats.migrations);
      EXPECT_LE(stats.migrations, defrag * static_cast<int>(grants.size()));
    }
    if (defrag == 0) EXPECT_EQ(stats.migrations, 0);
    // Named jobs are active jobs and never named twice.
    std::vector<int> named(njobs, 0);
    for (const auto& [index, alloc] : d.assign) {
      ASSERT_GE(index, 0);
      ASSERT_LT(index, njobs);
      EXPECT_EQ(++named[index], 1);
    }
    }
  }
}

// One 1-GPU job on each T4 node of SmallCluster() and a third job granted
// 4 T4s: the grant fits by count but on no single node.
struct OneGpuOnEachNode {
  OneGpuOnEachNode() {
    f.Run(a, Allocation{t4, {{0, 1}}});
    f.Run(b, Allocation{t4, {{1, 1}}});
    snap = f.Snap(Seconds(100));
    grants = {{&a, t4, 1}, {&b, t4, 1}, {&c, t4, 4}};
  }
  PolicyFixture f{SmallCluster()};
  const int t4 = f.Type("t4");
  JobView& a = f.AddJob(MakeJob("a").Elastic(1, 8));
  JobView& b = f.AddJob(MakeJob("b").Elastic(1, 8));
  JobView& c = f.AddJob(MakeJob("c").Elastic(1, 8));
  Snapshot snap;
  std::vector<GoodputGrant> grants;
};

// PlaceOptions::price: a grant the placement would spread over more nodes
// than it needs is weighed against the most GPUs that fit on that fewest
// count, each priced at the nodes it spans; placed short by choice, it
// calls for the repack; placed whole but spread, the repack is taken when
// it is worth more.
TEST(GoodputAllocTest, PlaceGrantsPricesAFragmentedPlacementAgainstACompactOne) {
  OneGpuOnEachNode s;
  JobView &a = s.a, &b = s.b, &c = s.c;
  const Snapshot& snap = s.snap;
  const std::vector<GoodputGrant>& grants = s.grants;
  PlaceOptions options;
  options.repack = false;
  // A second node costs a lot: 3 GPUs on one node beat 4 over two.
  options.price = [](const JobView&, int, int gpus, int nodes, bool) { return gpus / static_cast<double>(nodes * nodes); };
  std::vector<Allocation> compact = After(snap, PlaceGrants(snap, grants, options));
  EXPECT_EQ(compact[c.index].gpus(), 3);
  EXPECT_EQ(compact[c.index].nodes(), 1);
  EXPECT_EQ(compact[a.index], a.alloc);
  EXPECT_EQ(compact[b.index], b.alloc);
  ExpectNoDoubleBooking(snap, compact);
  // Spreading costs nothing: the 4 over two nodes stay.
  options.price = [](const JobView&, int, int gpus, int, bool) { return static_cast<double>(gpus); };
  std::vector<Allocation> spread = After(snap, PlaceGrants(snap, grants, options));
  EXPECT_EQ(spread[c.index].gpus(), 4);
  EXPECT_EQ(spread[c.index].nodes(), 2);
  // With the repack, the grant short by choice is held whole on one node
  // by re-placing every job.
  options.repack = true;
  options.price = [](const JobView&, int, int gpus, int nodes, bool) { return gpus / static_cast<double>(nodes * nodes); };
  PlaceStats stats;
  std::vector<Allocation> repacked = After(snap, PlaceGrants(snap, grants, options, &stats));
  EXPECT_TRUE(stats.repacked);
  EXPECT_EQ(repacked[c.index].gpus(), 4);
  EXPECT_EQ(repacked[c.index].nodes(), 1);
  ExpectNoDoubleBooking(snap, repacked);
  // A second node costs half a GPU: 4 over two nodes (3.5) beat 3 on one,
  // so the grant is placed whole but spread, and the fresh packing (c on
  // one node, a and b moved beside each other) is taken when it is worth
  // more: not when each move costs a GPU's worth.
  for (double move : {0.0, 1.0}) {
    options.price = [move](const JobView&, int, int gpus, int nodes, bool moved) {
      return gpus - 0.5 * (nodes - 1) - (moved ? move : 0.0);
    };
    PlaceStats st;
    std::vector<Allocation> after = After(snap, PlaceGrants(snap, grants, options, &st));
    ExpectNoDoubleBooking(snap, after);
    EXPECT_EQ(after[c.index].gpus(), 4) << move;
    EXPECT_EQ(st.repacked, move == 0.0) << move;
    EXPECT_EQ(after[c.index].nodes(), move == 0.0 ? 1 : 2) << move;
    EXPECT_EQ(after[a.index] == a.alloc && after[b.index] == b.alloc, move != 0.0) << move;
  }
}

// Explicit defragmentation: two 1-GPU jobs sit on the two 4-GPU T4 nodes,
// so a new 4-GPU grant fits by count but on no single node. Without
// defragmentation it is spread over both nodes (and, kept to one node,
// shrunk); with defrag_moves=1 one small job moves and the grant gets a
// whole node. A job as large as the grant is never moved.
TEST(GoodputAllocTest, PlaceGrantsDefragmentsByMovingSmallJobs) {
  OneGpuOnEachNode s;
  PolicyFixture& f = s.f;
  const int t4 = s.t4;
  JobView &a = s.a, &b = s.b, &c = s.c;
  const Snapshot& snap = s.snap;
  const std::vector<GoodputGrant>& grants = s.grants;

  std::vector<Allocation> plain = After(snap, PlaceGrants(snap, grants));
  EXPECT_EQ(plain[c.index].nodes(), 2) << plain[c.index].ToString(f.cluster());
  std::vector<GoodputGrant> one_node = grants;
  one_node[2].max_nodes = 1;
  PlaceOptions no_repack;
  no_repack.repack = false;
  EXPECT_EQ(After(snap, PlaceGrants(snap, one_node, no_repack))[c.index].gpus(), 3);
  // The repack (default) fits all 4 by re-placing every job, unbounded.
  PlaceStats repack;
  EXPECT_EQ(After(snap, PlaceGrants(snap, one_node, {}, &repack))[c.index].gpus(), 4);
  EXPECT_TRUE(repack.repacked);

  PlaceOptions options;
  options.defrag_moves = 1;
  PlaceStats stats;
  Decision d = PlaceGrants(snap, grants, options, &stats);
  std::vector<Allocation> after = After(snap, d);
  ExpectNoDoubleBooking(snap, after);
  EXPECT_EQ(stats.migrations, 1);
  EXPECT_FALSE(stats.repacked);
  EXPECT_EQ(after[c.index].gpus(), 4);
  EXPECT_EQ(after[c.index].nodes(), 1) << after[c.index].ToString(f.cluster());
  int moved = (after[a.index] != a.alloc) + (after[b.index] != b.alloc);
  EXPECT_EQ(moved, 1);
  EXPECT_EQ(after[a.index].parts[0].node, after[b.index].parts[0].node) << "the small jobs now share a node";

  // Jobs as large as the grant stay: a 4-GPU grant next to two 2-GPU jobs
  // can move one of them, but a 2-GPU grant next to 2+1 never moves the
  // 2-GPU job (it is not smaller than the grant).
  PolicyFixture g(SmallCluster());
  JobView& x = g.AddJob(MakeJob("x").Elastic(1, 8));
  JobView& y = g.AddJob(MakeJob("y").Elastic(1, 8));
  JobView& z = g.AddJob(MakeJob("z").Elastic(1, 8));
  g.Run(x, Allocation{t4, {{0, 3}}});
  g.Run(y, Allocation{t4, {{1, 3}}});
  Snapshot s2 = g.Snap(Seconds(100));
  PlaceStats st2;
  std::vector<Allocation> a2 = After(s2, PlaceGrants(s2, {{&x, t4, 3}, {&y, t4, 3}, {&z, t4, 2}}, options, &st2));
  EXPECT_EQ(st2.migrations, 0);
  EXPECT_EQ(a2[x.index], x.alloc);
  EXPECT_EQ(a2[y.index], y.alloc);
  EXPECT_EQ(a2[z.index].gpus(), 2);
  EXPECT_EQ(a2[z.index].nodes(), 2);
}

}  // namespace
}  // namespace tessel
