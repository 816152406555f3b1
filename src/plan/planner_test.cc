#include "plan/planner.h"

#include <gtest/gtest.h>

#include "model/catalog.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

PlanRequest Make(const ModelSpec& m, const char* gpu, int gpus, int batch, int gpn = 0) {
  PlanRequest r;
  r.model = &m;
  r.topology = *MakeTopology(**FindGpu(gpu), gpn, 0);
  r.gpus = gpus;
  r.global_batch = batch;
  r.precision = m.default_precision;
  r.top_k = 50;
  return r;
}

void CheckInvariants(const PlanResult& res, const PlanRequest& req) {
  for (const auto& e : res.plans) {
    EXPECT_TRUE(e.fits) << e.plan.ToString();
    EXPECT_LE(e.memory_gib_per_gpu, req.topology.gpu->memory_gib);
    EXPECT_EQ(e.plan.dp * e.plan.tp * e.plan.pp, req.gpus);
    EXPECT_LE(e.plan.tp, req.topology.gpus_per_node);
    EXPECT_EQ(e.plan.dp * e.plan.micro_batch * e.plan.num_micro_batches, req.global_batch);
    EstimateRequest er;
    er.model = req.model;
    er.topology = req.topology;
    er.gpus = req.gpus;
    er.global_batch = req.global_batch;
    er.plan = e.plan;
    EXPECT_TRUE(ValidatePlan(er).ok()) << ValidatePlan(er).message();
  }
  for (size_t i = 1; i < res.plans.size(); ++i)
    EXPECT_GE(res.plans[i - 1].samples_per_s, res.plans[i].samples_per_s);
}

struct Case {
  const char* model;
  const char* gpu;
  int gpus, batch, gpn;
};

void PrintTo(const Case& c, std::ostream* os) { *os << std::string(c.model) + "/" + c.gpu; }

class PlannerInvariants : public ::testing::TestWithParam<Case> {};

TEST_P(PlannerInvariants, EveryPlanFitsAndIsValid) {
  const Case& c = GetParam();
  const ModelSpec& m = **FindModel(c.model);
  PlanRequest req = Make(m, c.gpu, c.gpus, c.batch, c.gpn);
  auto res = SearchPlans(Estimator(), req);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_FALSE(res->plans.empty()) << res->reason;
  CheckInvariants(*res, req);
}

INSTANTIATE_TEST_SUITE_P(
    Models, PlannerInvariants,
    ::testing::Values(Case{"gpt3-175b", "a100-80g", 128, 256, 0}, Case{"llama2-70b", "h100-sxm", 64, 128, 0},
                      Case{"bert__2.6B", "a40", 8, 256, 2}, Case{"moe__10B", "v100-32g", 16, 512, 16},
                      Case{"wide_resnet__2B", "a10", 8, 512, 2}, Case{"llama3-8b", "l4", 16, 64, 8},
                      Case{"resnet-50", "t4", 4, 256, 4}),
    [](const auto& info) { return testing::TestName(std::string(info.param.model) + "_" + info.param.gpu); });

TEST(Planner, Gpt3OnThousandA100s) {
  const ModelSpec& m = **FindModel("gpt3-175b");
  PlanRequest req = Make(m, "a100-80g", 1024, 1536);
  req.precision = Precision::kFp16;
  auto res = SearchPlans(Estimator(), req);
  ASSERT_TRUE(res.ok());
  ASSERT_FALSE(res->plans.empty());
  const auto& best = res->plans.front();
  // The best published for this scale (Narayanan et al. 2021 with full
  // recompute, Korthikanti et al. 2022 with selective) lies in 38-56% MFU;
  // an estimator that finds a better plan than that is optimistic (issue 12).
  EXPECT_GT(best.mfu, 0.38);
  EXPECT_LT(best.mfu, 0.56);
  // 175B does not fit one GPU's memory without sharding it somehow.
  EXPECT_TRUE(best.plan.tp * best.plan.pp > 1 || best.plan.zero == 3);
}

