// SlurmClient against outputs recorded from a real Slurm 22.05 (see
// testdata/slurm/README.md), with FakeCommandRunner checking each argv.
#include "cluster/slurm_client.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cluster/fake_command_runner.h"
#include "cluster/slurm_json.h"
#include "core/strings.h"

namespace tessel {
namespace {

constexpr const char* kConf = "/tmp/cluster/slurm.conf";

std::string Recorded(const std::string& name) {
  std::string path = std::string(TESSEL_SOURCE_DIR) + "/src/cluster/testdata/slurm/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing test data " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class SlurmClientTest : public ::testing::Test {
 protected:
  SlurmClientOptions Options() {
    SlurmClientOptions o;
    o.slurm_conf = kConf;
    return o;
  }
  FakeCommandRunner fake_;
  SlurmClient client_{fake_, Options()};
};

const SlurmNode& Node(const std::vector<SlurmNode>& nodes, const std::string& name) {
  for (const auto& n : nodes) {
    if (n.name == name) return n;
  }
  static SlurmNode none;
  ADD_FAILURE() << "no node " << name;
  return none;
}

const SlurmJob& Job(const std::vector<SlurmJob>& jobs, SlurmJobId id) {
  for (const auto& j : jobs) {
    if (j.id == id) return j;
  }
  static SlurmJob none;
  ADD_FAILURE() << "no job " << id;
  return none;
}

// ---- nodes ----

TEST_F(SlurmClientTest, ListNodesIdleCluster) {
  fake_.Expect({"sinfo", "--json"}).Env("SLURM_CONF", kConf).Stdout(Recorded("sinfo_idle.json"));
  auto nodes = client_.ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 8u);
  for (const auto& n : *nodes) {
    SCOPED_TRACE(n.name);
    EXPECT_EQ(n.state, SlurmNodeState::kIdle);
    EXPECT_TRUE(n.flags.empty());
    EXPECT_TRUE(n.Usable());
    EXPECT_EQ(n.cpus, 4);
    EXPECT_EQ(n.alloc_cpus, 0);
    ASSERT_EQ(n.gpus.size(), 1u);
    EXPECT_EQ(n.gpus[0].total, 2);
    EXPECT_EQ(n.gpus[0].used, 0);
  }
  EXPECT_EQ(Node(*nodes, "n1").gpus[0].type, "a100");
  EXPECT_EQ(Node(*nodes, "n4").gpus[0].type, "a100");
  EXPECT_EQ(Node(*nodes, "n5").gpus[0].type, "v100");
  EXPECT_EQ(Node(*nodes, "n8").gpus[0].type, "v100");
}

struct NodeCase {
  const char* name;
  const char* state;  // StateString()
  bool usable;
  bool lost;  // its jobs must move (not merely no new work)
  int alloc_cpus;
  const char* gpu_type;
  int gpus_used;
  const char* reason;
};

TEST_F(SlurmClientTest, ListNodesStateCombinations) {
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_busy.json"));
  auto nodes = client_.ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  const NodeCase cases[] = {
      {"n1", "ALLOCATED", true, false, 4, "a100", 2, ""},
      {"n2", "ALLOCATED+DRAIN", false, true, 4, "a100", 2, "tessel: drain under a job"},
      {"n3", "IDLE+DRAIN", false, true, 0, "a100", 0, "tessel: maintenance"},
      {"n4", "IDLE", true, false, 0, "a100", 0, ""},
      {"n5", "MIXED", true, false, 2, "v100", 2, ""},
      {"n6", "MIXED", true, false, 1, "v100", 1, ""},
      {"n7", "DOWN", false, true, 0, "v100", 0, "tessel: fake failure"},
      // A missed ping: no new work there, but its jobs are not moved.
      {"n8", "IDLE+NOT_RESPONDING", false, false, 0, "v100", 0, ""},
  };
  ASSERT_EQ(nodes->size(), std::size(cases));
  for (const NodeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const SlurmNode& n = Node(*nodes, c.name);
    EXPECT_EQ(n.StateString(), c.state);
    EXPECT_EQ(n.Usable(), c.usable);
    EXPECT_EQ(n.Lost(), c.lost);
    EXPECT_EQ(n.alloc_cpus, c.alloc_cpus);
    ASSERT_EQ(n.gpus.size(), 1u);
    EXPECT_EQ(n.gpus[0], (SlurmGpus{c.gpu_type, 2, c.gpus_used}));
    EXPECT_EQ(n.FreeGpus(), 2 - c.gpus_used);
    EXPECT_EQ(n.reason, c.reason);
  }
  EXPECT_TRUE(Node(*nodes, "n2").Drain());
  EXPECT_TRUE(Node(*nodes, "n8").NotResponding());
}

TEST_F(SlurmClientTest, ListNodesWithControllerDownIsUnavailable) {
  // 22.05 exits 0 and reports the failure in "errors".
  fake_.Expect({"sinfo", "--json"}).Stdout(Recorded("sinfo_ctld_down.json"));
  auto nodes = client_.ListNodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(nodes.status().message(),
            "sinfo --json reported errors (is slurmctld up?): Unspecified error");
}

TEST_F(SlurmClientTest, ListNodesCommandFailureNamesTheTool) {
  fake_.Expect({"sinfo", "--json"})
      .ExitCode(1)
      .Stderr("sinfo: error: Unable to contact slurm controller (connect failure)\n");
  auto nodes = client_.ListNodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(nodes.status().message(),
            "sinfo exited with code 1: sinfo: error: Unable to contact slurm controller "
            "(connect failure)");
}

TEST_F(SlurmClientTest, RunnerTimeoutPassesThroughAsUnavailable) {
  fake_.Expect({"sinfo", "--json"}).Fails(Unavailable("sinfo timed out after 30 s"));
  auto nodes = client_.ListNodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kUnavailable);
}

struct ParseErrorCase {
  const char* name;
  const char* text;
  const char* message_start;
};

TEST_F(SlurmClientTest, GarbageSinfoOutputIsAClearError) {
  const ParseErrorCase cases[] = {
      {"not json", "sinfo: error: who knows", "sinfo --json: output is not JSON ("},
      {"truncated", "{\"nodes\": [{\"name\": \"n1\"", "sinfo --json: output is not JSON ("},
      {"not an object", "[1, 2]", "sinfo --json: output is JSON but not an object"},
      {"no nodes", "{\"meta\": {}}", "sinfo --json: output has no 'nodes' array"},
      {"missing field", "{\"nodes\": [{\"name\": \"n1\"}]}",
       "sinfo --json: nodes[0] (n1): field 'state' is missing"},
      {"wrong type", "{\"nodes\": [{\"name\": \"n1\", \"state\": \"idle\", \"cpus\": \"4\"}]}",
       "sinfo --json: nodes[0] (n1): field 'cpus' should be an integer, is string"},
      {"bad gres",
       "{\"nodes\": [{\"name\": \"n1\", \"state\": \"idle\", \"cpus\": 4, \"gres\": "
       "\"gpu:a100:two\"}]}",
       "sinfo --json: nodes[0] (n1): gres 'gpu:a100:two': count 'two'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeCommandRunner fake;
    fake.Expect({"sinfo", "--json"}).Stdout(c.text);
    auto nodes = SlurmClient(fake).ListNodes();
    ASSERT_FALSE(nodes.ok());
    EXPECT_EQ(nodes.status().code(), StatusCode::kInternal);
    EXPECT_TRUE(StartsWith(nodes.status().message(), c.message_start)) << nodes.status().message();
  }
}

TEST(SlurmGres, ParsesTypesCountsAndUse) {
  auto g = ParseGpuGres("gpu:a100:2(S:0-1),mps:100,gpu:v100:4",
                        "gpu:a100:1(IDX:1),gpu:v100:3(IDX:0,2-3),mps:0", "n1");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0], (SlurmGpus{"a100", 2, 1}));
  EXPECT_EQ((*g)[1], (SlurmGpus{"v100", 4, 3}));
  auto untyped = ParseGpuGres("gpu:2", "gpu:0(IDX:N/A)", "n1");
  ASSERT_TRUE(untyped.ok());
  EXPECT_EQ((*untyped)[0], (SlurmGpus{"", 2, 0}));
  auto none = ParseGpuGres("(null)", "", "n1");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto bad = ParseGpuGres("gpu:a:b:c", "", "n9");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "n9: gres 'gpu:a:b:c': cannot read 'gpu:a:b:c' (expected gpu[:type]:count)");
}

