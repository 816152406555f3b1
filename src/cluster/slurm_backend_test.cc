// The Slurm backend's logic against recorded Slurm 22.05 outputs
// (testdata/slurm/), with FakeCommandRunner checking every command it runs.
#include "cluster/slurm_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cluster/fake_command_runner.h"
#include "cluster/faulty_disk_test_util.h"
#include "cluster/launch.h"
#include "workload/job_spec.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {
namespace fs = std::filesystem;

std::string Recorded(const std::string& name) {
  std::ifstream f(std::string(TESSEL_SOURCE_DIR) + "/src/cluster/testdata/slurm/" + name);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The recorded busy queue with job 1 renamed `tessel-<id>` (and the
// heterogeneous job 2/3 renamed `tessel-<other>`).
std::string QueueWith(int64_t id, int64_t other) {
  nlohmann::json q = nlohmann::json::parse(Recorded("squeue_busy.json"));
  for (auto& j : q["jobs"]) {
    if (j["job_id"] == 1) j["name"] = "tessel-" + std::to_string(id);
    if (j["job_id"] == 2 || j["job_id"] == 3) j["name"] = "tessel-" + std::to_string(other);
  }
  return q.dump();
}

// A queue where only the given jobs run (the recorded running job 1, renamed).
std::string RunningQueue(const std::vector<std::pair<int64_t, std::string>>& jobs) {
  nlohmann::json q = nlohmann::json::parse(Recorded("squeue_busy.json"));
  nlohmann::json tmpl;
  for (auto& j : q["jobs"])
    if (j["job_id"] == 1) tmpl = j;
  q["jobs"] = nlohmann::json::array();
  for (const auto& [id, name] : jobs) {
    nlohmann::json j = tmpl;
    j["job_id"] = id;
    j["name"] = name;
    q["jobs"].push_back(j);
  }
  return q.dump();
}

const std::map<std::string, std::string> kGpuMap = {{"a100", "a100-80g"}, {"v100", "v100-32g"}};

class SlurmBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/slurm_backend_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = Store::Open(dir_ + "/tessel.db").value();
    SlurmClient client(fake_);
    fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
    auto nodes = client.ListNodes();
    ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
    auto inv = DiscoverInventory(*nodes, kGpuMap);
    ASSERT_TRUE(inv.ok()) << inv.status().ToString();
    inv_ = std::make_unique<SlurmInventory>(std::move(*inv));
  }

  // A stored job from a valid spec of the example job.
  int64_t AddJob(int gpus, const std::string& more_yaml = "") {
    std::string spec = "name: t\nmodel: gpt3-350m\nglobal_batch: 8\niterations: 10\ncommand: [/bin/true]\ngpus: " +
                       std::to_string(gpus) + "\n" + more_yaml;
    auto parsed = ParseJobSpec(spec, "t.yaml", dir_);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    NewJob n;
    n.name = "t";
    n.user = "alice";
    n.spec_yaml = spec;
    n.spec_json = DaemonJobSpecToJson(*parsed);
    n.submitted_us = Seconds(1);
    return store_->AddJob(n).value();
  }

  SlurmBackendOptions Options() {
    SlurmBackendOptions o;
    o.state_dir = dir_;
    o.tessel_binary = "/opt/tessel";
    return o;
  }

  std::string dir_;
  FakeCommandRunner fake_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SlurmInventory> inv_;
};

