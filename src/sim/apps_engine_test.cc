// The simulator playing jobs from the Pollux/Sia application profiles (the
// `apps` truth source): progress in initial-batch steps, epochs, the batch
// agent under goodput and non-goodput policies, Sia's bootstrapping.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "goodput/app_profile.h"
#include "goodput/goodput.h"
#include "policy/policy.h"

namespace tessel {
namespace {

using ::tessel::testing::DataDir;

struct AppRun {
  SimResult result;
  std::string log;
  bool ok = false;
};

SimConfig AppConfig() {
  SimConfig c;
  c.round = Seconds(60);  // the CLI's default with application profiles
  c.reconfig.start_overhead_s = 30;
  c.reconfig.restart_overhead_s = 30;
  return c;
}

AppRun RunApps(const Cluster& cluster, const Workload& w, Policy& policy, const goodput::AppCatalog& apps,
               SimConfig config = AppConfig()) {
  EstimatorThroughput belief(cluster, policy.traits().plan_mode);
  Simulator sim(cluster, w, policy, belief, belief, config);
  sim.set_apps(&apps);
  std::ostringstream log;
  sim.set_event_log(&log);
  auto r = sim.Run();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  AppRun out;
  out.ok = r.ok();
  if (r.ok()) out.result = std::move(*r);
  out.log = log.str();
  return out;
}

AppRun RunApps(const Cluster& cluster, const Workload& w, const std::string& policy_spec,
               const goodput::AppCatalog& apps, SimConfig config = AppConfig()) {
  auto policy = PolicyRegistry::Builtin().Create(policy_spec, PolicyContext{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  if (!policy.ok()) return {};
  return RunApps(cluster, w, **policy, apps, config);
}

JobSpec AppJob(std::string id, SimTime submit, const std::string& app, int batch, int gpus,
               const goodput::AppProfile& profile) {
  JobSpec j;
  j.id = std::move(id);
  j.submit = submit;
  j.model = "resnet-50";
  j.global_batch = batch;
  j.iterations = profile.TargetProgress();
  j.requested_gpus = gpus;
  j.min_gpus = 1;
  j.max_gpus = 64;
  j.adaptive_batch = true;
  j.app = app;
  return j;
}

// Every batch the log shows a job at ("start", "restart" and "epoch"
// lines), in order.
std::map<std::string, std::vector<int>> BatchesByJob(const std::string& log) {
  std::map<std::string, std::vector<int>> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" start job=") == std::string::npos && line.find(" restart job=") == std::string::npos &&
        line.find(" epoch job=") == std::string::npos)
      continue;
    size_t j = line.find("job=");
    size_t b = line.find(" batch=");
    if (j == std::string::npos || b == std::string::npos) continue;
    std::string id = line.substr(j + 4, line.find(' ', j) - (j + 4));
    out[id].push_back(std::stoi(line.substr(b + 7)));
  }
  return out;
}

class AppsEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(DataDir() + "/pollux/apps/cifar10")) {
      GTEST_SKIP() << "no Pollux application profiles under " << DataDir();
    }
  }
  static const goodput::AppCatalog& Pollux() {
    static const goodput::AppCatalog* cat = [] {
      auto c = goodput::AppCatalog::Load(DataDir() + "/pollux/apps");
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      return c.ok() ? new goodput::AppCatalog(std::move(*c)) : nullptr;
    }();
    return *cat;
  }
  static const goodput::AppCatalog& Sia() {
    static const goodput::AppCatalog* cat = [] {
      auto c = goodput::AppCatalog::Load(DataDir() + "/sia/apps");
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      return c.ok() ? new goodput::AppCatalog(std::move(*c)) : nullptr;
    }();
    return *cat;
  }

  // Three CIFAR-10 jobs and an NCF job, at batch sizes that split evenly
  // over their requested GPUs.
  Workload PolluxMix() {
    const goodput::AppProfile& cifar = *Pollux().Find("cifar10");
    const goodput::AppProfile& ncf = *Pollux().Find("ncf");
    Workload w;
    w.name = "apps-mix";
    w.jobs = {AppJob("c0", 0, "cifar10", 128, 1, cifar), AppJob("c1", Seconds(30), "cifar10", 256, 2, cifar),
              AppJob("n0", Seconds(60), "ncf", 1024, 1, ncf), AppJob("c2", Seconds(90), "cifar10", 512, 4, cifar)};
    return w;
  }
};

