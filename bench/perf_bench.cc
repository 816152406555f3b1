// Speed budgets of issue 2, measured (never asserted in tests):
//   one estimate <= 10 us; plan --search full for GPT-3 175B on 1,024
//   A100-80G (8 per node), global batch 1,536 <= 1 s; a grid search <= 20 ms.
// Run: build/tessel_bench (or scripts/bench.sh).
#include <benchmark/benchmark.h>

#include "model/catalog.h"
#include "perf/estimator.h"
#include "plan/planner.h"

namespace tessel {
namespace {

EstimateRequest Gpt3Request(const ModelSpec& m) {
  EstimateRequest r;
  r.model = &m;
  r.topology = *MakeTopology(**FindGpu("a100-80g"), 8, 0);
  r.gpus = 1024;
  r.global_batch = 1536;
  r.plan.dp = 16;
  r.plan.tp = 8;
  r.plan.pp = 8;
  r.plan.micro_batch = 1;
  r.plan.num_micro_batches = 96;
  r.plan.virtual_stages = 3;
  r.plan.recompute = Recompute::kSelective;
  r.plan.zero = 1;
  r.plan.precision = Precision::kFp16;
  return r;
}

void BM_EstimateGpt3(benchmark::State& state) {
  const ModelSpec& m = **FindModel("gpt3-175b");
  EstimateRequest r = Gpt3Request(m);
  Estimator est;
  for (auto _ : state) benchmark::DoNotOptimize(est.RunUnchecked(r));
}
BENCHMARK(BM_EstimateGpt3);

void BM_EstimateValidated(benchmark::State& state) {
  const ModelSpec& m = **FindModel("gpt3-175b");
  EstimateRequest r = Gpt3Request(m);
  Estimator est;
  for (auto _ : state) benchmark::DoNotOptimize(est.Run(r));
}
BENCHMARK(BM_EstimateValidated);

void BM_EstimateMoe(benchmark::State& state) {
  const ModelSpec& m = **FindModel("moe__27B");
  EstimateRequest r;
  r.model = &m;
  r.topology = *MakeTopology(**FindGpu("a40"), 2, 0);
  r.gpus = 16;
  r.global_batch = 512;
  r.plan = {16, 1, 1, 4, 8, 1, 16, Recompute::kFull, 1, Precision::kFp16};
  Estimator est;
  for (auto _ : state) benchmark::DoNotOptimize(est.RunUnchecked(r));
}
BENCHMARK(BM_EstimateMoe);

void BM_EstimateWideResnet(benchmark::State& state) {
  const ModelSpec& m = **FindModel("wide_resnet__13B");
  EstimateRequest r;
  r.model = &m;
  r.topology = *MakeTopology(**FindGpu("a100-40g"), 4, 0);
  r.gpus = 16;
  r.global_batch = 1024;
  r.plan = {4, 1, 4, 8, 32, 1, 1, Recompute::kFull, 1, Precision::kFp32};
  Estimator est;
  for (auto _ : state) benchmark::DoNotOptimize(est.RunUnchecked(r));
}
BENCHMARK(BM_EstimateWideResnet);

PlanRequest Gpt3Plan(const ModelSpec& m, SearchMode mode, int pp) {
  PlanRequest req;
  req.model = &m;
  req.topology = *MakeTopology(**FindGpu("a100-80g"), 8, 0);
  req.gpus = 1024;
  req.global_batch = 1536;
  req.precision = Precision::kFp16;
  req.mode = mode;
  req.pp = pp;
  req.top_k = 32;
  return req;
}

void RunPlanBench(benchmark::State& state, const PlanRequest& req) {
  Estimator est;
  int64_t candidates = 0;
  for (auto _ : state) {
    auto r = SearchPlans(est, req);
    candidates = r->candidates_evaluated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["candidates"] = static_cast<double>(candidates);
}

void BM_PlanFullGpt3On1024(benchmark::State& state) {
  const ModelSpec& m = **FindModel("gpt3-175b");
  RunPlanBench(state, Gpt3Plan(m, SearchMode::kFull, 0));
}
BENCHMARK(BM_PlanFullGpt3On1024)->Unit(benchmark::kMillisecond);

void BM_PlanGridGpt3On1024P8(benchmark::State& state) {
  const ModelSpec& m = **FindModel("gpt3-175b");
  RunPlanBench(state, Gpt3Plan(m, SearchMode::kGrid, 8));
}
BENCHMARK(BM_PlanGridGpt3On1024P8)->Unit(benchmark::kMillisecond);

void BM_PlanGridArenaJob(benchmark::State& state) {
  const ModelSpec& m = **FindModel("bert__6.7B");
  PlanRequest req;
  req.model = &m;
  req.topology = *MakeTopology(**FindGpu("a40"), 2, 0);
  req.gpus = 16;
  req.global_batch = 256;
  req.precision = Precision::kFp16;
  req.mode = SearchMode::kGrid;
  req.pp = 2;
  Estimator est;
  for (auto _ : state) benchmark::DoNotOptimize(SearchPlans(est, req));
}
BENCHMARK(BM_PlanGridArenaJob)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessel

BENCHMARK_MAIN();