TEST_F(SlurmBackendTest, DiscoversTypedNodesAndRefusesUnknownGpuTypes) {
  const Cluster& c = inv_->cluster;
  EXPECT_EQ(c.nodes().size(), 8u);
  EXPECT_EQ(c.total_gpus(), 16);
  ASSERT_GE(c.FindType("a100-80g"), 0);
  ASSERT_GE(c.FindType("v100-32g"), 0);
  EXPECT_EQ(inv_->names.front(), "n1");
  EXPECT_EQ(inv_->gres_types.front(), "a100");
  SlurmClient client(fake_);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  auto bad = DiscoverInventory(client.ListNodes().value(), {{"v100", "v100-32g"}, {"a100", "no-such-gpu"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--gpu-map a100=<catalog name>"), std::string::npos)
      << bad.status().message();
}

TEST_F(SlurmBackendTest, RecoverCancelsSlurmJobsTesselNoLongerWants) {
  // Job a: pending in the store, with a Slurm job under its name that the
  // store never recorded (the daemon died between sbatch and the store):
  // without a recorded allocation it cannot be adopted, so it is cancelled
  // and the job waits. Job b: finished in the store, but Slurm still runs a
  // job under its name: an orphan.
  int64_t a = AddJob(2);
  int64_t b = AddJob(1);
  ASSERT_TRUE(store_->Transition(b, JobState::kCancelled, Seconds(2), "by alice").ok());
  fake_.Expect({"squeue", "--json"}).Stdout(QueueWith(a, b));
  fake_.Expect({"scancel", "1"});
  fake_.Expect({"scancel", "2"});
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmClient client(fake_);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  EXPECT_TRUE(backend.HasActiveJobs());
  EXPECT_EQ(store_->Job(a)->state, JobState::kPending);
}

TEST_F(SlurmBackendTest, LaunchesExactlyTheAllocationAndFinishesFromTheExitFile) {
  int64_t id = AddJob(3);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  // The first poll sees the idle cluster and the pending job.
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  auto ev = backend.Advance(Seconds(11));
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->decide);
  Snapshot snap;
  backend.Observe(Seconds(11), &snap);
  ASSERT_EQ(snap.jobs.size(), 1u);
  EXPECT_EQ(snap.free_gpus[0], 2);
  // 2 GPUs on n1 and 1 on n2: a heterogeneous Slurm job, one component per node.
  int a100 = inv_->cluster.FindType("a100-80g");
  Allocation alloc{a100, {{0, 2}, {1, 1}}};
  Decision d;
  d.assign = {{snap.jobs[0]->index, alloc}};
  std::string jd = dir_ + "/jobs/" + std::to_string(id);
  fake_.Expect({"sbatch", "--parsable", "--job-name=tessel-" + std::to_string(id), "--chdir=" + jd,
                "--output=" + jd + "/slurm.0.out", "--export=ALL", "--nodes=1", "--nodelist=n1",
                "--ntasks-per-node=2", "--gpus-per-task=a100:1", "--gpu-bind=per_task:1", "--no-requeue", ":",
                "--nodes=1", "--nodelist=n2", "--ntasks-per-node=1", "--gpus-per-task=a100:1",
                "--gpu-bind=per_task:1", "--no-requeue", jd + "/batch.0.sh"})
      .Stdout("77\n");
  ASSERT_TRUE(backend.Apply(d, Seconds(11)).ok());
  auto row = store_->Job(id).value();
  EXPECT_EQ(row.state, JobState::kStarting);
  EXPECT_EQ(row.slurm_job_id, "77");
  EXPECT_EQ(row.allocation.gpus, 3);
  EXPECT_EQ(row.allocation.nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(row.launch_count, 1);
  // Applying the same decision again changes nothing (no second sbatch).
  backend.Observe(Seconds(12), &snap);
  ASSERT_TRUE(backend.Apply(d, Seconds(12)).ok());
  // The launch file carries the plan; the batch script only our paths.
  std::ifstream lf(jd + "/launch.0.json");
  nlohmann::json launch = nlohmann::json::parse(lf);
  EXPECT_EQ(launch["argv"][0], "/bin/true");
  EXPECT_EQ(launch["env"]["TESSEL_WORLD_SIZE"], "3");
  EXPECT_EQ(launch["env"]["TESSEL_JOB_ID"], std::to_string(id));
  // Slurm forgets the job; its exit file says 0: completed.
  std::ofstream(jd + "/exit.0") << "0\n";
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(20)).ok());
  EXPECT_EQ(store_->Job(id)->state, JobState::kCompleted);
  EXPECT_FALSE(backend.HasActiveJobs());
  auto history = store_->History(id).value();
  std::vector<JobState> states;
  for (const auto& t : history) states.push_back(t.to);
  EXPECT_EQ(states, (std::vector<JobState>{JobState::kPending, JobState::kStarting, JobState::kCompleted}));
}

// Launches stored job `id` on one A100 of n1 (Slurm id 5) through
// `backend`; returns its job directory.
std::string LaunchOnOneGpu(SlurmBackend& backend, FakeCommandRunner& fake, const SlurmInventory& inv,
                           const std::string& dir, int64_t id) {
  fake.InAnyOrder();
  fake.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  EXPECT_TRUE(backend.Recover(Seconds(10)).ok());
  fake.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  EXPECT_TRUE(backend.Advance(Seconds(11)).ok());
  Snapshot snap;
  backend.Observe(Seconds(11), &snap);
  Decision d;
  d.assign = {{snap.jobs[0]->index, Allocation{inv.cluster.FindType("a100-80g"), {{0, 1}}}}};
  std::string jd = dir + "/jobs/" + std::to_string(id);
  fake.Expect({"sbatch", "--parsable", "--job-name=tessel-" + std::to_string(id), "--nodes=1", "--nodelist=n1",
               "--ntasks-per-node=1", "--gpus-per-task=a100:1", "--gpu-bind=per_task:1", "--no-requeue",
               "--chdir=" + jd, "--output=" + jd + "/slurm.0.out", "--export=ALL", jd + "/batch.0.sh"})
      .Stdout("5\n");
  EXPECT_TRUE(backend.Apply(d, Seconds(11)).ok());
  return jd;
}

// Writes `steps` step lines (and the "done" event when `done`) and the exit
// code of launch 0, then lets the backend see that Slurm forgot the job.
void EndLaunch(SlurmBackend& backend, FakeCommandRunner& fake, const std::string& jd, int steps, bool done,
               int exit_code) {
  {
    std::ofstream m(jd + "/metrics.jsonl");
    for (int step = 1; step <= steps; ++step) m << "{\"step\": " << step << ", \"step_time_s\": 0.5}\n";
    if (done) m << "{\"event\": \"done\", \"step\": " << steps << "}\n";
  }
  std::ofstream(jd + "/exit.0") << exit_code << "\n";
  fake.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  EXPECT_TRUE(backend.Advance(Seconds(20)).ok());
}

TEST_F(SlurmBackendTest, AJobThatReportedDoneIsCompletedWhateverItsExitCode) {
  int64_t id = AddJob(1);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  std::string jd = LaunchOnOneGpu(backend, fake_, *inv_, dir_, id);
  // All 10 steps done, then a late SIGUSR1 killed it on its way out (138).
  EndLaunch(backend, fake_, jd, 10, /*done=*/true, 138);
  EXPECT_EQ(store_->Job(id)->state, JobState::kCompleted);
  EXPECT_EQ(store_->Steps(id, 100)->size(), 10u);
}

// Asked to stop at the step it finished on, a job checkpoints and exits 85
// without its "done" line: the checkpoint holds all its work, so it is
// completed, not left pending with nothing to run. One step short, it waits
// for GPUs again.
TEST_F(SlurmBackendTest, AJobStoppedAtItsLastStepIsCompletedOneStepShortWaits) {
  struct Case {
    int steps;
    JobState expected;
  };
  // The pending case last: each case's backend recovers the jobs before it.
  for (const Case& c : {Case{10, JobState::kCompleted}, Case{9, JobState::kPending}}) {
    SCOPED_TRACE("steps " + std::to_string(c.steps));
    int64_t id = AddJob(1);
    SlurmClient client(fake_);
    EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
    CorrectedThroughput belief(est);
    SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
    std::string jd = LaunchOnOneGpu(backend, fake_, *inv_, dir_, id);
    EndLaunch(backend, fake_, jd, c.steps, /*done=*/false, kExitCheckpointed);
    EXPECT_EQ(store_->Job(id)->state, c.expected);
    EXPECT_EQ(backend.HasActiveJobs(), c.expected == JobState::kPending);
  }
}

// Expects the sbatch of one profiling run of job `id` (its folder `jd`):
// one GPU of `gres` on `node`, files profile.<type>.<stages>.*.
// The Slurm job name of a profiling run: tessel-<id>-profile-<gpu type>-<stages>
// (types 0 and 1 of the test cluster are a100-80g and v100-32g).
std::string ProfileName(int64_t id, int type, int stages) {
  return "tessel-" + std::to_string(id) + "-profile-" + (type == 0 ? "a100-80g" : "v100-32g") + "-" +
         std::to_string(stages);
}

void ExpectProfileRun(FakeCommandRunner& fake, const std::string& jd, int64_t id, int type, int stages,
                      const std::string& node, const std::string& gres, const std::string& slurm_id) {
  std::string tag = jd + "/profile." + std::to_string(type) + "." + std::to_string(stages);
  fake.Expect({"sbatch", "--parsable", "--job-name=" + ProfileName(id, type, stages), "--nodes=1",
               "--nodelist=" + node, "--ntasks-per-node=1", "--gpus-per-task=" + gres + ":1", "--gpu-bind=per_task:1",
               "--no-requeue", "--chdir=" + jd, "--output=" + tag + ".out", "--export=ALL", tag + ".sh"})
      .Stdout(slurm_id + "\n");
}

// The environment a profiling run was launched with.
nlohmann::json ProfileEnv(const std::string& jd, int type, int stages) {
  std::ifstream f(jd + "/profile." + std::to_string(type) + "." + std::to_string(stages) + ".json");
  return nlohmann::json::parse(f)["env"];
}

// Writes what a profiling run measured: 3 steps of `step_time_s` at the
// micro-batch and layers it was launched with.
void WriteProfile(const std::string& jd, int type, int stages, double step_time_s) {
  nlohmann::json env = ProfileEnv(jd, type, stages);
  std::ofstream f(jd + "/profile." + std::to_string(type) + "." + std::to_string(stages) + ".jsonl");
  for (int step = 0; step < 3; ++step) {
    f << "{\"profile\": true, \"step\": " << step << ", \"step_time_s\": " << step_time_s
      << ", \"micro_batch\": " << env["TESSEL_MICRO_BATCH"].get<std::string>()
      << ", \"layers\": " << env["TESSEL_PROFILE_LAYERS"].get<std::string>() << "}\n";
  }
}

// A plan of `pp` stages (what the belief's depth factors key on).
ParallelPlan WithStages(int pp) {
  ParallelPlan p;
  p.pp = pp;
  return p;
}

TEST_F(SlurmBackendTest, ProfilesEveryStageCountOfEachTypeAndReusesStoredProfiles) {
  PolicyTraits traits;
  traits.profiling.kind = ProfilingKind::kDisaggregated;
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, traits, Options());
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  int64_t first = AddJob(2);
  backend.Submitted(first);
  // gpt3-350m (24 layers) on up to 2 GPUs: pipelines of 1 and 2 stages, on
  // each type, all at once, each on one GPU, spread over the free nodes;
  // the job is not shown to the policy meanwhile.
  fake_.InAnyOrder();
  std::string jd = dir_ + "/jobs/" + std::to_string(first);
  ExpectProfileRun(fake_, jd, first, 0, 1, "n1", "a100", "31");
  ExpectProfileRun(fake_, jd, first, 0, 2, "n2", "a100", "32");
  ExpectProfileRun(fake_, jd, first, 1, 1, "n5", "v100", "33");
  ExpectProfileRun(fake_, jd, first, 1, 2, "n6", "v100", "34");
  std::string name = "tessel-" + std::to_string(first) + "-profile";
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{31, name}, {32, name}, {33, name}, {34, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(11)).ok());
  auto row = store_->Job(first).value();
  EXPECT_EQ(row.state, JobState::kProfiling);
  EXPECT_EQ(row.reason, "profiling one pipeline stage on one GPU: a100-80g (1, 2 stages), v100-32g (1, 2 stages)");
  EXPECT_FALSE(backend.HasActiveJobs());
  // The first stage's layers (ceil(24 / p)) at the micro-batch of the
  // estimator's fastest pure pipeline of p stages.
  int a100 = inv_->cluster.FindType("a100-80g");
  JobSpec spec{.id = std::to_string(first), .model = "gpt3-350m", .global_batch = 8, .iterations = 10.0};
  for (int p : {1, 2}) {
    SCOPED_TRACE("stages " + std::to_string(p));
    nlohmann::json env = ProfileEnv(jd, 0, p);
    EXPECT_EQ(env["TESSEL_PROFILE"], "1");
    EXPECT_EQ(env["TESSEL_PROFILE_LAYERS"], std::to_string(24 / p));
    EXPECT_EQ(env["TESSEL_WORLD_SIZE"], "1");
    EXPECT_EQ(env["TESSEL_PP"], "1");
    EXPECT_EQ(env["TESSEL_MICRO_BATCH"], std::to_string(est.PipelinePlan(spec, a100, p, 1)->plan.micro_batch));
  }
  EXPECT_NE(ProfileEnv(jd, 0, 1)["MASTER_PORT"], ProfileEnv(jd, 0, 2)["MASTER_PORT"]);

  // The two-stage run on the A100 ends first: only p = 2 plans on the A100
  // get a factor, (M + 1) * t_stage against the pure pipeline's estimate.
  WriteProfile(jd, 0, 2, 0.05);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{31, name}, {33, name}, {34, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(15)).ok());
  PlanChoice grid2 = est.PipelinePlan(spec, a100, 2, 1).value();
  double factor2 = (grid2.plan.num_micro_batches + 1) * 0.05 / grid2.iteration_time_s;
  ParallelPlan one = WithStages(1), two = WithStages(2);
  EXPECT_NEAR(belief.Factor(spec.id, a100, &two), factor2, 1e-12);
  EXPECT_DOUBLE_EQ(belief.Factor(spec.id, a100, &one), 1.0) << "the one-stage profile is still running";
  EXPECT_DOUBLE_EQ(belief.Factor(spec.id, a100), 1.0) << "no type-wide factor from a profile";
  ASSERT_EQ(store_->Corrections(first)->size(), 1u);
  EXPECT_EQ(store_->Corrections(first)->front().scope, "stages=2");
  EXPECT_EQ(store_->Job(first)->state, JobState::kProfiling);

  WriteProfile(jd, 0, 1, 0.1);
  WriteProfile(jd, 1, 1, 0.2);
  WriteProfile(jd, 1, 2, 0.1);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  auto ev = backend.Advance(Seconds(20));
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->decide);
  EXPECT_EQ(store_->Job(first)->state, JobState::kPending);
  EXPECT_TRUE(backend.HasActiveJobs());
  EXPECT_EQ(store_->Profiles("gpt3-350m")->size(), 4u);
  auto corrections = store_->Corrections(first).value();
  ASSERT_EQ(corrections.size(), 4u);
  for (const Correction& c : corrections) EXPECT_TRUE(c.scope == "stages=1" || c.scope == "stages=2") << c.scope;
  // One stage: 0.1 s per micro-batch of mb, global batch 8 -> 0.8 / mb s per
  // iteration on one GPU, whatever the estimate was.
  int mb1 = std::stoi(ProfileEnv(jd, 0, 1)["TESSEL_MICRO_BATCH"].get<std::string>());
  EXPECT_NEAR(belief.Rate(spec, a100, 1, 1).iteration_time_s, 0.8 / mb1, 1e-9)
      << "estimated " << est.Rate(spec, a100, 1, 1).iteration_time_s;
  EXPECT_NEAR(belief.Factor(spec.id, a100, &two), factor2, 1e-12) << "the one-stage profile left p = 2 alone";

  // A second job of the model, the same shape: every profile is stored, so
  // nothing runs (no sbatch) and its factors come from them.
  int64_t second = AddJob(2);
  backend.Submitted(second);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(21)).ok());
  EXPECT_EQ(store_->Job(second)->state, JobState::kPending);
  EXPECT_EQ(store_->Corrections(second)->size(), 4u);
  EXPECT_NEAR(belief.Factor(std::to_string(second), a100, &two), factor2, 1e-12);
  // A third on up to 4 GPUs also admits 4 stages: only those are measured
  // (6 layers a stage).
  int64_t third = AddJob(4);
  backend.Submitted(third);
  std::string jd3 = dir_ + "/jobs/" + std::to_string(third);
  ExpectProfileRun(fake_, jd3, third, 0, 4, "n1", "a100", "41");
  ExpectProfileRun(fake_, jd3, third, 1, 4, "n5", "v100", "42");
  std::string name3 = "tessel-" + std::to_string(third) + "-profile";
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{41, name3}, {42, name3}}));
  ASSERT_TRUE(backend.Advance(Seconds(22)).ok());
  EXPECT_EQ(store_->Job(third)->state, JobState::kProfiling);
  EXPECT_EQ(ProfileEnv(jd3, 0, 4)["TESSEL_PROFILE_LAYERS"], "6");
  EXPECT_EQ(store_->Corrections(third)->size(), 4u) << "p = 1, 2 on both types from the stored profiles";
}