// Within one grid (p fixed) the grid search finds the full search's best
// plan, within 1% (issue 37: GPT-3 175B on 1,024 A100-80G at p = 8 lost
// 5.3% when the grid tried two interleavings).
TEST(Planner, GridBestWithinOnePercentOfFullSearchSameP) {
  struct G {
    const char* model;
    const char* gpu;
    int gpus, batch, pp;
  };
  for (const G& g : {G{"gpt3-175b", "a100-80g", 1024, 1536, 8}, G{"gpt3-175b", "a100-80g", 256, 512, 8},
                     G{"llama2-13b", "a100-40g", 32, 256, 2}, G{"bert__6.7B", "v100-32g", 16, 256, 2},
                     G{"gpt-18.4b", "h100-sxm", 64, 512, 1}, G{"llama2-70b", "h100-sxm", 64, 256, 4}}) {
    const ModelSpec& m = **FindModel(g.model);
    PlanRequest full = Make(m, g.gpu, g.gpus, g.batch);
    full.pp = g.pp;
    PlanRequest grid = full;
    grid.mode = SearchMode::kGrid;
    grid.top_k = 32;  // as `tessel plan --search grid` and the policies ask
    auto f = SearchPlans(Estimator(), full);
    auto r = SearchPlans(Estimator(), grid);
    ASSERT_TRUE(f.ok() && r.ok());
    ASSERT_FALSE(f->plans.empty()) << g.model;
    ASSERT_FALSE(r->plans.empty()) << g.model;
    EXPECT_GE(r->plans.front().samples_per_s, 0.99 * f->plans.front().samples_per_s) << g.model;
    EXPECT_LE(r->candidates_evaluated, f->candidates_evaluated);
    EXPECT_LE(r->plans.size(), 32u);
    // Pareto: throughput falls as memory falls.
    for (size_t i = 1; i < r->plans.size(); ++i)
      EXPECT_LT(r->plans[i].memory_gib_per_gpu, r->plans[i - 1].memory_gib_per_gpu);
  }
}

TEST(Planner, Deterministic) {
  const ModelSpec& m = **FindModel("llama2-70b");
  PlanRequest req = Make(m, "h100-sxm", 64, 256);
  auto a = SearchPlans(Estimator(), req);
  auto b = SearchPlans(Estimator(), req);
  ASSERT_EQ(a->plans.size(), b->plans.size());
  for (size_t i = 0; i < a->plans.size(); ++i) {
    EXPECT_EQ(a->plans[i].plan, b->plans[i].plan);
    EXPECT_EQ(a->plans[i].iteration_time_s, b->plans[i].iteration_time_s);
  }
}

TEST(Planner, NothingFitsIsReported) {
  const ModelSpec& m = **FindModel("gpt-1t");
  PlanRequest req = Make(m, "t4", 4, 16);
  req.precision = Precision::kFp16;
  auto res = SearchPlans(Estimator(), req);
  ASSERT_TRUE(res.ok());
  EXPECT_TRUE(res->plans.empty());
  EXPECT_NE(res->reason.find("no plan fits in memory"), std::string::npos) << res->reason;
}

TEST(Planner, GridNeedsPp) {
  const ModelSpec& m = **FindModel("gpt-1.7b");
  PlanRequest req = Make(m, "a100-80g", 8, 64);
  req.mode = SearchMode::kGrid;
  auto res = SearchPlans(Estimator(), req);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().message(), "--search grid: needs --pp P (the grid's number of pipeline stages)");
}


// A global batch near INT_MAX (issue 14): divisors are found without
// overflow (it used to divide by zero) and the search answers.
TEST(Planner, BatchNearIntMaxDoesNotOverflow) {
  const ModelSpec& m = **FindModel("gpt3-1.3b");
  for (int batch : {2147483647, 2147483646, 1000000000}) {
    PlanRequest req = Make(m, "a100-80g", 8, batch);
    auto res = SearchPlans(Estimator(), req);
    ASSERT_TRUE(res.ok()) << batch << ": " << res.status().ToString();
    for (const Estimate& e : res->plans) {
      EXPECT_EQ(static_cast<int64_t>(e.plan.dp) * e.plan.micro_batch * e.plan.num_micro_batches, batch);
      EXPECT_GT(e.iteration_time_s, 0);
    }
  }
}

