#include "policy/throughput.h"

#include <gtest/gtest.h>

#include <initializer_list>

#include "model/catalog.h"
#include "plan/planner.h"
#include "policy/placement.h"

namespace tessel {
namespace {

JobSpec Job(const std::string& id, const std::string& model, int batch) {
  JobSpec j;
  j.id = id;
  j.model = model;
  j.global_batch = batch;
  j.iterations = 100;
  return j;
}

void ExpectSameRate(const JobRate& a, const JobRate& b, const std::string& what) {
  EXPECT_EQ(a.fits, b.fits) << what;
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s) << what;  // bit for bit
  EXPECT_EQ(a.samples_per_s, b.samples_per_s) << what;
  EXPECT_EQ(a.tokens_per_s, b.tokens_per_s) << what;
  EXPECT_EQ(a.network_s, b.network_s) << what;
  EXPECT_EQ(a.network_exposed_s, b.network_exposed_s) << what;
  EXPECT_EQ(a.plan.ToString(), b.plan.ToString()) << what;
  EXPECT_EQ(a.reason, b.reason) << what;
}

// Prefetch searches a batch of questions on two threads (where the machine
// has two cores): the answers and the count of estimates must be those of
// asking one by one, for shapes that fit and that do not, on one node and
// several, at full and at a reduced network share, with repeats.
// Three Arena jobs, and the questions about each at `counts` GPUs of every
// type on the fewest nodes, at full network share and (several nodes) half.
const std::vector<JobSpec>& ThreeJobs() {
  static const std::vector<JobSpec> jobs = {Job("a", "bert__2.6B", 256), Job("b", "wide_resnet__4B", 256),
                                            Job("c", "moe__1.3B", 128)};
  return jobs;
}
std::vector<RateQuery> Questions(const Cluster& cluster, std::initializer_list<int> counts) {
  std::vector<RateQuery> queries;
  for (const JobSpec& j : ThreeJobs())
    for (int gpus : counts)
      for (int type = 0; type < static_cast<int>(cluster.types().size()); ++type) {
        const int nodes = MinNodes(cluster, type, gpus);
        queries.push_back({&j, type, gpus, nodes, 1.0});
        if (nodes > 1) queries.push_back({&j, type, gpus, nodes, 0.5});
      }
  return queries;
}

TEST(EstimatorThroughput, PrefetchGivesTheAnswersAskingOneByOneGives) {
  const Cluster cluster = LoadCluster("arena-1280").value();
  std::vector<RateQuery> queries = Questions(cluster, {1, 4, 16, 64});
  queries.push_back(queries.front());  // asked twice: searched once
  for (PlanMode mode : {PlanMode::kBest, PlanMode::kDataParallel}) {
    EstimatorThroughput prefetched(cluster, mode), alone(cluster, mode);
    prefetched.Prefetch(queries);
    for (const RateQuery& q : queries) {
      const std::string what = q.job->model + " type " + std::to_string(q.type) + " x" + std::to_string(q.gpus) +
                               " share " + std::to_string(q.network_share);
      ExpectSameRate(prefetched.RateShared(*q.job, q.type, q.gpus, q.nodes, q.network_share),
                     alone.RateShared(*q.job, q.type, q.gpus, q.nodes, q.network_share), what);
    }
    EXPECT_EQ(prefetched.estimates(), alone.estimates());
  }
}

// Anticipate hands questions to the helper ahead of time: whichever way
// each is then answered (done ahead, searched by the asker before the
// helper reached it, waited for, or searched by the asker while it waits),
// the answers and the count of estimates are those of asking one by one,
// with a Prefetch and a PlanSet (which pause the helper) in between.
TEST(EstimatorThroughput, AnticipatedQuestionsGetTheAnswersAskingOneByOneGives) {
  const Cluster cluster = LoadCluster("arena-1280").value();
  const std::vector<JobSpec>& jobs = ThreeJobs();
  const std::vector<RateQuery> queries = Questions(cluster, {1, 2, 4, 8, 16, 32, 64});
  for (PlanMode mode : {PlanMode::kBest, PlanMode::kDataParallel}) {
    EstimatorThroughput ahead(cluster, mode), alone(cluster, mode);
    ahead.Anticipate(queries);
    ahead.Anticipate(queries);  // twice: queued once
    auto ask = [&](const RateQuery& q) {
      const std::string what = q.job->model + " type " + std::to_string(q.type) + " x" + std::to_string(q.gpus) +
                               " share " + std::to_string(q.network_share);
      ExpectSameRate(ahead.RateShared(*q.job, q.type, q.gpus, q.nodes, q.network_share),
                     alone.RateShared(*q.job, q.type, q.gpus, q.nodes, q.network_share), what);
    };
    // The last ones first (the helper has not reached them), then a batch
    // and a plan set from the middle, then all in order.
    for (size_t i = queries.size() - 3; i < queries.size(); ++i) ask(queries[i]);
    std::vector<RateQuery> batch(queries.begin() + 20, queries.begin() + 26);
    ahead.Prefetch(batch);
    const int type = 1, nodes = MinNodes(cluster, type, 16);
    std::vector<PlanChoice> set = ahead.PlanSet(jobs[0], type, 16, nodes, 4);
    std::vector<PlanChoice> want = alone.PlanSet(jobs[0], type, 16, nodes, 4);
    ASSERT_EQ(set.size(), want.size());
    for (size_t i = 0; i < set.size(); ++i) EXPECT_EQ(set[i].iteration_time_s, want[i].iteration_time_s);
    for (const RateQuery& q : queries) ask(q);
    // A question never anticipated, on a spread allocation.
    ask({&jobs[1], 0, 8, 5, 1.0});
    EXPECT_EQ(ahead.estimates(), alone.estimates());
  }
}

// A belief destroyed while its helper is searching ahead stops it first.
TEST(EstimatorThroughput, ABeliefAnsweringAheadIsDestroyedAtOnce) {
  const Cluster cluster = LoadCluster("arena-1280").value();
  const JobSpec job = Job("a", "bert__6.7B", 512);
  std::vector<RateQuery> queries;
  for (int gpus : {64, 32, 16, 8, 4, 2, 1})
    for (int type = 0; type < static_cast<int>(cluster.types().size()); ++type)
      queries.push_back({&job, type, gpus, MinNodes(cluster, type, gpus), 1.0});
  for (int round = 0; round < 3; ++round) {
    EstimatorThroughput ahead(cluster, PlanMode::kBest);
    ahead.Anticipate(queries);
    if (round == 1) {
      EstimatorThroughput alone(cluster, PlanMode::kBest);
      const int nodes = MinNodes(cluster, 0, 64);
      ExpectSameRate(ahead.Rate(job, 0, 64, nodes), alone.Rate(job, 0, 64, nodes), "x64");
    }
  }
}

// PlanSet's grid searches (one per stage count, on two threads where the
// machine has them) merged as the serial searches are: fastest first, each
// later plan leaner.
TEST(EstimatorThroughput, PlanSetEqualsTheSerialGridSearches) {
  const Cluster cluster = LoadCluster("arena-1280").value();
  const JobSpec job = Job("a", "bert__2.6B", 256);
  const ModelSpec& model = **FindModel(job.model);
  for (int type = 0; type < static_cast<int>(cluster.types().size()); ++type) {
    const int gpus = 16, nodes = MinNodes(cluster, type, gpus);
    EstimatorThroughput belief(cluster, PlanMode::kBest);
    std::vector<PlanChoice> set = belief.PlanSet(job, type, gpus, nodes, 8);
    // The serial reference: each stage count's grid, in order, then sorted
    // stably by time and memory and thinned to a Pareto set.
    const GpuTypeInfo& info = cluster.types()[type];
    std::vector<Estimate> all;
    Estimator estimator;
    for (int p = 1; p <= gpus && p <= model.NumLayers(); p *= 2) {
      PlanRequest r;
      r.model = &model;
      r.topology = info.topology;
      r.topology.gpus_per_node = (gpus + nodes - 1) / nodes;
      r.gpus = gpus;
      r.global_batch = job.global_batch;
      r.precision = info.gpu->PeakTflops(model.default_precision) > 0 ? model.default_precision : Precision::kFp16;
      r.mode = SearchMode::kGrid;
      r.top_k = 8;
      r.pp = p;
      auto found = SearchPlans(estimator, r);
      ASSERT_TRUE(found.ok());
      all.insert(all.end(), found->plans.begin(), found->plans.end());
    }
    std::stable_sort(all.begin(), all.end(), [](const Estimate& a, const Estimate& b) {
      if (a.iteration_time_s != b.iteration_time_s) return a.iteration_time_s < b.iteration_time_s;
      return a.memory_gib_per_gpu < b.memory_gib_per_gpu;
    });
    std::vector<PlanChoice> want;
    for (const Estimate& e : all) {
      if (!want.empty() && e.memory_gib_per_gpu >= want.back().memory_gib_per_gpu - 1e-9) continue;
      want.push_back({e.plan, e.iteration_time_s, e.memory_gib_per_gpu});
      if (want.size() == 8) break;
    }
    ASSERT_EQ(set.size(), want.size()) << "type " << type;
    ASSERT_FALSE(set.empty()) << "type " << type;
    for (size_t i = 0; i < set.size(); ++i) {
      EXPECT_EQ(set[i].plan.ToString(), want[i].plan.ToString()) << "type " << type << " plan " << i;
      EXPECT_EQ(set[i].iteration_time_s, want[i].iteration_time_s) << "type " << type << " plan " << i;
      EXPECT_EQ(set[i].memory_gib_per_gpu, want[i].memory_gib_per_gpu) << "type " << type << " plan " << i;
    }
  }
}

}  // namespace
}  // namespace tessel