// A restart while a job profiles (the daemon killed at any point of its
// profiling runs' submission): every run recorded before its sbatch is
// reconciled by its Slurm name. A live one is adopted, also when its Slurm id
// never reached the store; one that ended meanwhile is read; one never
// submitted is started again; a live run no record names is cancelled. No
// profile ever runs twice.
TEST_F(SlurmBackendTest, ARestartWhileProfilingAdoptsEachRunByNameAndStartsNoneTwice) {
  PolicyTraits traits;
  traits.profiling.kind = ProfilingKind::kDisaggregated;
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  int64_t id = 0;
  std::string jd;
  {
    SlurmClient client(fake_);
    CorrectedThroughput belief(est);
    SlurmBackend backend(client, *store_, *inv_, belief, traits, Options());
    fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
    ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
    id = AddJob(2);
    jd = dir_ + "/jobs/" + std::to_string(id);
    backend.Submitted(id);
    fake_.InAnyOrder();
    ExpectProfileRun(fake_, jd, id, 0, 1, "n1", "a100", "31");
    ExpectProfileRun(fake_, jd, id, 0, 2, "n2", "a100", "32");
    ExpectProfileRun(fake_, jd, id, 1, 1, "n5", "v100", "33");
    ExpectProfileRun(fake_, jd, id, 1, 2, "n6", "v100", "34");
    fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
    fake_.Expect({"squeue", "--json"})
        .Stdout(RunningQueue({{31, ProfileName(id, 0, 1)}, {32, ProfileName(id, 0, 2)},
                              {33, ProfileName(id, 1, 1)}, {34, ProfileName(id, 1, 2)}}));
    ASSERT_TRUE(backend.Advance(Seconds(11)).ok());
    auto runs = store_->SlurmRuns().value();
    ASSERT_EQ(runs.size(), 4u);
    for (const SlurmRun& r : runs) EXPECT_TRUE(r.slurm_job_id.has_value()) << r.name;
    }  // the daemon dies here: nothing else is written
  // What the crash left, run by run: 32's id never reached the store (killed
  // after sbatch); 34 was recorded but never submitted (killed before
  // sbatch); 33 ended while the daemon was down.
  ASSERT_TRUE(store_->AddSlurmRun({ProfileName(id, 0, 2), id, "profile", "a100-80g", 2, std::nullopt, Seconds(11)}).ok());
  ASSERT_TRUE(store_->AddSlurmRun({ProfileName(id, 1, 2), id, "profile", "v100-32g", 2, std::nullopt, Seconds(11)}).ok());
  fs::remove(jd + "/profile.1.2.jsonl");
  WriteProfile(jd, 1, 1, 0.2);

  SlurmClient client(fake_);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, traits, Options());
  fake_.InAnyOrder();
  // Slurm runs 31 and 32 under their names, and 99, a profile no record names.
  fake_.Expect({"squeue", "--json"})
      .Stdout(RunningQueue({{31, ProfileName(id, 0, 1)}, {32, ProfileName(id, 0, 2)},
                            {99, ProfileName(id, 1, 8)}}));
  fake_.Expect({"scancel", "99"});
  ExpectProfileRun(fake_, jd, id, 1, 2, "n5", "v100", "35");  // only the never-submitted one
  ASSERT_TRUE(backend.Recover(Seconds(30)).ok());
  auto row = store_->Job(id).value();
  EXPECT_EQ(row.state, JobState::kProfiling);
  EXPECT_FALSE(backend.HasActiveJobs());
  std::map<std::string, std::optional<std::string>> ids;
  const std::vector<SlurmRun> runs = store_->SlurmRuns().value();
  for (const SlurmRun& r : runs) ids[r.name] = r.slurm_job_id;
  EXPECT_EQ(ids, (std::map<std::string, std::optional<std::string>>{
                     {ProfileName(id, 0, 1), "31"}, {ProfileName(id, 0, 2), "32"}, {ProfileName(id, 1, 2), "35"}}))
      << "33 was read and forgotten; 32 adopted by name; 34 started again as 35";
  EXPECT_EQ(store_->Profiles("gpt3-350m")->size(), 1u) << "the run that ended meanwhile was read";

  // The next poll: 31, 32 and 35 end; the job is placed; no record is left.
  WriteProfile(jd, 0, 1, 0.1);
  WriteProfile(jd, 0, 2, 0.05);
  WriteProfile(jd, 1, 2, 0.1);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(40)).ok());
  EXPECT_EQ(store_->Job(id)->state, JobState::kPending);
  EXPECT_TRUE(backend.HasActiveJobs());
  EXPECT_TRUE(store_->SlurmRuns()->empty());
}