TEST_F(AppsEngineTest, PolluxAndTiresiasFinishAtTheProfilesTarget) {
  TESSEL_REQUIRE_DATA();
  Cluster cluster = LoadCluster("pollux-64").value();
  Workload w = PolluxMix();
  for (const char* policy : {"pollux", "tiresias"}) {
    SCOPED_TRACE(policy);
    AppRun run = RunApps(cluster, w, policy, Pollux());
    ASSERT_TRUE(run.ok);
    const SimResult& r = run.result;
    EXPECT_EQ(r.summary.jobs_finished, 4);
    EXPECT_EQ(r.summary.truth.rfind("apps", 0), 0u) << r.summary.truth;
    ASSERT_EQ(r.jobs.size(), w.jobs.size());
    for (size_t i = 0; i < w.jobs.size(); ++i) {
      const JobRecord& rec = r.jobs[i];
      const double target = Pollux().Find(w.jobs[i].app)->TargetProgress();
      EXPECT_EQ(rec.outcome, JobOutcome::kFinished) << rec.id;
      EXPECT_DOUBLE_EQ(rec.total_iterations, target) << rec.id;
      EXPECT_DOUBLE_EQ(rec.done_iterations, target) << rec.id;
      EXPECT_GT(rec.finish, rec.submit) << rec.id;
    }
    EXPECT_NE(run.log.find("epoch job="), std::string::npos);
    std::map<std::string, std::vector<int>> batches = BatchesByJob(run.log);
    ASSERT_EQ(batches.size(), 4u);
    if (std::string(policy) == "pollux") {
      // The agents adapt: some CIFAR-10 job runs at a batch other than the
      // one it started with.
      bool adapted = false;
      for (const char* id : {"c0", "c1", "c2"}) {
        for (int b : batches[id]) adapted = adapted || b != batches[id].front();
      }
      EXPECT_TRUE(adapted) << run.log.substr(0, 4000);
      // NCF is pinned to the artifact's batch under goodput policies.
      for (int b : batches["n0"]) EXPECT_EQ(b, 32768);
    } else {
      // Fixed batches: every line shows the trace's batch.
      for (const JobSpec& j : w.jobs) {
        for (int b : batches[j.id]) EXPECT_EQ(b, j.global_batch) << j.id;
      }
    }
  }
}

// --autoscale: a burst of elastic jobs on a cluster started at one node
// makes Pollux's utility rise and the cluster grow (nodes join after the
// boot delay); once the burst is done the idle cluster shrinks back to one
// node before a late job arrives; every job finishes, no GPU is used on a
// node powered down, and the powered node-hours are fewer than the whole
// cluster's over the run.
TEST_F(AppsEngineTest, AutoscaleGrowsUnderABurstAndShrinksWhenIdle) {
  TESSEL_REQUIRE_DATA();
  Cluster cluster = LoadCluster("pollux-64").value();
  const goodput::AppProfile& cifar = *Pollux().Find("cifar10");
  Workload w;
  w.name = "burst";
  for (int i = 0; i < 8; ++i) w.jobs.push_back(AppJob("b" + std::to_string(i), Seconds(10 * i), "cifar10", 128, 1, cifar));
  w.jobs.push_back(AppJob("late", Seconds(12 * 3600), "cifar10", 128, 1, cifar));
  SimConfig c = AppConfig();
  c.autoscale.min_nodes = 1;
  c.autoscale.max_nodes = 16;
  c.autoscale.boot_delay_s = 120;
  AppRun run = RunApps(cluster, w, "pollux", Pollux(), c);
  ASSERT_TRUE(run.ok);
  const Summary& s = run.result.summary;
  EXPECT_EQ(s.jobs_finished, 9);
  EXPECT_GT(s.autoscale_changes, 0);
  EXPECT_GT(s.node_hours, 0);
  EXPECT_LT(s.node_hours, 16 * s.makespan_s / 3600);
  EXPECT_NE(run.log.find("power-up node="), std::string::npos);
  EXPECT_NE(run.log.find("power-down node="), std::string::npos);
  // A node powered up at t joins at t + 120 s.
  size_t up = run.log.find("power-up node=1");
  size_t boot = run.log.find(" boot node=1");
  ASSERT_NE(up, std::string::npos);
  ASSERT_NE(boot, std::string::npos);
  double t_up = std::stod(run.log.substr(run.log.rfind('\n', up) + 1));
  double t_boot = std::stod(run.log.substr(run.log.rfind('\n', boot) + 1));
  EXPECT_DOUBLE_EQ(t_boot - t_up, 120);
  int most = 0, fewest_after_growth = 16;
  for (const TimelinePoint& p : run.result.timeline) {
    EXPECT_LE(p.allocated_gpus + p.down_gpus, 64) << "at " << ToSeconds(p.time);
    int powered_nodes = 16 - p.down_gpus / 4;
    EXPECT_GE(powered_nodes, 1);
    most = std::max(most, powered_nodes);
    if (most > 1 && p.time < Seconds(12 * 3600)) fewest_after_growth = std::min(fewest_after_growth, powered_nodes);
  }
  EXPECT_GT(most, 1);
  EXPECT_EQ(fewest_after_growth, 1);  // shrank back while idle, before the late job
}