// ---- jobs ----

TEST_F(SlurmClientTest, ListJobsEmpty) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_empty.json"));
  auto jobs = client_.ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_TRUE(jobs->empty());
}

TEST_F(SlurmClientTest, ListJobsReadsEveryState) {
  fake_.Expect({"squeue", "--json"}).Env("SLURM_CONF", kConf).Stdout(Recorded("squeue_busy.json"));
  auto jobs = client_.ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 7u);  // 8 entries, the heterogeneous job's two merged

  const SlurmJob& uniform = Job(*jobs, 1);
  EXPECT_EQ(uniform.name, "tessel-uniform");
  EXPECT_EQ(uniform.state, SlurmJobState::kRunning);
  EXPECT_EQ(uniform.reason, "None");
  EXPECT_EQ(uniform.nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_GT(uniform.start_time, 0);
  EXPECT_GE(uniform.start_time, uniform.submit_time);
  EXPECT_EQ(uniform.end_time, 0);  // a running job's end_time is its limit
  EXPECT_TRUE(EndsWith(uniform.working_dir, "/jobs"));
  EXPECT_TRUE(EndsWith(uniform.stdout_path, "/jobs/%x-%j.out"));

  EXPECT_EQ(uniform.components, 1);

  // Heterogeneous: squeue lists components 2 (n6) and 3 (n5); merged.
  const SlurmJob& het = Job(*jobs, 2);
  EXPECT_EQ(het.name, "tessel-nonuniform");
  EXPECT_EQ(het.state, SlurmJobState::kRunning);
  EXPECT_EQ(het.components, 2);
  EXPECT_EQ(het.nodes, (std::vector<std::string>{"n6", "n5"}));

  const SlurmJob& pending = Job(*jobs, 4);
  EXPECT_EQ(pending.state, SlurmJobState::kPending);
  EXPECT_EQ(pending.reason, "Resources");
  EXPECT_TRUE(pending.nodes.empty());
  EXPECT_EQ(pending.start_time, 0);

  const SlurmJob& completed = Job(*jobs, 5);
  EXPECT_EQ(completed.state, SlurmJobState::kCompleted);
  EXPECT_EQ(completed.exit_code, 0);
  EXPECT_EQ(completed.exit_signal, 0);
  EXPECT_GE(completed.end_time, completed.start_time);
  EXPECT_GT(completed.end_time, 0);

  const SlurmJob& failed = Job(*jobs, 6);
  EXPECT_EQ(failed.state, SlurmJobState::kFailed);
  EXPECT_EQ(failed.reason, "NonZeroExitCode");
  EXPECT_EQ(failed.exit_code, 3);  // recorded as wait status 768
  EXPECT_EQ(failed.exit_signal, 0);

  const SlurmJob& killed = Job(*jobs, 7);
  EXPECT_EQ(killed.state, SlurmJobState::kFailed);
  EXPECT_EQ(killed.exit_signal, 9);

  const SlurmJob& cancelled = Job(*jobs, 8);
  EXPECT_EQ(cancelled.state, SlurmJobState::kCancelled);
  EXPECT_EQ(cancelled.exit_signal, 15);
  EXPECT_TRUE(IsFinished(cancelled.state));
  EXPECT_FALSE(IsFinished(pending.state));
}