// A poll that cannot reach Slurm marks it unreachable from that instant
// (kept through further failures), and the next good poll clears it.
// sinfo_idle.json with node `name` in `state` and `flags` (as Slurm shows a
// node whose slurmd missed a ping, or a drained one).
std::string NodesWith(const std::string& name, const std::string& state, const std::vector<std::string>& flags) {
  nlohmann::json q = nlohmann::json::parse(Recorded("sinfo_idle.json"));
  for (auto& n : q["nodes"]) {
    if (n["name"] != name) continue;
    n["state"] = state;
    n["state_flags"] = flags;
  }
  return q.dump();
}

// A full disk under the state directory while a job ends: the daemon goes
// on (no error out of Advance), the job leaves tracking, and its completion,
// refused by the store, is stored at the first poll after space returns.
TEST_F(SlurmBackendTest, AnEndTheStoreRefusesIsStoredOnceItWritesAgain) {
  testing_util::FaultyDisk disk;
  store_ = Store::Open(dir_ + "/tessel.db").value();  // through the faulty disk
  int64_t id = AddJob(1);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  std::string jd = LaunchOnOneGpu(backend, fake_, *inv_, dir_, id);
  ASSERT_EQ(store_->Job(id)->slurm_job_id, "5");
  disk.Set(testing_util::DiskFault::kFull);
  EndLaunch(backend, fake_, jd, 10, /*done=*/true, 0);
  EXPECT_FALSE(backend.HasActiveJobs());
  auto row = store_->Job(id);
  ASSERT_TRUE(row.ok()) << "reads go on: " << row.status().ToString();
  EXPECT_EQ(row->state, JobState::kStarting) << "nothing stored while the disk is full";
  for (int t : {21, 22}) {  // still full: tried again at each poll, quietly
    fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
    fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
    ASSERT_TRUE(backend.Advance(Seconds(t)).ok());
  }
  EXPECT_EQ(store_->Job(id)->state, JobState::kStarting);
  disk.Set(testing_util::DiskFault::kNone);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(23)).ok());
  row = store_->Job(id);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->state, JobState::kCompleted);
  EXPECT_EQ(row->finished_us, Seconds(20)) << "the end is stored as of when it happened";
  EXPECT_FALSE(row->slurm_job_id.has_value());
  EXPECT_EQ(row->allocation.gpus, 0);
  std::vector<JobState> states;
  for (const auto& t : store_->History(id).value()) states.push_back(t.to);
  EXPECT_EQ(states, (std::vector<JobState>{JobState::kPending, JobState::kStarting, JobState::kCompleted}));
  EXPECT_TRUE(store_->CheckIntegrity().ok());
  store_.reset();  // closed while the faulty VFS is still there
}

