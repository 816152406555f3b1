// Speed budgets of issue 4, measured (never asserted in tests):
//   one 160-job Pollux workload with the pollux policy on pollux-64 <= 30 s
//   (the Pollux artifact's simulator: up to 30 minutes);
//   one sia round with 1,000 active jobs on a 2,000-GPU cluster <= 1 s.
// Plus the pieces: one throughput-model fit, one agent batch choice.
// Needs the shared data (TESSEL_DATA, default ../shared/data).
// Run: build/tessel_goodput_bench (or scripts/bench.sh).
#include <benchmark/benchmark.h>

#include "bench_data.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "goodput/app_profile.h"
#include "goodput/goodput.h"
#include "policy/placement.h"
#include "policy/policy.h"
#include "policy/sia.h"
#include "sim/engine.h"
#include "workload/trace.h"

namespace tessel {
namespace {

using bench::DataDir;
using bench::HaveData;

// A whole Pollux workload (Pollux's own workload-N, 160 jobs) per iteration.
void BM_PolluxWorkload(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  std::string path = DataDir() + "/pollux/workloads/workload-" + std::to_string(n) + ".csv";
  if (!HaveData(state, path)) return;
  Workload w = LoadTrace(path, TraceFormat::kAuto, TraceOptions{}).value();
  auto apps = goodput::AppCatalog::Load(w.apps_dir).value();
  Cluster cluster = LoadCluster("pollux-64").value();
  SimConfig config;
  config.round = Seconds(60);
  config.reconfig.restart_overhead_s = 30;
  config.reconfig.start_overhead_s = 30;
  for (auto _ : state) {
    auto policy = PolicyRegistry::Builtin().Create("pollux", PolicyContext{}).value();
    EstimatorThroughput belief(cluster, policy->traits().plan_mode);
    Simulator sim(cluster, w, *policy, belief, belief, config);
    sim.set_apps(&apps);
    auto r = sim.Run();
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    state.counters["jobs"] = static_cast<double>(w.jobs.size());
    state.counters["finished"] = r->summary.jobs_finished;
    state.counters["decisions"] = static_cast<double>(r->summary.decisions);
    state.counters["avg_jct_s"] = r->summary.avg_jct_s;
    // Whole-run wall time per policy decision (engine work included): an
    // upper bound on one pollux re-allocation.
    state.counters["ms_per_decision"] = 1e3 * r->summary.sim_wall_time_s / std::max<int64_t>(1, r->summary.decisions);
  }
}
BENCHMARK(BM_PolluxWorkload)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1);

// One sia round: 1,000 active jobs (half running, half waiting) with agents
// part-way through their runs, on 2,000 GPUs of three types (100 nodes of
// 4 x T4, 100 of 8 x A100, 100 of 8 x RTX 2080 Ti).
void BM_SiaRound(benchmark::State& state) {
  const int njobs = static_cast<int>(state.range(0));
  std::string apps_dir = DataDir() + "/sia/apps";
  if (!HaveData(state, apps_dir)) return;
  auto apps = goodput::AppCatalog::Load(apps_dir).value();
  std::string yaml =
      "name: sia-2000\npools:\n"
      "  - {name: t4, gpu: t4, nodes: 100, node_type: aws-g4dn-12xl}\n"
      "  - {name: a100, gpu: a100-40g, nodes: 100, node_type: dgx-a100-40g}\n"
      "  - {name: rtx, gpu: rtx2080ti, nodes: 100, node_type: rtx2080ti-8}\n";
  Cluster cluster = Cluster::Build(ParseClusterYaml(yaml, "sia-2000").value()).value();
  const int ntypes = static_cast<int>(cluster.types().size());
  std::vector<std::string> names = {"cifar10", "imagenet", "bert", "deepspeech2", "yolov3"};

  std::vector<JobSpec> specs(njobs);
  std::vector<AgentReport> reports(njobs);
  std::vector<JobView> views(njobs);
  std::vector<int> free(cluster.nodes().size());
  std::vector<uint8_t> up(cluster.nodes().size(), 1);
  for (const ClusterNode& node : cluster.nodes()) free[node.id] = node.gpus;
  Snapshot base;
  base.cluster = &cluster;
  base.free_gpus = free;
  base.node_up = up;
  FreeMap fm(base);
  for (int i = 0; i < njobs; ++i) {
    const goodput::AppProfile& app = *apps.Find(names[i % names.size()]);
    JobSpec& s = specs[i];
    s.id = "j" + std::to_string(i);
    s.app = app.name();
    s.model = "resnet-50";
    s.global_batch = app.init_batch();
    s.submit = Seconds(i);
    s.min_gpus = 1;
    s.max_gpus = 64;
    s.adaptive_batch = true;
    AgentReport& r = reports[i];
    r.limits = app.limits();
    r.adaptive = true;
    r.fixed_batch = app.init_batch();
    r.grad = app.GradStatsAt(app.init_batch(), (i * 7) % app.max_epochs());
    r.params.assign(ntypes, std::nullopt);
    r.max_replicas.assign(ntypes, 0);
    // Its single-GPU profile on every type, and for some jobs steps on more
    // GPUs of one type (1, 2, 4, 8 or 16 replicas).
    int wide = 1 << (i % 5);
    for (int t = 0; t < ntypes; ++t) {
      const std::string& gpu = cluster.types()[t].gpu->name;
      std::vector<goodput::StepObservation> obs;
      auto add = [&](int nodes, int replicas, int per_node, int bsz) {
        std::vector<int> placement(nodes, per_node);
        goodput::StepTime st = app.Throughput(gpu, placement, bsz).value();
        obs.push_back({nodes, replicas, static_cast<double>(bsz), std::max(1e-6, st.step_s - st.sync_s), st.step_s});
      };
      for (int b : {app.min_local_bsz(), app.max_local_bsz()}) add(1, 1, 1, b);
      int gpn = cluster.types()[t].max_gpus_per_node;
      if (t == i % ntypes && wide > 1) {
        int nodes = (wide + gpn - 1) / gpn;
        add(nodes, wide, wide / nodes, app.min_local_bsz());
      }
      r.params[t] = goodput::FitThroughputParams(obs).value().params;
      r.max_replicas[t] = t == i % ntypes ? wide : 1;
    }
    JobView& v = views[i];
    v.index = i;
    v.spec = &s;
    v.agent = &r;
    v.attained_gpu_s_by_type.assign(ntypes, 0);
    if (i % 2 == 0) {
      // Running on its widest type.
      auto a = fm.Place(i % ntypes, std::min(wide, 8));
      if (a) {
        v.alloc = *a;
        v.phase = JobPhase::kRunning;
        v.first_start = Seconds(i);
      }
    }
  }
  for (const ClusterNode& node : cluster.nodes()) free[node.id] = fm.free_on(node.id);
  EstimatorThroughput belief(cluster, PlanMode::kDataParallel);
  std::vector<const JobView*> active;
  for (const JobView& v : views) active.push_back(&v);
  Snapshot snap = base;
  snap.now = Seconds(3600);
  snap.jobs = active;
  snap.belief = &belief;
  snap.round_length = Seconds(60);
  SiaParams params;
  for (auto _ : state) {
    SiaRoundStats stats;
    auto d = SiaDecide(snap, params, &stats);
    if (!d.ok()) {
      state.SkipWithError(d.status().ToString().c_str());
      return;
    }
    state.counters["jobs"] = njobs;
    state.counters["gpus"] = cluster.total_gpus();
    state.counters["variables"] = stats.variables;
    state.counters["hit_limit"] = stats.hit_time_limit;
    state.counters["rounded"] = stats.rounded_jobs;
    state.counters["assigned"] = static_cast<double>(d->assign.size());
  }
}
BENCHMARK(BM_SiaRound)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(3);

// One fit of Pollux's throughput model to 30 measured configurations.
void BM_FitThroughput(benchmark::State& state) {
  std::string dir = DataDir() + "/pollux/apps/cifar10";
  if (!HaveData(state, dir)) return;
  auto app = goodput::AppProfile::Load(dir).value();
  std::vector<goodput::StepObservation> obs;
  const std::vector<std::vector<int>> placements = {{1}, {2}, {4}, {2, 2}, {4, 4}, {4, 4, 4, 4}};
  for (const auto& p : placements) {
    int replicas = 0;
    for (int g : p) replicas += g;
    for (int b : {32, 64, 128, 256, 512}) {
      goodput::StepTime st = app.Throughput("t4", p, b).value();
      obs.push_back({static_cast<int>(p.size()), replicas, static_cast<double>(b), st.step_s - st.sync_s, st.step_s});
    }
  }
  for (auto _ : state) benchmark::DoNotOptimize(goodput::FitThroughputParams(obs));
  state.counters["observations"] = static_cast<double>(obs.size());
}
BENCHMARK(BM_FitThroughput)->Unit(benchmark::kMicrosecond);

// The agent's batch choice on one allocation.
void BM_AgentOptimize(benchmark::State& state) {
  goodput::ThroughputParams p;
  p.alpha_c = 0.02;
  p.beta_c = 4e-4;
  p.alpha_r = 0.01;
  p.beta_r = 0.002;
  p.alpha_n = 0.05;
  p.beta_n = 0.01;
  p.gamma = 1.5;
  goodput::GoodputFunction fn(p, {1.0, 20.0}, {128, 4096, 32, 512});
  int replicas = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(fn.Optimize((replicas + 3) / 4, replicas));
}
BENCHMARK(BM_AgentOptimize)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessel

BENCHMARK_MAIN();