TEST_F(SlurmClientTest, ListJobsFiltersByNamePrefix) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  auto jobs = client_.ListJobs("tessel-");
  ASSERT_TRUE(jobs.ok());
  std::vector<SlurmJobId> ids;
  for (const auto& j : *jobs) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<SlurmJobId>{1, 2, 4, 6, 7, 8}));  // not other-job (5)
}

TEST_F(SlurmClientTest, ListJobsWithControllerDownIsUnavailable) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_ctld_down.json"));
  auto jobs = client_.ListJobs();
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(jobs.status().message(),
            "squeue --json reported errors (is slurmctld up?): Failed while looking for jobs: "
            "Unspecified error: slurm_load_jobs");
}

TEST_F(SlurmClientTest, GarbageSqueueOutputIsAClearError) {
  const ParseErrorCase cases[] = {
      {"empty", "", "squeue --json: output is not JSON ("},
      {"bad hostlist",
       "{\"jobs\": [{\"job_id\": 4, \"name\": \"x\", \"job_state\": \"RUNNING\", \"nodes\": "
       "\"n[1-\"}]}",
       "squeue --json: jobs[0] (job 4): nodes: hostlist 'n[1-': '[' is not closed"},
      {"id not a number", "{\"jobs\": [{\"job_id\": \"4\"}]}",
       "squeue --json: jobs[0]: field 'job_id' should be an integer, is string"},
      {"job not an object", "{\"jobs\": [7]}", "squeue --json: jobs[0]: not an object"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeCommandRunner fake;
    fake.Expect({"squeue", "--json"}).Stdout(c.text);
    auto jobs = SlurmClient(fake).ListJobs();
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().code(), StatusCode::kInternal);
    EXPECT_TRUE(StartsWith(jobs.status().message(), c.message_start)) << jobs.status().message();
  }
}