// slurmctld down: a decision to launch stores and submits nothing (the job
// stays pending, no sbatch that would fail and count a launch); the first
// poll that reaches Slurm again asks for a decision, which launches it.
TEST_F(SlurmBackendTest, NothingIsLaunchedWhileSlurmIsUnreachable) {
  int64_t id = AddJob(1);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  fake_.InAnyOrder();
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(11)).ok());
  fake_.Expect({"sinfo", "--json"}).ExitCode(1).Stderr("sinfo: error: Unable to contact slurm controller\n");
  ASSERT_TRUE(backend.Advance(Seconds(12)).ok());
  Snapshot snap;
  backend.Observe(Seconds(12), &snap);
  ASSERT_EQ(snap.jobs.size(), 1u);
  Decision d;
  d.assign = {{snap.jobs[0]->index, Allocation{inv_->cluster.FindType("a100-80g"), {{0, 1}}}}};
  ASSERT_TRUE(backend.Apply(d, Seconds(12)).ok());  // no sbatch expected
  auto row = store_->Job(id).value();
  EXPECT_EQ(row.state, JobState::kPending);
  EXPECT_EQ(row.launch_count, 0);
  EXPECT_EQ(row.allocation.gpus, 0);
  backend.Observe(Seconds(12), &snap);
  EXPECT_TRUE(snap.jobs[0]->alloc.empty());
  // Slurm is back: a decision is asked for, and it launches.
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  auto ev = backend.Advance(Seconds(13));
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->decide);
  std::string jd = dir_ + "/jobs/" + std::to_string(id);
  fake_.Expect({"sbatch", "--parsable", "--job-name=tessel-" + std::to_string(id), "--nodes=1", "--nodelist=n1",
                "--ntasks-per-node=1", "--gpus-per-task=a100:1", "--gpu-bind=per_task:1", "--no-requeue",
                "--chdir=" + jd, "--output=" + jd + "/slurm.0.out", "--export=ALL", jd + "/batch.0.sh"})
      .Stdout("5\n");
  backend.Observe(Seconds(13), &snap);
  ASSERT_TRUE(backend.Apply(d, Seconds(13)).ok());
  EXPECT_EQ(store_->Job(id)->state, JobState::kStarting);
  EXPECT_EQ(store_->Job(id)->launch_count, 1);
}