// A framework that chooses its plan itself by a search that prices the
// gradient sync once per micro-batch (Alpa) is predicted to pick the plan
// that search ranks first, not the fastest: on 8 H100s with 16
// micro-batches, plans that synchronise less gradient win. The plan
// returned is the one with the least iteration time + (M - 1) x its
// data-parallel communication among all plans the search returns.
TEST(Planner, FrameworkOwnSearchPricesGradSyncPerMicroBatch) {
  const ModelSpec& m = **FindModel("bert__1.3B");
  PerfParams fastest = DefaultPerfParams();
  for (auto& f : fastest.frameworks)
    if (f.name == "alpa") f.search_prices_grad_sync_per_micro_batch = false;
  Estimator own_est, fastest_est(fastest);
  PlanRequest own = Make(m, "h100-sxm", 8, 128);
  own.num_micro_batches = 16;
  own.recompute = Recompute::kFull;
  own.top_k = 1000;
  own.framework = *DefaultPerfParams().FindFramework("alpa");
  PlanRequest fast = own;
  fast.framework = *fastest.FindFramework("alpa");
  auto a = SearchPlans(own_est, own);
  auto b = SearchPlans(fastest_est, fast);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_FALSE(a->plans.empty());
  auto ranked = [](const Estimate& e) {
    return e.iteration_time_s + (e.plan.num_micro_batches - 1) * e.breakdown.dp_comm_s;
  };
  for (const Estimate& e : a->plans) EXPECT_LE(ranked(a->plans.front()), ranked(e)) << e.plan.ToString();
  // The fastest plan synchronises gradients; Alpa's pick synchronises less.
  EXPECT_GT(b->plans.front().breakdown.dp_comm_s, a->plans.front().breakdown.dp_comm_s);
  EXPECT_GE(a->plans.front().iteration_time_s, b->plans.front().iteration_time_s);
}

// Alpa's stage construction on its HLO cost model (the Arena's trainers)
// prices GEMM calls and collectives, not convolutions: for a CNN its search
// sees communication only, and the planner predicts the plan it picks, a
// pipeline of one-GPU stages with no collective, where the fastest plan in
// the estimate shards a stage (t = 2 or d = 2). A transformer's plan is
// priced as before.
TEST(Planner, FrameworkSearchBlindToConvolutionsPicksTheLeastCommunication) {
  PerfParams seeing = DefaultPerfParams();
  for (auto& f : seeing.frameworks)
    if (f.name == "alpa") f.search_sees_no_convolutions = false;
  Estimator blind_est, seeing_est(seeing);
  auto pick = [&](const char* model, const Estimator& est, const PerfParams& params) {
    PlanRequest req = Make(**FindModel(model), "h100-sxm", 4, 256);
    req.num_micro_batches = 16;
    req.recompute = Recompute::kFull;
    req.top_k = 1000;
    req.framework = *params.FindFramework("alpa");
    auto res = SearchPlans(est, req);
    EXPECT_TRUE(res.ok() && !res->plans.empty());
    return res->plans;
  };
  auto comm = [](const Estimate& e) { return e.breakdown.CollectiveSeconds(); };
  std::vector<Estimate> blind = pick("wide_resnet__1B", blind_est, DefaultPerfParams());
  std::vector<Estimate> sees = pick("wide_resnet__1B", seeing_est, seeing);
  ASSERT_FALSE(blind.empty());
  ASSERT_FALSE(sees.empty());
  EXPECT_EQ(blind.front().plan.pp, 4);
  EXPECT_EQ(comm(blind.front()), 0.0);
  for (const Estimate& e : blind) EXPECT_LE(comm(blind.front()), comm(e)) << e.plan.ToString();
  EXPECT_GT(comm(sees.front()), 0.0) << sees.front().plan.ToString();
  EXPECT_LT(sees.front().iteration_time_s, blind.front().iteration_time_s);
  std::vector<Estimate> bert_blind = pick("bert__1.3B", blind_est, DefaultPerfParams());
  std::vector<Estimate> bert_sees = pick("bert__1.3B", seeing_est, seeing);
  ASSERT_FALSE(bert_blind.empty());
  ASSERT_FALSE(bert_sees.empty());
  EXPECT_EQ(bert_blind.front().plan.ToString(), bert_sees.front().plan.ToString());
}