TEST(SlurmJson, HeterogeneousComponentsMergeInOffsetOrder) {
  // Components listed out of order, with an ordinary job between them.
  auto jobs = ParseSqueueJson(R"({"jobs": [
    {"job_id": 11, "het_job_id": 10, "het_job_offset": 1, "name": "h",
     "job_state": "RUNNING", "nodes": "n[3-4]"},
    {"job_id": 12, "het_job_id": 0, "het_job_offset": 0, "name": "plain",
     "job_state": "PENDING", "nodes": ""},
    {"job_id": 10, "het_job_id": 10, "het_job_offset": 0, "name": "h",
     "job_state": "RUNNING", "nodes": "n7"}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, 10);
  EXPECT_EQ((*jobs)[0].components, 2);
  EXPECT_EQ((*jobs)[0].nodes, (std::vector<std::string>{"n7", "n3", "n4"}));
  EXPECT_EQ((*jobs)[1].id, 12);
  EXPECT_EQ((*jobs)[1].components, 1);
}

TEST_F(SlurmClientTest, GetJobUnknownIsNotFound) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  auto job = client_.GetJob(99);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(job.status().message(), "job 99 is not known to slurmctld"));
}

// ---- submit ----

SubmitRequest Uniform() {
  SubmitRequest r;
  r.job_name = "tessel-job-7";
  r.gpu_type = "a100";
  r.nodes = {{"n1", 2}, {"n2", 2}};
  r.batch_script = "/work/job7/run.sh";
  r.working_dir = "/work/job7";
  r.output_path = "/work/job7/out.txt";
  r.env = {{"TESSEL_PLAN", "dp=4,tp=1 pp=1"}, {"MASTER_ADDR", "127.0.0.1"}};
  return r;
}

TEST_F(SlurmClientTest, SubmitUniformCountsUsesNtasksPerNode) {
  fake_
      .Expect({"sbatch", "--parsable", "--job-name=tessel-job-7", "--nodes=2", "--nodelist=n1,n2",
               "--ntasks-per-node=2", "--gpus-per-task=a100:1", "--gpu-bind=per_task:1",
               "--no-requeue", "--chdir=/work/job7", "--output=/work/job7/out.txt", "--export=ALL",
               "/work/job7/run.sh"})
      .Env("SLURM_CONF", kConf)
      .Env("TESSEL_PLAN", "dp=4,tp=1 pp=1")
      .Env("MASTER_ADDR", "127.0.0.1")
      .Stdout("42\n");
  auto id = client_.Submit(Uniform());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 42);
}