// A node whose slurmd missed a ping (NOT_RESPONDING) gets no new work, but
// the job running there is neither stopped nor moved; a drained node's job
// is asked to stop (SIGUSR1), and cancelled once it has not stopped within
// the stop timeout, once: not again while Slurm ends it.
TEST_F(SlurmBackendTest, AMissedPingKeepsTheJobADrainStopsItAndEscalatesOnce) {
  int64_t id = AddJob(1);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackendOptions o = Options();
  o.stop_timeout = Seconds(30);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, o);
  std::string jd = LaunchOnOneGpu(backend, fake_, *inv_, dir_, id);
  const std::string name = "tessel-" + std::to_string(id);
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {"NOT_RESPONDING"}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(20)).ok());  // no scancel expected
  Snapshot snap;
  backend.Observe(Seconds(20), &snap);
  EXPECT_EQ(snap.free_gpus[0], 0) << "no new work on a node that does not answer";
  EXPECT_EQ(snap.jobs[0]->alloc.parts.size(), 1u) << "the job keeps its GPUs";
  EXPECT_EQ(store_->Job(id)->state, JobState::kRunning);
  // It answers again, then is drained: asked to stop.
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(21)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {"DRAIN"}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));  // the signal checks it runs
  fake_.Expect({"scancel", "--signal=USR1", "5"});
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(22)).ok());
  EXPECT_EQ(store_->Job(id)->state, JobState::kReconfiguring);
  // It ignores the signal: within the timeout nothing more; past it one
  // scancel (failing the first time: Slurm unreachable, tried again).
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {"DRAIN"}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(50)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {"DRAIN"}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  fake_.Expect({"scancel", "5"}).ExitCode(1).Stderr("scancel: error: Unable to contact slurm controller\n");
  ASSERT_TRUE(backend.Advance(Seconds(53)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {"DRAIN"}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  fake_.Expect({"scancel", "5"});
  ASSERT_TRUE(backend.Advance(Seconds(54)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "mixed", {"DRAIN"}));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(55)).ok());  // no second scancel
  // Slurm ended it (killed: no exit file): it waits for GPUs, not failed.
  fake_.Expect({"sinfo", "--json"}).Stdout(NodesWith("n1", "idle", {"DRAIN"}));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(56)).ok());
  auto row = store_->Job(id).value();
  EXPECT_EQ(row.state, JobState::kPending);
  EXPECT_EQ(row.failures, 0);
  EXPECT_NE(row.reason.find("cancelled after not stopping in time"), std::string::npos) << row.reason;
}

// Garbage in a job's metrics file never counts as its progress: a step
// beyond its iterations is skipped, so a stop at a checkpoint does not make
// it look completed.
TEST_F(SlurmBackendTest, AStepBeyondTheJobsIterationsIsNotProgress) {
  int64_t id = AddJob(1);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  std::string jd = LaunchOnOneGpu(backend, fake_, *inv_, dir_, id);
  {
    std::ofstream m(jd + "/metrics.jsonl");
    m << "{\"step\": 1, \"step_time_s\": 0.5}\n{\"step\": 1000000000, \"step_time_s\": 0.5}\n\x01garbage\n";
  }
  std::ofstream(jd + "/exit.0") << kExitCheckpointed << "\n";
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(20)).ok());
  EXPECT_EQ(store_->Job(id)->state, JobState::kPending);
  EXPECT_EQ(store_->Steps(id, 100)->size(), 1u);
}

TEST_F(SlurmBackendTest, SlurmReachabilityFollowsThePolls) {
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  EXPECT_TRUE(backend.SlurmReachability().reachable);
  for (int t : {11, 12}) {
    fake_.Expect({"sinfo", "--json"}).ExitCode(1).Stderr("sinfo: error: Unable to contact slurm controller\n");
    ASSERT_TRUE(backend.Advance(Seconds(t)).ok()) << "the loop goes on";
  }
  SlurmBackend::SlurmReach r = backend.SlurmReachability();
  EXPECT_FALSE(r.reachable);
  EXPECT_EQ(r.since, Seconds(11)) << "since the first failed poll in a row";
  EXPECT_NE(r.error.find("Unable to contact slurm controller"), std::string::npos) << r.error;
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(13)).ok());
  EXPECT_TRUE(backend.SlurmReachability().reachable);
}

