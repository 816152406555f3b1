// Speed budgets of issue 3, measured (never asserted in tests):
//   all ten ITP clusters' traces (69,351 jobs) on arena-1280 with FCFS <= 10 s;
//   Pollux's philly.csv (82,247 jobs) on arena-1280 with FCFS <= 10 s;
//   Gavel on a 1,000-job trace <= 60 s (and one Gavel LP alone).
// Plus how time grows with jobs (synthetic traces of 1k..64k jobs) and with
// GPUs (arena-1280 scaled 1x..8x). Each iteration is one whole simulation,
// trace already loaded (load times are reported separately).
// Needs the shared data (TESSEL_DATA, default ../shared/data); skips those
// benchmarks without it.
// Run: build/tessel_sim_bench (or scripts/bench.sh).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "policy/gavel.h"
#include "policy/policy.h"
#include "sim/engine.h"
#include "workload/gen_trace.h"
#include "workload/trace.h"

namespace tessel {
namespace {

std::string DataDir() {
  const char* env = std::getenv("TESSEL_DATA");
  return env ? env : "../shared/data";
}

bool HaveData(benchmark::State& state, const std::string& path) {
  if (std::filesystem::exists(path)) return true;
  state.SkipWithError(("data not found: " + path + " (set TESSEL_DATA)").c_str());
  return false;
}

// One whole simulation per iteration; counters: jobs, simulated days, events.
void RunSim(benchmark::State& state, const Cluster& cluster, const Workload& w, const std::string& policy_spec) {
  for (auto _ : state) {
    auto policy = PolicyRegistry::Builtin().Create(policy_spec, PolicyContext{}).value();
    EstimatorThroughput belief(cluster, policy->traits().plan_mode);
    Simulator sim(cluster, w, *policy, belief, belief, SimConfig{});
    auto r = sim.Run();
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    state.counters["jobs"] = static_cast<double>(w.jobs.size());
    state.counters["finished"] = r->summary.jobs_finished;
    state.counters["events"] = static_cast<double>(r->summary.events);
    state.counters["decisions"] = static_cast<double>(r->summary.decisions);
    state.counters["sim_days"] = r->summary.makespan_s / 86400;
    state.counters["gpus"] = cluster.total_gpus();
  }
}

void BM_LoadItp(benchmark::State& state) {
  std::string path = DataDir() + "/itp";
  if (!HaveData(state, path)) return;
  for (auto _ : state) benchmark::DoNotOptimize(LoadTrace(path, TraceFormat::kItp, TraceOptions{}));
}
BENCHMARK(BM_LoadItp)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_FcfsItpArena1280(benchmark::State& state) {
  std::string path = DataDir() + "/itp";
  if (!HaveData(state, path)) return;
  Workload w = LoadTrace(path, TraceFormat::kItp, TraceOptions{}).value();
  Cluster c = LoadCluster("arena-1280").value();
  RunSim(state, c, w, "fcfs");
}
BENCHMARK(BM_FcfsItpArena1280)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_FcfsPhillyArena1280(benchmark::State& state) {
  std::string path = DataDir() + "/pollux/philly.csv";
  if (!HaveData(state, path)) return;
  Workload w = LoadTrace(path, TraceFormat::kPhilly, TraceOptions{}).value();
  Cluster c = LoadCluster("arena-1280").value();
  RunSim(state, c, w, "fcfs");
}
BENCHMARK(BM_FcfsPhillyArena1280)->Unit(benchmark::kMillisecond)->Iterations(3);

// Gavel on the first 1,000 jobs of Arena's Philly-derived LLM trace.
void BM_Gavel1000Arena1280(benchmark::State& state) {
  std::string path = DataDir() + "/arena/traces/simulate_trace_philly.csv";
  if (!HaveData(state, path)) return;
  TraceOptions opts;
  opts.limit = 1000;
  Workload w = LoadTrace(path, TraceFormat::kArena, opts).value();
  Cluster c = LoadCluster("arena-1280").value();
  RunSim(state, c, w, state.range(0) == 0 ? "gavel" : "gavel-throughput");
}
BENCHMARK(BM_Gavel1000Arena1280)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(1);

// One Gavel LP: `range(0)` jobs, all different (no two share a row), over
// arena-1280's 4 GPU types; range(1) 0 = max-min, 1 = max-sum.
void BM_GavelLpSolve(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<GavelLpJob> jobs(n);
  uint64_t x = 12345;
  auto next = [&x] {  // a fixed pseudo-random stream in (0.5, 1.5)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return 0.5 + static_cast<double>(x >> 11) / 9007199254740992.0;
  };
  for (int j = 0; j < n; ++j) {
    jobs[j].scale = 1 << (j % 4);
    jobs[j].throughput = {2.0 * next(), 1.5 * next(), 1.0 * next(), 0.7 * next()};
  }
  const std::vector<int> capacity = {320, 320, 320, 320};
  GavelObjective objective = state.range(1) == 0 ? GavelObjective::kMaxMinFairness : GavelObjective::kMaxSumThroughput;
  for (auto _ : state) {
    auto r = SolveGavelLp(objective, jobs, capacity);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->objective);
  }
}
BENCHMARK(BM_GavelLpSolve)
    ->ArgsProduct({{100, 300, 1000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

// Growth with jobs: synthetic ITP-like traces at a fixed load per GPU.
void BM_FcfsScaleJobs(benchmark::State& state) {
  GenTraceOptions g;
  g.seed = 1;
  g.profile = "itp";
  g.jobs = static_cast<int>(state.range(0));
  Workload w = GenerateTrace(g).value();
  Cluster c = LoadCluster("arena-1280").value();
  RunSim(state, c, w, "fcfs:backfill=first-fit");
}
BENCHMARK(BM_FcfsScaleJobs)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Unit(benchmark::kMillisecond)->Iterations(1);

// Growth with GPUs: arena-1280's pools times k, arrivals k times denser.
void BM_FcfsScaleGpus(benchmark::State& state) {
  int k = static_cast<int>(state.range(0));
  ClusterSpec spec = ResolveClusterSpec("arena-1280").value();
  for (NodePool& p : spec.pools) p.nodes *= k;
  Cluster c = Cluster::Build(spec).value();
  GenTraceOptions g;
  g.seed = 1;
  g.profile = "itp";
  g.jobs = 16384;
  g.arrival_rate_per_hour = 48.0 * k;
  Workload w = GenerateTrace(g).value();
  RunSim(state, c, w, "fcfs:backfill=first-fit");
}
BENCHMARK(BM_FcfsScaleGpus)->RangeMultiplier(2)->Range(1, 8)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace tessel

BENCHMARK_MAIN();