TEST_F(SlurmClientTest, SubmitDifferentCountsIsAHeterogeneousJob) {
  SubmitRequest r = Uniform();
  r.gpu_type = "v100";
  r.nodes = {{"n6", 1}, {"n5", 2}};  // ranks: 0 on n6, 1-2 on n5
  r.error_path = "/work/job7/err.txt";
  r.cpus_per_task = 2;
  r.time_limit_minutes = 90;
  r.partition = "gpu";
  r.requeue = true;
  r.env.clear();
  fake_
      .Expect({"sbatch",
               "--parsable",
               "--job-name=tessel-job-7",
               "--chdir=/work/job7",
               "--output=/work/job7/out.txt",
               "--error=/work/job7/err.txt",
               "--export=ALL",
               "--nodes=1",
               "--nodelist=n6",
               "--ntasks-per-node=1",
               "--gpus-per-task=v100:1",
               "--gpu-bind=per_task:1",
               "--cpus-per-task=2",
               "--partition=gpu",
               "--time=90",
               "--requeue",
               ":",
               "--nodes=1",
               "--nodelist=n5",
               "--ntasks-per-node=2",
               "--gpus-per-task=v100:1",
               "--gpu-bind=per_task:1",
               "--cpus-per-task=2",
               "--partition=gpu",
               "--time=90",
               "--requeue",
               "/work/job7/run.sh"})
      .Env("SLURM_CONF", kConf)
      .Stdout("43;tessel-local\n");
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 43);
}

TEST_F(SlurmClientTest, SubmitRefusedBySlurmIsInvalidArgument) {
  fake_.Expect(SlurmClient::BuildSubmitCommand(Uniform(), Options())->argv)
      .ExitCode(1)
      .Stderr(Recorded("sbatch_invalid_node.stderr"));
  auto id = client_.Submit(Uniform());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(id.status().message(),
            "sbatch exited with code 1: sbatch: error: Batch job submission failed: Invalid "
            "node name specified");
}

TEST_F(SlurmClientTest, SubmitUnknownGpuTypeIsInvalidArgument) {
  fake_.Expect(SlurmClient::BuildSubmitCommand(Uniform(), Options())->argv)
      .ExitCode(1)
      .Stderr(Recorded("sbatch_unknown_gpu_type.stderr"));
  auto id = client_.Submit(Uniform());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(id.status().message(), "Requested node configuration is not available"));
}

TEST_F(SlurmClientTest, SubmitWithControllerDownIsUnavailable) {
  fake_.Expect(SlurmClient::BuildSubmitCommand(Uniform(), Options())->argv)
      .ExitCode(1)
      .Stderr(Recorded("sbatch_ctld_down.stderr"));
  auto id = client_.Submit(Uniform());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(id.status().message(), "Unable to contact slurm controller"));
}

TEST_F(SlurmClientTest, SubmitUnreadableJobIdIsInternal) {
  fake_.Expect(SlurmClient::BuildSubmitCommand(Uniform(), Options())->argv)
      .Stdout("Submitted batch job 42\n");
  auto id = client_.Submit(Uniform());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInternal);
  EXPECT_EQ(id.status().message(),
            "sbatch --parsable printed 'Submitted batch job 42', not a job id");
}

struct BadSubmitCase {
  const char* name;
  void (*mutate)(SubmitRequest&);
  const char* message;
};

