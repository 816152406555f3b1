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

TEST_F(SlurmBackendTest, ProfilesOneGpuOfEachTypeFirstAndReusesTheProfileForTheModel) {
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
  // One GPU of each type (a100 on n1, v100 on n5), the job's own command in
  // profiling mode; the job is not shown to the policy meanwhile.
  fake_.InAnyOrder();
  std::string jd = dir_ + "/jobs/" + std::to_string(first);
  for (auto [type, node, gres, id] : {std::tuple{0, "n1", "a100", "31"}, std::tuple{1, "n5", "v100", "32"}}) {
    std::string tag = jd + "/profile." + std::to_string(type);
    fake_.Expect({"sbatch", "--parsable", "--job-name=tessel-" + std::to_string(first) + "-profile",
                  std::string("--nodes=1"), std::string("--nodelist=") + node, "--ntasks-per-node=1",
                  std::string("--gpus-per-task=") + gres + ":1", "--gpu-bind=per_task:1", "--no-requeue",
                  "--chdir=" + jd, "--output=" + tag + ".out", "--export=ALL", tag + ".sh"})
        .Stdout(std::string(id) + "\n");
  }
  std::string name = "tessel-" + std::to_string(first) + "-profile";
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(RunningQueue({{31, name}, {32, name}}));
  ASSERT_TRUE(backend.Advance(Seconds(11)).ok());
  EXPECT_EQ(store_->Job(first)->state, JobState::kProfiling);
  EXPECT_FALSE(backend.HasActiveJobs());
  nlohmann::json launch = nlohmann::json::parse(std::ifstream(jd + "/profile.0.json"));
  EXPECT_EQ(launch["env"]["TESSEL_PROFILE"], "1");
  EXPECT_EQ(launch["env"]["TESSEL_PROFILE_LAYERS"], "24") << "gpt3-350m fits one GPU: the whole model";
  // Both runs end having written their steps: the profile is stored, the
  // job's corrections start from it, and the job is placed.
  for (int type : {0, 1}) {
    std::ofstream f(jd + "/profile." + std::to_string(type) + ".jsonl");
    for (int step = 0; step < 3; ++step) {
      f << "{\"profile\": true, \"step\": " << step << ", \"step_time_s\": " << (type ? 0.2 : 0.1)
        << ", \"micro_batch\": 4, \"layers\": 24}\n";
    }
  }
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  auto ev = backend.Advance(Seconds(20));
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->decide);
  EXPECT_EQ(store_->Job(first)->state, JobState::kPending);
  EXPECT_TRUE(backend.HasActiveJobs());
  auto profiles = store_->Profiles("gpt3-350m").value();
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_DOUBLE_EQ(profiles[0].step_time_s, 0.1);
  auto corrections = store_->Corrections(first).value();
  ASSERT_EQ(corrections.size(), 2u);
  // Measured: 0.1 s per micro-batch of 4, global batch 8 -> 0.2 s per iteration on one GPU.
  int a100 = inv_->cluster.FindType("a100-80g");
  double estimated = est.Rate(JobSpec{.id = "x", .model = "gpt3-350m", .global_batch = 8}, a100, 1, 1).iteration_time_s;
  EXPECT_NEAR(belief.Rate(JobSpec{.id = std::to_string(first), .model = "gpt3-350m", .global_batch = 8,
                                  .iterations = 10.0},
                          a100, 1, 1)
                  .iteration_time_s,
              0.2, 1e-9)
      << "estimated " << estimated;
  // A second job of the same model reuses the stored profile: no sbatch.
  int64_t second = AddJob(1);
  backend.Submitted(second);
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_idle.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  ASSERT_TRUE(backend.Advance(Seconds(21)).ok());
  EXPECT_EQ(store_->Job(second)->state, JobState::kPending);
  EXPECT_EQ(store_->Corrections(second)->size(), 2u);
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