// Measured steps correct the plan the job runs (against the base estimate
// of that plan) and the type's fallback; after a restart each stored
// correction comes back at the level its scope names.
TEST_F(SlurmBackendTest, MeasuredStepsCorrectTheRunningPlanAndRestartRestoresEachScope) {
  int64_t id = AddJob(1);
  int a100 = inv_->cluster.FindType("a100-80g");
  JobSpec spec{.id = std::to_string(id), .model = "gpt3-350m", .global_batch = 8, .iterations = 10.0};
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  const JobRate& base = est.Rate(spec, a100, 1, 1);
  ASSERT_TRUE(base.fits);
  const ParallelPlan plan = base.plan;  // what a launch without a plan set runs
  const double factor = 0.5 / base.iteration_time_s;
  {
    SlurmClient client(fake_);
    CorrectedThroughput belief(est);
    SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
    std::string jd = LaunchOnOneGpu(backend, fake_, *inv_, dir_, id);
    EndLaunch(backend, fake_, jd, 9, /*done=*/false, kExitCheckpointed);  // 0.5 s a step
    ASSERT_EQ(store_->Job(id)->state, JobState::kPending);
    EXPECT_EQ(*store_->Corrections(id), (std::vector<Correction>{{"a100-80g", factor, 8, ""},
                                                                 {"a100-80g", factor, 8, "plan=" + plan.ToString()}}));
    EXPECT_DOUBLE_EQ(belief.Factor(spec.id, a100, &plan), factor);
    EXPECT_NEAR(belief.Rate(spec, a100, 1, 1).iteration_time_s, 0.5, 1e-12);
  }
  // Distinct factors per scope, and one this daemon does not know.
  ASSERT_TRUE(store_->SetCorrection(id, {"a100-80g", 1.2, 8, ""}).ok());
  ASSERT_TRUE(store_->SetCorrection(id, {"a100-80g", 1.7, 0, "stages=2"}).ok());
  ASSERT_TRUE(store_->SetCorrection(id, {"a100-80g", 9.0, 0, "nodes=3"}).ok());
  SlurmClient client(fake_);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(30)).ok());
  ParallelPlan other_one_stage = plan, two = plan;
  other_one_stage.micro_batch = plan.micro_batch == 1 ? 2 : 1;
  two.pp = 2;
  EXPECT_DOUBLE_EQ(belief.Factor(spec.id, a100, &plan), factor) << "plan=";
  EXPECT_DOUBLE_EQ(belief.Factor(spec.id, a100, &two), 1.7) << "stages=2";
  EXPECT_DOUBLE_EQ(belief.Factor(spec.id, a100, &other_one_stage), 1.2) << "the type's";
}

// A decision that keeps a running job on its GPUs but leads its plan set
// with another plan: relaunched under it (checkpoint, stop, relaunch) when
// the set's estimate is at least 5% shorter than the running plan's, or the
// running plan left the set; a smaller gain changes nothing.
TEST_F(SlurmBackendTest, ReplansOnTheSameGpusForAFivePercentGainOrWhenItsPlanLeftTheSet) {
  int64_t id = AddJob(2);
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, Options());
  fake_.InAnyOrder();
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(11)).ok());
  Snapshot snap;
  backend.Observe(Seconds(11), &snap);
  ASSERT_EQ(snap.jobs.size(), 1u);
  const int idx = snap.jobs[0]->index;
  const Allocation alloc{inv_->cluster.FindType("a100-80g"), {{0, 2}}};
  ParallelPlan dp;  // d2 mb4x1
  dp.dp = 2;
  dp.micro_batch = 4;
  ParallelPlan pipe;  // d1 p2 mb1x8
  pipe.pp = 2;
  pipe.num_micro_batches = 8;
  ParallelPlan tensor;  // d1 t2 mb4x2
  tensor.tp = 2;
  tensor.micro_batch = 4;
  tensor.num_micro_batches = 2;
  std::string jd = dir_ + "/jobs/" + std::to_string(id);
  auto expect_sbatch = [&](int launch, const std::string& slurm_id) {
    std::string n = std::to_string(launch);
    fake_.Expect({"sbatch", "--parsable", "--job-name=tessel-" + std::to_string(id), "--nodes=1", "--nodelist=n1",
                  "--ntasks-per-node=2", "--gpus-per-task=a100:1", "--gpu-bind=per_task:1", "--no-requeue",
                  "--chdir=" + jd, "--output=" + jd + "/slurm." + n + ".out", "--export=ALL",
                  jd + "/batch." + n + ".sh"})
        .Stdout(slurm_id + "\n");
  };
  auto running_as = [&](int64_t slurm_id, SimTime now) {
    fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
    fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{slurm_id, "tessel-" + std::to_string(id)}}));
    ASSERT_TRUE(backend.Advance(now).ok());
    ASSERT_EQ(store_->Job(id)->state, JobState::kRunning);
  };
  auto decide = [&](std::vector<PlanChoice> set, SimTime now) {
    Decision d;
    d.assign = {{idx, alloc}};
    d.plans = {{idx, std::move(set)}};
    ASSERT_TRUE(backend.Apply(d, now).ok());
  };
  auto pp_of = [&](int launch) {
    std::ifstream f(jd + "/launch." + std::to_string(launch) + ".json");
    return nlohmann::json::parse(f)["env"]["TESSEL_PP"].get<std::string>();
  };

  expect_sbatch(0, "5");
  decide({PlanChoice{dp, 1.0, 20}, PlanChoice{pipe, 1.1, 10}}, Seconds(11));
  ASSERT_EQ(pp_of(0), "1");
  running_as(5, Seconds(12));
  // 3% faster: not worth a relaunch (no command runs: the fake would fail).
  decide({PlanChoice{pipe, 0.97, 10}, PlanChoice{dp, 1.0, 20}}, Seconds(13));
  EXPECT_EQ(store_->Job(id)->state, JobState::kRunning);
  // The first plan is the running one: nothing either.
  decide({PlanChoice{dp, 0.5, 20}, PlanChoice{pipe, 0.4, 10}}, Seconds(13));
  EXPECT_EQ(store_->Job(id)->state, JobState::kRunning);
  // 6% faster: checkpoint and stop (SIGUSR1), then relaunch under it.
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{5, "tessel-" + std::to_string(id)}}));
  fake_.Expect({"scancel", "--signal=USR1", "5"});
  decide({PlanChoice{pipe, 0.94, 10}, PlanChoice{dp, 1.0, 20}}, Seconds(14));
  auto row = store_->Job(id).value();
  EXPECT_EQ(row.state, JobState::kReconfiguring);
  EXPECT_EQ(row.reason,
            "re-planning on the same GPUs: " + pipe.ToString() + " instead of " + dp.ToString() +
                " (estimated 0.94 s per iteration instead of 1 s)");
  decide({PlanChoice{pipe, 0.94, 10}, PlanChoice{dp, 1.0, 20}}, Seconds(15));  // again: idempotent
  std::ofstream(jd + "/exit.0") << kExitCheckpointed << "\n";
  expect_sbatch(1, "6");
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(16)).ok());
  EXPECT_EQ(store_->Job(id)->state, JobState::kStarting);
  EXPECT_EQ(pp_of(1), "2") << "relaunched under the pipeline";
  EXPECT_EQ(store_->Job(id)->launch_count, 2);
  running_as(6, Seconds(17));
  // The running plan is no longer in the set: relaunched under the set's
  // first, even though it is estimated slower than the running one was.
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{6, "tessel-" + std::to_string(id)}}));
  fake_.Expect({"scancel", "--signal=USR1", "6"});
  decide({PlanChoice{tensor, 2.0, 10}}, Seconds(18));
  row = store_->Job(id).value();
  EXPECT_EQ(row.state, JobState::kReconfiguring);
  EXPECT_EQ(row.reason, "re-planning on the same GPUs: " + tensor.ToString() + " instead of " + pipe.ToString() +
                            " (no longer in the policy's plan set)");
}