TEST_F(SlurmClientTest, SubmitValidatesBeforeRunningAnything) {
  const BadSubmitCase cases[] = {
      {"no name", [](SubmitRequest& r) { r.job_name = ""; },
       "submit: job_name must be one non-empty line"},
      {"gpu type", [](SubmitRequest& r) { r.gpu_type = "a100:2"; },
       "submit: gpu_type 'a100:2' must be a GRES type such as a100"},
      {"no nodes", [](SubmitRequest& r) { r.nodes.clear(); },
       "submit: nodes is empty; an exact allocation names its nodes"},
      {"node list syntax", [](SubmitRequest& r) { r.nodes[0].node = "n[1-2]"; },
       "submit: node name 'n[1-2]' is not a host name"},
      {"duplicate node", [](SubmitRequest& r) { r.nodes[1].node = "n1"; },
       "submit: node n1 is listed twice"},
      {"zero gpus", [](SubmitRequest& r) { r.nodes[1].gpus = 0; },
       "submit: node n2 has 0 GPUs; each node needs at least 1"},
      {"relative workdir", [](SubmitRequest& r) { r.working_dir = "job7"; },
       "submit: working_dir 'job7' must be an absolute path"},
      {"relative output", [](SubmitRequest& r) { r.output_path = "out.txt"; },
       "submit: output_path 'out.txt' must be an absolute path"},
      {"slurm variable",
       [](SubmitRequest& r) {
         r.env = {{"SLURM_HOSTFILE", "/x"}};
       },
       "submit: env name 'SLURM_HOSTFILE': SLURM_* variables are Slurm's"},
      {"bad variable",
       [](SubmitRequest& r) {
         r.env = {{"A-B", "1"}};
       },
       "submit: env name 'A-B' is not a variable name"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SubmitRequest r = Uniform();
    c.mutate(r);
    auto id = client_.Submit(r);  // no command expected
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(id.status().message(), c.message);
  }
}

// ---- cancel, signal ----

TEST_F(SlurmClientTest, CancelRunsScancel) {
  fake_.Expect({"scancel", "42"}).Env("SLURM_CONF", kConf);
  EXPECT_TRUE(client_.Cancel(42).ok());
}

TEST_F(SlurmClientTest, CancelUnknownJobIsFine) {
  fake_.Expect({"scancel", "999999"})
      .ExitCode(1)
      .Stderr(Recorded("scancel_signal_unknown_job.stderr"));
  EXPECT_TRUE(client_.Cancel(999999).ok());
}

TEST_F(SlurmClientTest, CancelWithControllerDownIsUnavailable) {
  fake_.Expect({"scancel", "5"})
      .ExitCode(8)
      .Stderr(
          "scancel: error: Kill job error on job id 5: Unable to contact slurm controller "
          "(connect failure)\n");
  Status s = client_.Cancel(5);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "scancel exited with code 8: scancel: error: Kill job error on job id 5: Unable to "
            "contact slurm controller (connect failure)");
}

TEST_F(SlurmClientTest, SignalRunningJobReachesItsSteps) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  fake_.Expect({"scancel", "--signal=USR1", "1"}).Env("SLURM_CONF", kConf);
  EXPECT_TRUE(client_.Signal(1).ok());
}

TEST_F(SlurmClientTest, SignalTargets) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  fake_.Expect({"scancel", "--signal=TERM", "--full", "2"});
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  fake_.Expect({"scancel", "--signal=USR2", "--batch", "2"});
  EXPECT_TRUE(client_.Signal(2, "SIGTERM", SignalTarget::kAll).ok());
  EXPECT_TRUE(client_.Signal(2, "USR2", SignalTarget::kBatchShell).ok());
}

TEST_F(SlurmClientTest, SignalPendingJobIsFailedPreconditionWithoutScancel) {
  // scancel would retry ~95 s on a pending job; the client checks first.
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  Status s = client_.Signal(4);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "job 4 is PENDING; only a RUNNING job can be signalled");
}

TEST_F(SlurmClientTest, SignalFinishedOrUnknownJob) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  EXPECT_EQ(client_.Signal(5).code(), StatusCode::kFailedPrecondition);  // COMPLETED
  EXPECT_EQ(client_.Signal(999999).code(), StatusCode::kNotFound);
}