// The Arena workers' Alpa reduce-scatters gradients (prefer_reduce_scatter),
// so every data-parallel plan it runs shards the optimizer: the search
// offers no ZeRO-0 plan with d > 1, while a stated --zero 0 is still planned.
TEST(Planner, SearchesNoShallowerZeroThanTheFrameworkRuns) {
  const ModelSpec& m = **FindModel("bert__1.3B");
  PlanRequest req = Make(m, "a100-40g", 8, 128);
  req.framework = *DefaultPerfParams().FindFramework("alpa");
  req.num_micro_batches = 16;
  req.recompute = Recompute::kFull;
  req.top_k = 1000;
  auto res = SearchPlans(Estimator(), req);
  ASSERT_TRUE(res.ok());
  ASSERT_FALSE(res->plans.empty());
  int data_parallel = 0;
  for (const Estimate& e : res->plans) {
    if (e.plan.dp > 1) ++data_parallel;
    if (e.plan.dp > 1) EXPECT_GE(e.plan.zero, 1) << e.plan.ToString();
  }
  EXPECT_GT(data_parallel, 0);
  req.zero = 0;
  req.dp = 8;
  auto stated = SearchPlans(Estimator(), req);
  ASSERT_TRUE(stated.ok());
  ASSERT_FALSE(stated->plans.empty());
  EXPECT_EQ(stated->plans.front().plan.zero, 0);
}

}  // namespace
// A best-k search skips plans its bounds show cannot beat the k-th best
// kept so far (and builds the estimates of several candidates from shared
// layer costs): the k it returns are the first k of the same search
// keeping every plan, bit for bit.
TEST(Planner, PrunedBestKEqualsTheUnprunedOrder) {
  struct Case {
    const char* model;
    const char* gpu;
    int gpus, batch, gpn;
  };
  for (const Case& c : {Case{"gpt3-175b", "a100-80g", 1024, 1536, 0}, Case{"gpt3-6.7b", "v100-32g", 16, 64, 4},
                        Case{"wide_resnet__2B", "v100-32g", 16, 256, 8}, Case{"moe__2.4B", "a10", 8, 512, 4},
                        Case{"bert__760M", "a40", 8, 256, 2}}) {
    auto model = FindModel(c.model);
    ASSERT_TRUE(model.ok()) << c.model;
    PlanRequest all = Make(**model, c.gpu, c.gpus, c.batch, c.gpn);
    if (all.topology.gpu->PeakTflops(all.precision) <= 0) all.precision = Precision::kFp16;  // no bf16 on a V100
    all.top_k = 1 << 20;  // never full: nothing is skipped
    auto every = SearchPlans(Estimator(), all);
    ASSERT_TRUE(every.ok()) << c.model << ": " << every.status().ToString();
    EXPECT_FALSE(every->plans.empty()) << c.model;
    for (int k : {1, 3}) {
      PlanRequest req = all;
      req.top_k = k;
      auto best = SearchPlans(Estimator(), req);
      ASSERT_TRUE(best.ok());
      EXPECT_EQ(best->candidates_evaluated, every->candidates_evaluated);
      ASSERT_EQ(best->plans.size(), std::min<size_t>(k, every->plans.size())) << c.model;
      for (size_t i = 0; i < best->plans.size(); ++i) {
        EXPECT_EQ(best->plans[i].plan.ToString(), every->plans[i].plan.ToString()) << c.model << " #" << i;
        EXPECT_EQ(best->plans[i].iteration_time_s, every->plans[i].iteration_time_s) << c.model << " #" << i;
        EXPECT_EQ(best->plans[i].memory_gib_per_gpu, every->plans[i].memory_gib_per_gpu) << c.model << " #" << i;
      }
    }
  }
}

}  // namespace tessel