TEST_F(AppsEngineTest, RunsAreByteIdentical) {
  TESSEL_REQUIRE_DATA();
  Cluster cluster = LoadCluster("pollux-64").value();
  Workload w = PolluxMix();
  AppRun one = RunApps(cluster, w, "pollux", Pollux());
  AppRun two = RunApps(cluster, w, "pollux", Pollux());
  ASSERT_TRUE(one.ok && two.ok);
  EXPECT_FALSE(one.log.empty());
  EXPECT_EQ(one.log, two.log);
  ASSERT_EQ(one.result.jobs.size(), two.result.jobs.size());
  for (size_t i = 0; i < one.result.jobs.size(); ++i) EXPECT_EQ(one.result.jobs[i].finish, two.result.jobs[i].finish);
}

// One CIFAR-10 job alone on one T4 at a fixed batch of 256 (1 accumulation
// step of 128): its JCT is the start overhead plus, epoch by epoch, the
// epoch's progress x the step time / the step's gain at that epoch's
// gradient statistics.
TEST_F(AppsEngineTest, SoloJobTakesTheSumOverEpochs) {
  TESSEL_REQUIRE_DATA();
  Cluster cluster = LoadCluster("pollux-64").value();
  const goodput::AppProfile& cifar = *Pollux().Find("cifar10");
  const int batch = 256;
  Workload w;
  w.name = "solo";
  w.jobs = {AppJob("solo", Seconds(5), "cifar10", batch, 1, cifar)};
  SimConfig config = AppConfig();
  AppRun run = RunApps(cluster, w, "fcfs", Pollux(), config);
  ASSERT_TRUE(run.ok);
  ASSERT_EQ(run.result.jobs.size(), 1u);
  const JobRecord& rec = run.result.jobs[0];
  ASSERT_EQ(rec.outcome, JobOutcome::kFinished);

  // The split the engine must choose: 128 per micro-step, one extra
  // micro-step (the gradient noise needs two on one GPU).
  const int atomic = 128, accum = 1;
  std::vector<int> one = {1};
  auto st = cifar.Throughput("t4", one, atomic);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  const double step = st->step_s + accum * (st->step_s - st->sync_s);
  double predicted = 0;
  for (int e = 0; e < cifar.max_epochs(); ++e) {
    const double work = cifar.ProgressAt(e + 1) - cifar.ProgressAt(e);
    const double gain = goodput::Gain(cifar.GradStatsAt(batch, e), cifar.init_batch(), batch);
    ASSERT_GT(gain, 1.0);  // 256 > 128: each step is worth more than one
    ASSERT_LE(gain, 2.0);
    predicted += work * step / gain;
  }
  const double jct = rec.jct_s();
  const double want = config.reconfig.start_overhead_s + predicted;
  std::printf("[ measured ] solo cifar10: jct %.6f s, predicted %.6f s, diff %.3g s\n", jct, want, jct - want);
  EXPECT_NEAR(jct, want, 0.01 * want);
  // Round-up to microseconds, once per epoch, is all that separates them.
  EXPECT_GE(jct, want - 1e-6);
  EXPECT_LE(jct, want + 1e-6 * (cifar.max_epochs() + 2));
  // The isolated time (finish-time fairness) is the same sum.
  EXPECT_NEAR(rec.isolated_s, predicted, 1e-6 * predicted);
  // The log shows the split.
  EXPECT_NE(run.log.find("start job=solo on=t4 x1 on n0:1 batch=256 atomic=128 accum=1"), std::string::npos)
      << run.log.substr(0, 400);
}