TEST_F(SlurmBackendTest, AFrameworkRunsTheFirstPlanItCanExpressAndAJobWithNoneFails) {
  int64_t mg = AddJob(2, "framework: megatron\n");
  int64_t ds = AddJob(2, "framework: deepspeed\n");
  SlurmClient client(fake_);
  EstimatorThroughput est(inv_->cluster, PlanMode::kBest);
  CorrectedThroughput belief(est);
  SlurmBackendOptions o = Options();
  o.python_dir = "/opt/tessel/python";
  SlurmBackend backend(client, *store_, *inv_, belief, PolicyTraits{}, o);
  fake_.InAnyOrder();
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Recover(Seconds(10)).ok());
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(11)).ok());
  Snapshot snap;
  backend.Observe(Seconds(11), &snap);
  ASSERT_EQ(snap.jobs.size(), 2u);
  auto index_of = [&](int64_t id) {
    for (const JobView* j : snap.jobs)
      if (j->spec->id == std::to_string(id)) return j->index;
    return -1;
  };
  int a100 = inv_->cluster.FindType("a100-80g");
  ParallelPlan z3;
  z3.dp = 2;
  z3.micro_batch = 4;
  z3.zero = 3;
  ParallelPlan z1 = z3;
  z1.zero = 1;
  ParallelPlan t2 = z3;
  t2.dp = 1;
  t2.tp = 2;
  t2.num_micro_batches = 2;
  Decision d;
  d.assign = {{index_of(mg), Allocation{a100, {{0, 2}}}}, {index_of(ds), Allocation{a100, {{1, 2}}}}};
  // Megatron: the fastest plan is ZeRO-3, which it cannot run; the next one
  // is launched. DeepSpeed: its only plan is tensor-parallel.
  d.plans = {{index_of(mg), {PlanChoice{z3, 1.0, 10}, PlanChoice{z1, 1.1, 12}}},
             {index_of(ds), {PlanChoice{t2, 1.0, 10}}}};
  std::string jd = dir_ + "/jobs/" + std::to_string(mg);
  fake_.Expect({"sbatch", "--parsable", "--job-name=tessel-" + std::to_string(mg), "--nodes=1", "--nodelist=n1",
                "--ntasks-per-node=2", "--gpus-per-task=a100:1", "--gpu-bind=per_task:1", "--no-requeue",
                "--chdir=" + jd, "--output=" + jd + "/slurm.0.out", "--export=ALL", jd + "/batch.0.sh"})
      .Stdout("5\n");
  ASSERT_TRUE(backend.Apply(d, Seconds(11)).ok()) << "a refused plan fails its job, never the loop";
  EXPECT_EQ(store_->Job(mg)->state, JobState::kStarting);
  nlohmann::json launch = nlohmann::json::parse(std::ifstream(jd + "/launch.0.json"));
  EXPECT_EQ(launch["env"]["TESSEL_ZERO_STAGE"], "1");
  EXPECT_EQ(launch["prepend"]["PYTHONPATH"], "/opt/tessel/python");
  std::vector<std::string> argv = launch["argv"].get<std::vector<std::string>>();
  EXPECT_EQ(argv.front(), "/bin/true");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--use-distributed-optimizer"), argv.end());
  EXPECT_EQ(argv.back(), dir_ + "/checkpoints/" + std::to_string(mg)) << "--save/--load: the job's checkpoints";
  auto failed = store_->Job(ds).value();
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.reason,
            "deepspeed cannot express plan d1 t2 p1 mb4x2 rc=none z3 bf16: tensor parallelism (t2) is not "
            "DeepSpeed's own: it comes from model code such as Megatron-DeepSpeed's; use megatron, or a plan "
            "with t1");
}

}  // namespace
}  // namespace tessel