TEST_F(SlurmClientTest, SignalRacingTheJobsEnd) {
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  fake_.Expect({"scancel", "--signal=USR1", "1"})
      .ExitCode(1)
      .Stderr("scancel: error: Kill job error on job id 1: Invalid job id specified\n");
  fake_.Expect({"squeue", "--json"}).Stdout(Recorded("squeue_busy.json"));
  fake_.Expect({"scancel", "--signal=USR1", "1"})
      .ExitCode(228)
      .Stderr(Recorded("scancel_signal_pending_job.stderr"));
  EXPECT_EQ(client_.Signal(1).code(), StatusCode::kNotFound);
  EXPECT_EQ(client_.Signal(1).code(), StatusCode::kFailedPrecondition);
}

TEST_F(SlurmClientTest, SignalNameIsChecked) {
  EXPECT_EQ(client_.Signal(1, "USR1; reboot").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client_.Signal(1, "").code(), StatusCode::kInvalidArgument);
}

// ---- drain, resume ----

TEST_F(SlurmClientTest, DrainPassesTheReasonAsOneArgument) {
  fake_
      .Expect({"scontrol", "update", "NodeName=n2", "State=DRAIN",
               "Reason=tessel: node failing, checkpoint first"})
      .Env("SLURM_CONF", kConf);
  EXPECT_TRUE(client_.Drain("n2", "tessel: node failing, checkpoint first").ok());
}

TEST_F(SlurmClientTest, DrainNeedsAReasonAndAKnownNode) {
  EXPECT_EQ(client_.Drain("n2", " ").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client_.Drain("n[1-2]", "x").code(), StatusCode::kInvalidArgument);
  fake_.Expect({"scontrol", "update", "NodeName=n99", "State=DRAIN", "Reason=x"})
      .ExitCode(1)
      .Stderr(Recorded("scontrol_drain_unknown_node.stderr"));
  Status s = client_.Drain("n99", "x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "scontrol exited with code 1: slurm_update error: Invalid node name specified");
}

TEST_F(SlurmClientTest, ResumeIsIdempotent) {
  fake_.Expect({"scontrol", "update", "NodeName=n3", "State=RESUME"});
  fake_.Expect({"scontrol", "update", "NodeName=n4", "State=RESUME"})
      .ExitCode(1)
      .Stderr(Recorded("scontrol_resume_idle_node.stderr"));
  EXPECT_TRUE(client_.Resume("n3").ok());
  EXPECT_TRUE(client_.Resume("n4").ok());  // already in service
}

TEST_F(SlurmClientTest, ResumeWithControllerDownIsUnavailable) {
  fake_.Expect({"scontrol", "update", "NodeName=n3", "State=RESUME"})
      .ExitCode(1)
      .Stderr("slurm_update error: Unable to contact slurm controller (connect failure)\n");
  EXPECT_EQ(client_.Resume("n3").code(), StatusCode::kUnavailable);
}

// ---- power saving ----

// The transition Slurm 22.05 refuses (power saving off, or the node already
// there) is FailedPrecondition, as slurmctld answered it on the local Slurm.
TEST_F(SlurmClientTest, SetPowerAsksSlurmAndSaysWhenItRefuses) {
  fake_.Expect({"scontrol", "update", "NodeName=n3", "State=POWER_UP"}).Env("SLURM_CONF", kConf);
  fake_.Expect({"scontrol", "update", "NodeName=n3", "State=POWER_DOWN"});
  fake_.Expect({"scontrol", "update", "NodeName=n4", "State=POWER_UP"})
      .ExitCode(1)
      .Stderr("slurm_update error: Invalid node state specified\n");
  EXPECT_TRUE(client_.SetPower("n3", true).ok());
  EXPECT_TRUE(client_.SetPower("n3", false).ok());
  EXPECT_EQ(client_.SetPower("n4", true).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(client_.SetPower("n[1-2]", true).code(), StatusCode::kInvalidArgument);
}

TEST(SlurmClientOptions, NoSlurmConfMeansNoOverride) {
  FakeCommandRunner fake;
  fake.Expect({"scancel", "1"});
  ASSERT_TRUE(SlurmClient(fake).Cancel(1).ok());
  EXPECT_TRUE(fake.calls()[0].env.empty());
}

}  // namespace
}  // namespace tessel