// KNOWN BUG (see the report): the agent's first model is fitted to the one
// step it has measured (the engine's Observe -> goodput::
// FitThroughputParams). With one observation the fit must at least
// reproduce it (alpha_c is pinned to half the compute time, so beta_c
// takes the other half). For cifar10 at its initial batch (128 on one T4,
// 0.103 s) the fit stops after 200 iterations with beta_c at its 1e-8
// bound and predicts 0.051 s (log error 0.69); the agent then believes a
// step costs the same at any batch and, given a second GPU, picks batch
// 2020 (atomic 1010) at statistical efficiency 0.096 (pollux log, t=120 s).
TEST_F(AppsEngineTest, AgentModelFromItsFirstStepReproducesIt) {
  TESSEL_REQUIRE_DATA();
  std::string failures;
  int checked = 0;
  for (const std::string& name : Pollux().names()) {
    const goodput::AppProfile& p = *Pollux().Find(name);
    const int atomic = std::min(p.init_batch(), p.max_local_bsz());
    std::vector<int> one = {1};
    auto st = p.Throughput("t4", one, atomic);
    ASSERT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    goodput::StepObservation o;
    o.nodes = 1;
    o.replicas = 1;
    o.atomic_bsz = atomic;
    o.step_time = st->step_s;
    o.accum_time = std::max(1e-9, st->step_s - st->sync_s);
    auto fit = goodput::FitThroughputParams(std::span<const goodput::StepObservation>(&o, 1));
    ASSERT_TRUE(fit.ok()) << name << ": " << fit.status().ToString();
    const double predicted = goodput::PredictStepTime(fit->params, 1, 1, atomic);
    ++checked;
    if (std::abs(predicted / o.step_time - 1) > 0.05) {
      char buf[256];
      std::snprintf(buf, sizeof buf, " %s@%d: measured %.4g s, model %.4g s (%s);", name.c_str(), atomic,
                    o.step_time, predicted, fit->params.ToString().c_str());
      failures += buf;
    }
  }
  EXPECT_EQ(checked, 6);
  if (!failures.empty()) {
    ADD_FAILURE() << "FitThroughputParams does not reproduce a single observation:" << failures;
  }
}

// A policy that wraps a built-in one and looks at what the agents report
// at every decision.
class ProbePolicy : public Policy {
 public:
  explicit ProbePolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  PolicyTraits traits() const override { return inner_->traits(); }
  Decision Decide(const Snapshot& snap) override {
    for (const JobView* j : snap.jobs) {
      if (j->agent == nullptr) continue;
      ++agent_views;
      if (seen.insert(j->index).second) {
        // First sight: the job has just arrived.
        int with_params = 0;
        for (const auto& p : j->agent->params) with_params += p.has_value() ? 1 : 0;
        params_at_arrival[j->index] = with_params;
        grad_known_at_arrival[j->index] = j->agent->grad.sqr > 0 || j->agent->grad.var > 0;
        EXPECT_EQ(j->agent->params.size(), snap.cluster->types().size());
      }
    }
    return inner_->Decide(snap);
  }
  int agent_views = 0;
  std::set<int> seen;
  std::map<int, int> params_at_arrival;  // job -> types with a model on arrival
  std::map<int, bool> grad_known_at_arrival;

 private:
  std::unique_ptr<Policy> inner_;
};

