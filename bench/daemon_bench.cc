// The daemon's speed budget (issue 11): one scheduling decision with 1,000
// pending jobs on a 1,000-GPU inventory, at most 1 s. Measures a whole step
// of the daemon's loop — the Slurm poll (sinfo/squeue answered by a stub
// runner from a recorded listing scaled to 250 nodes x 4 GPUs), the
// snapshot, arena's decision, the contract check and the Slurm backend
// applying it (launch files, batch scripts, store writes with fsync, one
// sbatch per launched job, answered by the stub) — against a fresh SQLite
// store each iteration.
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cluster/slurm_backend.h"
#include "policy/policy.h"
#include "sched/clock.h"
#include "sched/loop.h"
#include "workload/job_spec.h"

namespace tessel {
namespace {
namespace fs = std::filesystem;

// Answers sinfo with `nodes` a100 nodes of 4 GPUs, squeue with no jobs,
// sbatch with increasing ids.
class StubSlurm : public CommandRunner {
 public:
  explicit StubSlurm(int nodes) {
    std::ifstream f(std::string(TESSEL_SOURCE_DIR) + "/src/cluster/testdata/slurm/sinfo_idle.json");
    nlohmann::json j = nlohmann::json::parse(f);
    nlohmann::json tmpl = j["nodes"][0];
    j["nodes"] = nlohmann::json::array();
    for (int i = 1; i <= nodes; ++i) {
      nlohmann::json n = tmpl;
      n["name"] = "n" + std::to_string(i);
      n["gres"] = "gpu:a100:4";
      n["gres_used"] = "gpu:a100:0(IDX:N/A)";
      j["nodes"].push_back(n);
    }
    sinfo_ = j.dump();
  }
  Result<CommandResult> Run(const CommandRequest& r) override {
    CommandResult out;
    out.exit_code = 0;
    if (r.argv[0] == "sinfo") out.stdout_text = sinfo_;
    if (r.argv[0] == "squeue") out.stdout_text = R"({"meta": {}, "errors": [], "jobs": []})";
    if (r.argv[0] == "sbatch") out.stdout_text = std::to_string(++next_id_) + "\n";
    return out;
  }

 private:
  std::string sinfo_;
  std::atomic<int64_t> next_id_{0};
};

void BM_DaemonDecision1000(benchmark::State& state) {
  const int kNodes = 250, kJobs = 1000;
  StubSlurm stub(kNodes);
  SlurmClient slurm(stub);
  auto inv = DiscoverInventory(slurm.ListNodes().value(), {{"a100", "a100-80g"}}).value();
  std::string dir = fs::temp_directory_path().string() + "/tessel_daemon_bench";
  const char* kModels[] = {"gpt3-350m", "gpt3-1.3b", "gpt3-2.7b", "bert-large"};
  int64_t launched = 0;
  double state_writes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto store = Store::Open(dir + "/tessel.db").value();
    for (int i = 0; i < kJobs; ++i) {
      std::string spec = std::string("name: j") + std::to_string(i) + "\nmodel: " + kModels[i % 4] +
                         "\nglobal_batch: " + std::to_string(32 << (i % 3)) + "\niterations: " +
                         std::to_string(1000 + 37 * i) + "\ncommand: [/bin/true]\ngpus: " +
                         std::to_string(1 << (i % 4)) + "\n";
      auto parsed = ParseJobSpec(spec, "j.yaml", dir).value();
      NewJob n;
      n.name = parsed.name;
      n.user = "u";
      n.spec_yaml = spec;
      n.spec_json = DaemonJobSpecToJson(parsed);
      n.submitted_us = Seconds(1 + i);
      store->AddJob(n).value();
    }
    auto policy = PolicyRegistry::Builtin().Create("arena", PolicyContext{}).value();
    EstimatorThroughput est(inv.cluster, policy->traits().plan_mode);
    CorrectedThroughput belief(est);
    SlurmBackendOptions o;
    o.state_dir = dir;
    o.tessel_binary = "/usr/bin/tessel";
    SlurmBackend backend(slurm, *store, inv, belief, policy->traits(), o);
    SystemClock clock;
    (void)backend.Recover(clock.Now());
    SchedulerLoop loop(*policy, backend, clock, LoopConfig{});
    state.ResumeTiming();
    auto r = loop.Step();  // poll, snapshot, decide, check, apply
    benchmark::DoNotOptimize(r);
    state.PauseTiming();
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    launched = store->CountByState().value()[JobState::kStarting];
    state_writes = loop.last_decision_s();
    state.ResumeTiming();
  }
  state.counters["jobs_launched"] = static_cast<double>(launched);
  state.counters["decision_s"] = state_writes;
  fs::remove_all(dir);
}
BENCHMARK(BM_DaemonDecision1000)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace tessel

BENCHMARK_MAIN();
