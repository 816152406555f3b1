// `tessel job-exec`, end to end: the real binary exec()s a launch file's
// argv with its environment, and puts the launch's python directory first
// on the PYTHONPATH the job would otherwise have (its spec's, else the
// inherited one).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster/launch.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs job-exec on a launch of /bin/sh writing `expr` (a shell expansion) to
// a file, with `env_prefix` before job-exec; returns what the job saw, or
// "exit N" when job-exec failed.
std::string Seen(const std::map<std::string, std::string>& spec_env, const std::string& env_prefix,
                 const std::string& expr) {
  static std::atomic<int> n{0};
  std::string dir = testing::ProcessTempDir() + "/job_exec" + std::to_string(n++);
  std::filesystem::create_directories(dir);
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", "printf %s \"" + expr + "\" > seen"};
  s.workdir = dir;
  s.user_env = spec_env;
  s.python_dir = "/opt/tessel python";
  std::ofstream(dir + "/launch.json") << LaunchFileJson(s);
  // Appends only (GCC 12 warns falsely, -Wrestrict, on "lit" + string here).
  std::string cmd = env_prefix;
  cmd.append(" '").append(TESSEL_BINARY).append("' job-exec '").append(dir).append("/launch.json'");
  int rc = std::system(cmd.c_str());
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) return "exit " + std::to_string(WEXITSTATUS(rc));
  return ReadAll(dir + "/seen");
}

// PYTHONPATH as the job saw it, with `inherited` (nullptr: unset) in
// job-exec's own environment.
std::string PythonPathSeen(const std::map<std::string, std::string>& spec_env, const char* inherited) {
  std::string prefix = "env -u PYTHONPATH";
  if (inherited != nullptr) prefix.append(" PYTHONPATH='").append(inherited).append("'");
  return Seen(spec_env, prefix, "${PYTHONPATH-unset}");
}

TEST(JobExec, PythonDirGoesFirstOnThePythonPathTheJobWouldHave) {
  EXPECT_EQ(PythonPathSeen({}, nullptr), "/opt/tessel python");
  EXPECT_EQ(PythonPathSeen({}, ""), "/opt/tessel python");
  EXPECT_EQ(PythonPathSeen({}, "/site/a:/site/b"), "/opt/tessel python:/site/a:/site/b");
  EXPECT_EQ(PythonPathSeen({{"PYTHONPATH", "/mine"}}, "/site/a"), "/opt/tessel python:/mine")
      << "the spec's PYTHONPATH replaces the inherited one, after tessel's";
}

TEST(JobExec, TasksGetTorchDistributedNamesFromSrunsUnlessSet) {
  const std::string expr = "${RANK-unset} ${LOCAL_RANK-unset} ${WORLD_SIZE-unset}";
  const std::string clean = "env -u RANK -u LOCAL_RANK -u WORLD_SIZE";
  EXPECT_EQ(Seen({}, clean + " SLURM_PROCID=5 SLURM_LOCALID=1 SLURM_NTASKS=8", expr), "5 1 8");
  EXPECT_EQ(Seen({}, clean + " -u SLURM_PROCID -u SLURM_LOCALID -u SLURM_NTASKS", expr),
            "unset unset unset")
      << "outside srun nothing is made up";
  EXPECT_EQ(Seen({{"RANK", "2"}}, clean + " SLURM_PROCID=5 SLURM_LOCALID=1 SLURM_NTASKS=8", expr), "2 1 8")
      << "a value the job's spec sets wins";
}

}  // namespace
}  // namespace tessel