// Sia's bootstrapping profiles an arriving job on one GPU of every type;
// those steps measure the gradient noise too. Without it the agent's
// statistics would be {0, 0}, which goodput::Gain reads as perfect scaling:
// the policy would value large batches at efficiency 1 and the agent would
// start every adaptive job at its largest batch (cifar10: batch=4096
// atomic=1024 accum=1 on 2 A100s, as an earlier engine did).
TEST_F(AppsEngineTest, SiaProfilingAlsoMeasuresGradientStatistics) {
  TESSEL_REQUIRE_DATA();
  Cluster cluster = LoadCluster("sia-64").value();
  const goodput::AppProfile* cifar = Sia().Find("cifar10");
  ASSERT_NE(cifar, nullptr);
  Workload w;
  w.name = "sia-grad";
  w.jobs = {AppJob("c0", 0, "cifar10", 128, 1, *cifar)};
  auto inner = PolicyRegistry::Builtin().Create("sia", PolicyContext{});
  ASSERT_TRUE(inner.ok());
  ProbePolicy probe(std::move(*inner));
  AppRun run = RunApps(cluster, w, probe, Sia());
  ASSERT_TRUE(run.ok);
  ASSERT_EQ(probe.grad_known_at_arrival.size(), 1u);
  std::map<std::string, std::vector<int>> batches = BatchesByJob(run.log);
  ASSERT_FALSE(batches["c0"].empty());
  EXPECT_TRUE(probe.grad_known_at_arrival[0]) << "a Sia-profiled job arrives with gradient statistics {0, 0}";
  EXPECT_LT(batches["c0"].front(), cifar->max_batch()) << run.log.substr(0, 2000);
}

// Sia profiles each arriving job on one GPU of every type (so a model for
// every type before it first runs); Pollux does not. Sia then runs five
// Sia-format jobs to completion on sia-64 using more than one GPU type.
TEST_F(AppsEngineTest, SiaBootstrapsEveryTypeAndUsesSeveral) {
  TESSEL_REQUIRE_DATA();
  Cluster cluster = LoadCluster("sia-64").value();
  const goodput::AppCatalog& apps = Sia();
  Workload w;
  w.name = "sia-five";
  struct J {
    const char* id;
    double submit_s;
    const char* app;
    int batch;
    int gpus;
  };
  for (const J& j : {J{"c0", 0, "cifar10", 128, 1}, J{"c1", 20, "cifar10", 256, 2}, J{"n0", 40, "ncf", 256, 1},
                     J{"c2", 60, "cifar10", 512, 4}, J{"d0", 80, "deepspeech2", 20, 1}}) {
    const goodput::AppProfile* p = apps.Find(j.app);
    ASSERT_NE(p, nullptr) << j.app;
    w.jobs.push_back(AppJob(j.id, Seconds(j.submit_s), j.app, j.batch, j.gpus, *p));
  }
  const int ntypes = static_cast<int>(cluster.types().size());
  ASSERT_EQ(ntypes, 3);

  for (const char* spec : {"sia", "pollux"}) {
    SCOPED_TRACE(spec);
    auto inner = PolicyRegistry::Builtin().Create(spec, PolicyContext{});
    ASSERT_TRUE(inner.ok());
    ProbePolicy probe(std::move(*inner));
    AppRun run = RunApps(cluster, w, probe, apps);
    ASSERT_TRUE(run.ok);
    EXPECT_EQ(run.result.summary.jobs_finished, 5);
    ASSERT_EQ(probe.params_at_arrival.size(), 5u);
    for (const auto& [job, n] : probe.params_at_arrival) {
      if (std::string(spec) == "sia") {
        EXPECT_EQ(n, ntypes) << "job " << job << ": Sia profiles every type on arrival";
      } else {
        EXPECT_EQ(n, 0) << "job " << job << ": Pollux measures only where it runs";
      }
    }
    if (std::string(spec) == "sia") {
      std::set<int> types_used;
      for (const JobRecord& rec : run.result.jobs) {
        ASSERT_EQ(rec.gpu_s_by_type.size(), static_cast<size_t>(ntypes));
        for (int t = 0; t < ntypes; ++t)
          if (rec.gpu_s_by_type[t] > 0) types_used.insert(t);
      }
      EXPECT_GE(types_used.size(), 2u) << run.log.substr(0, 4000);
    }
  }
}

}  // namespace
}  // namespace tessel
