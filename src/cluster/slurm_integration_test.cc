// SlurmClient against a real local Slurm: scripts/local-slurm.sh starts
// slurmctld and four virtual nodes (n1, n2: 2 a100; n3, n4: 2 v100) in a
// fresh temp dir for the suite and stops them afterwards. Skipped only when
// the Slurm or munge daemons are not installed; needs root (jobs run as
// root). On failure the directory, with the daemons' logs, is kept.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cluster/command_runner.h"
#include "cluster/slurm_client.h"
#include "core/strings.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr int kNodes = 4;

std::string FindProgram(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin:/usr/local/sbin";
  for (const auto& dir : Split(path, ':')) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// A block of kNodes + 1 free ports, spread by pid so that parallel test
// processes do not collide.
int FreePortBase() {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int base = 28100 + ((getpid() + attempt * 7) % 300) * 10;
    bool free = true;
    for (int p = base; p <= base + kNodes && free; ++p) free = PortFree(p);
    if (free) return base;
  }
  return 28100;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteScript(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
}

class SlurmIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* program : {"slurmctld", "slurmd", "munged"}) {
      if (FindProgram(program).empty()) {
        skip_reason_ = std::string(program) +
                       " is not installed (apt-get install munge slurmctld slurmd "
                       "slurm-client); skipping the local Slurm tests";
        return;
      }
    }
    char tmpl[] = "/tmp/tessel-slurm-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      start_error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    CommandRequest start;
    start.argv = {"bash",        Script(),
                  "start",       dir_,
                  "--nodes",     std::to_string(kNodes),
                  "--port-base", std::to_string(FreePortBase()),
                  "--timeout",   "60"};
    start.timeout = milliseconds(120'000);
    auto r = SystemCommandRunner().Run(start);
    if (!r.ok()) {
      start_error_ = "local-slurm.sh start: " + r.status().ToString();
    } else if (!r->Succeeded()) {
      start_error_ = DescribeCommandFailure(start, *r) + "\n" + r->stderr_text;
    }
  }

  static void TearDownTestSuite() {
    if (dir_.empty()) return;
    CommandRequest stop;
    stop.argv = {"bash", Script(), "stop", dir_};
    stop.timeout = milliseconds(60'000);
    auto r = SystemCommandRunner().Run(stop);
    if (!r.ok() || !r->Succeeded()) {
      ADD_FAILURE() << "local-slurm.sh stop failed: "
                    << (r.ok() ? DescribeCommandFailure(stop, *r) : r.status().ToString());
    }
    if (::testing::UnitTest::GetInstance()->current_test_suite()->Failed() ||
        !start_error_.empty()) {
      std::cerr << "SlurmIntegration: keeping " << dir_ << " (logs in " << dir_ << "/log)\n";
    } else {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
    dir_.clear();
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(start_error_.empty()) << start_error_;
  }

  static std::string Script() { return std::string(TESSEL_SOURCE_DIR) + "/scripts/local-slurm.sh"; }

  SlurmClientOptions Options() const {
    SlurmClientOptions o;
    o.slurm_conf = dir_ + "/slurm.conf";
    return o;
  }

  // A fresh directory for one job.
  std::string JobDir(const std::string& name) {
    std::string d = dir_ + "/jobs/" + name;
    fs::create_directories(d);
    return d;
  }

  SubmitRequest Job(const std::string& name, const std::string& type,
                    std::vector<NodeGpuCount> nodes, const std::string& script) {
    std::string d = JobDir(name);
    SubmitRequest r;
    r.job_name = "tessel-it-" + name;
    r.gpu_type = type;
    r.nodes = std::move(nodes);
    r.batch_script = d + "/run.sh";
    WriteScript(r.batch_script, script);
    r.working_dir = d;
    r.output_path = d + "/out.txt";
    return r;
  }

  // Polls until `done(job)` or `limit`; the job's last view.
  Result<SlurmJob> WaitFor(SlurmJobId id, bool (*done)(const SlurmJob&),
                           milliseconds limit = milliseconds(30'000)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
      auto job = client_.GetJob(id);
      if (!job.ok()) return job.status();
      if (done(*job)) return job;
      if (std::chrono::steady_clock::now() > deadline) {
        return Unavailable("job " + std::to_string(id) + " still " + job->state_text);
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  static bool Finished(const SlurmJob& j) { return IsFinished(j.state); }
  static bool Running(const SlurmJob& j) { return j.state == SlurmJobState::kRunning; }

  // Polls until the file holds `count` lines containing `word`.
  static bool WaitForLines(const std::string& path, const std::string& word, int count) {
    for (int i = 0; i < 300; ++i) {
      int n = 0;
      for (const auto& line : Split(ReadFile(path), '\n')) n += Contains(line, word);
      if (n >= count) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }

  // Polls until every node satisfies `ok` (jobs release their nodes a
  // moment after they are reported finished); false after 10 s.
  bool WaitForNodes(bool (*ok)(const SlurmNode&)) {
    for (int i = 0; i < 100; ++i) {
      auto nodes = client_.ListNodes();
      if (nodes.ok() && std::all_of(nodes->begin(), nodes->end(), ok)) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }

  Result<SlurmNode> GetNode(const std::string& name) {
    auto nodes = client_.ListNodes();
    if (!nodes.ok()) return nodes.status();
    for (const auto& n : *nodes) {
      if (n.name == name) return n;
    }
    return NotFound(name);
  }

  static std::string dir_;
  static std::string skip_reason_;
  static std::string start_error_;
  SystemCommandRunner runner_;
  SlurmClient client_{runner_, Options()};
};

std::string SlurmIntegration::dir_;
std::string SlurmIntegration::skip_reason_;
std::string SlurmIntegration::start_error_;

// Each task prints one line with what Slurm told it.
constexpr const char* kReportScript = R"(#!/bin/bash
srun bash -c 'echo "task rank=$SLURM_PROCID of=$SLURM_NTASKS local=$SLURM_LOCALID node=$SLURMD_NODENAME cuda=$CUDA_VISIBLE_DEVICES nodelist=$SLURM_JOB_NODELIST plan=[$TESSEL_PLAN]"' | sort
)";

TEST_F(SlurmIntegration, DiscoversNodesAndGpuTypes) {
  auto nodes = client_.ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 4u);
  const char* types[] = {"a100", "a100", "v100", "v100"};
  for (int i = 0; i < 4; ++i) {
    const SlurmNode& n = (*nodes)[i];
    SCOPED_TRACE(n.name);
    EXPECT_EQ(n.name, "n" + std::to_string(i + 1));
    EXPECT_EQ(n.state, SlurmNodeState::kIdle);
    EXPECT_TRUE(n.Usable());
    ASSERT_EQ(n.gpus.size(), 1u);
    EXPECT_EQ(n.gpus[0], (SlurmGpus{types[i], 2, 0}));
  }
}

TEST_F(SlurmIntegration, UniformExactAllocationRunsRanksAndEnvironment) {
  SubmitRequest r = Job("uniform", "a100", {{"n1", 2}, {"n2", 2}}, kReportScript);
  r.env = {{"TESSEL_PLAN", "dp=4, tp=1,pp=1 \"quoted\" $HOME"}};
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto job = WaitFor(*id, Finished);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::string out = ReadFile(r.output_path);
  EXPECT_EQ(job->state, SlurmJobState::kCompleted) << out;
  EXPECT_EQ(job->nodes, (std::vector<std::string>{"n1", "n2"}));
  const std::string plan = " plan=[dp=4, tp=1,pp=1 \"quoted\" $HOME]";
  EXPECT_EQ(out, "task rank=0 of=4 local=0 node=n1 cuda=0 nodelist=n[1-2]" + plan +
                     "\n"
                     "task rank=1 of=4 local=1 node=n1 cuda=1 nodelist=n[1-2]" +
                     plan +
                     "\n"
                     "task rank=2 of=4 local=0 node=n2 cuda=0 nodelist=n[1-2]" +
                     plan +
                     "\n"
                     "task rank=3 of=4 local=1 node=n2 cuda=1 nodelist=n[1-2]" +
                     plan + "\n");
}

TEST_F(SlurmIntegration, DifferentCountsPerNodeGetExactlyThoseGpus) {
  // 2 GPUs on n4, 1 on n3, ranks in request order: n4 first.
  SubmitRequest r = Job("nonuniform", "v100", {{"n4", 2}, {"n3", 1}},
                        "#!/bin/bash\n"
                        "srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))} "
                        "bash -c 'echo \"task rank=$SLURM_PROCID of=$SLURM_NTASKS "
                        "local=$SLURM_LOCALID node=$SLURMD_NODENAME cuda=$CUDA_VISIBLE_DEVICES "
                        "nodelist=$SLURM_JOB_NODELIST\"; sleep 1' | sort\n");
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto running = WaitFor(*id, Running);
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  EXPECT_EQ(running->components, 2);
  EXPECT_EQ(running->nodes, (std::vector<std::string>{"n4", "n3"}));
  // While it runs Slurm holds exactly 2 GPUs on n4 and 1 on n3.
  auto n3 = GetNode("n3");
  auto n4 = GetNode("n4");
  ASSERT_TRUE(n3.ok() && n4.ok());
  EXPECT_EQ(n4->gpus[0].used, 2);
  EXPECT_EQ(n3->gpus[0].used, 1);
  auto job = WaitFor(*id, Finished);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::string out = ReadFile(r.output_path);
  EXPECT_EQ(job->state, SlurmJobState::kCompleted) << out;
  EXPECT_EQ(out,
            "task rank=0 of=3 local=0 node=n4 cuda=0 nodelist=n[3-4]\n"
            "task rank=1 of=3 local=1 node=n4 cuda=1 nodelist=n[3-4]\n"
            "task rank=2 of=3 local=0 node=n3 cuda=0 nodelist=n[3-4]\n");
}

TEST_F(SlurmIntegration, SignalAndCancelReachEveryComponent) {
  SubmitRequest r = Job("hetsignal", "a100", {{"n2", 1}, {"n1", 2}},
                        "#!/bin/bash\n"
                        "srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))} "
                        "bash -c 'trap \"echo got-usr1 $SLURM_PROCID\" USR1; "
                        "echo up $SLURM_PROCID; while true; do sleep 0.1; done'\n");
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(WaitForLines(r.output_path, "up ", 3)) << ReadFile(r.output_path);
  ASSERT_TRUE(client_.Signal(*id).ok());
  ASSERT_TRUE(WaitForLines(r.output_path, "got-usr1", 3)) << ReadFile(r.output_path);
  ASSERT_TRUE(client_.Cancel(*id).ok());
  auto job = WaitFor(*id, Finished);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, SlurmJobState::kCancelled);
  EXPECT_EQ(job->components, 2);
  EXPECT_TRUE(WaitForNodes([](const SlurmNode& n) { return n.FreeGpus() == n.TotalGpus(); }));
}

TEST_F(SlurmIntegration, SignalReachesTheTasksAndTheJobGoesOn) {
  SubmitRequest r = Job("signal", "a100", {{"n1", 1}, {"n2", 1}},
                        "#!/bin/bash\n"
                        "srun bash -c 'trap \"echo got-usr1 $SLURM_PROCID; exit 0\" USR1; "
                        "echo up $SLURM_PROCID; while true; do sleep 0.1; done'\n"
                        "echo batch-done\n");
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(WaitForLines(r.output_path, "up ", 2)) << ReadFile(r.output_path);
  Status s = client_.Signal(*id, "USR1");
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto job = WaitFor(*id, Finished);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::string out = ReadFile(r.output_path);
  EXPECT_EQ(job->state, SlurmJobState::kCompleted) << out;
  EXPECT_TRUE(Contains(out, "got-usr1 0")) << out;
  EXPECT_TRUE(Contains(out, "got-usr1 1")) << out;
  EXPECT_TRUE(Contains(out, "batch-done")) << out;  // the batch shell was spared
  // A finished job cannot be signalled.
  EXPECT_EQ(client_.Signal(*id).code(), StatusCode::kFailedPrecondition);
}

TEST_F(SlurmIntegration, CancelEndsARunningJob) {
  SubmitRequest r = Job("cancel", "v100", {{"n3", 2}}, "#!/bin/bash\nsrun sleep 300\n");
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(WaitFor(*id, Running).ok());
  ASSERT_TRUE(client_.Cancel(*id).ok());
  auto job = WaitFor(*id, Finished);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, SlurmJobState::kCancelled);
  EXPECT_TRUE(client_.Cancel(*id).ok());  // again: fine
  auto jobs = client_.ListJobs("tessel-it-cancel");
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, *id);
}

TEST_F(SlurmIntegration, DrainUnderARunningJobThenResume) {
  SubmitRequest r = Job("drain", "a100", {{"n2", 2}}, "#!/bin/bash\nsrun sleep 300\n");
  auto id = client_.Submit(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(WaitFor(*id, Running).ok());

  ASSERT_TRUE(client_.Drain("n2", "tessel test: drain under a job").ok());
  auto n2 = GetNode("n2");
  ASSERT_TRUE(n2.ok());
  EXPECT_TRUE(n2->Drain());
  EXPECT_FALSE(n2->Usable());
  EXPECT_NE(n2->state, SlurmNodeState::kIdle) << n2->StateString();  // draining
  EXPECT_EQ(n2->reason, "tessel test: drain under a job");
  auto still = client_.GetJob(*id);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->state, SlurmJobState::kRunning);  // draining does not stop it

  ASSERT_TRUE(client_.Cancel(*id).ok());
  ASSERT_TRUE(WaitFor(*id, Finished).ok());
  EXPECT_TRUE(WaitForNodes([](const SlurmNode& n) {
    return n.name != "n2" || n.StateString() == "IDLE+DRAIN";  // drained
  }));

  ASSERT_TRUE(client_.Resume("n2").ok());
  ASSERT_TRUE(client_.Resume("n2").ok());  // idempotent
  bool usable = false;
  for (int i = 0; i < 100 && !usable; ++i) {  // NOT_RESPONDING until pinged
    n2 = GetNode("n2");
    ASSERT_TRUE(n2.ok());
    usable = n2->Usable();
    if (!usable) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(usable) << n2->StateString();
  EXPECT_EQ(client_.Drain("n99", "x").code(), StatusCode::kNotFound);
}

TEST_F(SlurmIntegration, RefusedSubmissionIsInvalidArgument) {
  SubmitRequest r = Job("refused", "a100", {{"n99", 1}}, kReportScript);
  auto id = client_.Submit(r);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(id.status().message(), "Invalid node name specified"))
      << id.status().message();
  // a100 GPUs do not exist on v100 nodes.
  SubmitRequest wrong_type = Job("wrongtype", "a100", {{"n3", 1}}, kReportScript);
  auto id2 = client_.Submit(wrong_type);
  ASSERT_FALSE(id2.ok());
  EXPECT_EQ(id2.status().code(), StatusCode::kInvalidArgument) << id2.status().ToString();
}

}  // namespace
}  // namespace tessel
