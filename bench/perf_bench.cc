// Speed budgets of issue 2, measured (never asserted in tests):
//   one estimate <= 10 us; plan --search full for GPT-3 175B on 1,024
//   A100-80G (8 per node), global batch 1,536 <= 1 s; a grid search <= 20 ms.
// Run: build/tessel_bench (or scripts/bench.sh).
#include <benchmark/benchmark.h>

#include "core/helper_thread.h"
#include "model/catalog.h"
#include "perf/estimator.h"
#include "plan/planner.h"

namespace tessel {
namespace {


EstimateRequest Request(const ModelSpec& m, const char* gpu, int gpus_per_node, int gpus, int batch,
                        const ParallelPlan& plan);

// d16 t8 p8 v3, micro-batch 1 x 96, selective recompute, ZeRO-1, fp16.
EstimateRequest Gpt3Request(const ModelSpec& m) {
  return Request(m, "a100-80g", 8, 1024, 1536, {16, 8, 8, 1, 96, 3, 1, Recompute::kSelective, 1, Precision::kFp16});
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

EstimateRequest Request(const ModelSpec& m, const char* gpu, int gpus_per_node, int gpus, int batch,
                        const ParallelPlan& plan) {
  EstimateRequest r;
  r.model = &m;
  r.topology = *MakeTopology(**FindGpu(gpu), gpus_per_node, 0);
  r.gpus = gpus;
  r.global_batch = batch;
  r.plan = plan;
  return r;
}

void BM_EstimateMoe(benchmark::State& state) {
  const ModelSpec& m = **FindModel("moe__27B");
  EstimateRequest r = Request(m, "a40", 2, 16, 512, {16, 1, 1, 4, 8, 1, 16, Recompute::kFull, 1, Precision::kFp16});
  Estimator est;
  for (auto _ : state) benchmark::DoNotOptimize(est.RunUnchecked(r));
}
BENCHMARK(BM_EstimateMoe);

void BM_EstimateWideResnet(benchmark::State& state) {
  const ModelSpec& m = **FindModel("wide_resnet__13B");
  EstimateRequest r = Request(m, "a100-40g", 4, 16, 1024, {4, 1, 4, 8, 32, 1, 1, Recompute::kFull, 1, Precision::kFp32});
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

// A belief's best-plan search as the simulator runs it on the Arena
// artifact's traces (issue 40): a CNN (Wide-ResNet 4B, its heaviest
// searches on Venus) on 1 to 64 A40s two per node, global batch 256, the
// best plan only, the layer costs of earlier searches in the memo.
void BM_PlanBestArenaCnn(benchmark::State& state) {
  const ModelSpec& m = **FindModel("wide_resnet__4B");
  PlanRequest req;
  req.model = &m;
  req.topology = *MakeTopology(**FindGpu("a40"), 2, 0);
  req.gpus = static_cast<int>(state.range(0));
  req.global_batch = 256;
  req.precision = m.default_precision;
  req.top_k = 1;
  EstimateMemo memo;
  if (state.range(1)) req.memo = &memo;
  RunPlanBench(state, req);
}
BENCHMARK(BM_PlanBestArenaCnn)->ArgsProduct({{1, 8, 32, 64}, {0, 1}})->Unit(benchmark::kMicrosecond);

// One hand-over to HelperThread and back (Start + Wait of an empty piece):
// what splitting work between two threads costs (helper_thread.h).
void BM_HelperThreadHandOver(benchmark::State& state) {
  HelperThread helper;
  for (auto _ : state) {
    helper.Start([] {});
    helper.Wait();
  }
}
BENCHMARK(BM_HelperThreadHandOver)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessel

BENCHMARK_MAIN();
