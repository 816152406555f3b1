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

// Runs job-exec on a launch of /bin/sh writing its PYTHONPATH to a file,
// with `inherited` (nullptr: unset) in job-exec's own environment; returns
// what the job saw, or "exit N" when job-exec failed.
std::string PythonPathSeen(const std::map<std::string, std::string>& spec_env, const char* inherited) {
  static std::atomic<int> n{0};
  std::string dir = testing::ProcessTempDir() + "/job_exec" + std::to_string(n++);
  std::filesystem::create_directories(dir);
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", "printf %s \"${PYTHONPATH-unset}\" > seen"};
  s.workdir = dir;
  s.user_env = spec_env;
  s.python_dir = "/opt/tessel python";
  std::ofstream(dir + "/launch.json") << LaunchFileJson(s);
  // Appends only (GCC 12 warns falsely, -Wrestrict, on "lit" + string here).
  std::string cmd = "env -u PYTHONPATH";
  if (inherited != nullptr) cmd.append(" PYTHONPATH='").append(inherited).append("'");
  cmd.append(" '").append(TESSEL_BINARY).append("' job-exec '").append(dir).append("/launch.json'");
  int rc = std::system(cmd.c_str());
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) return "exit " + std::to_string(WEXITSTATUS(rc));
  return ReadAll(dir + "/seen");
}

TEST(JobExec, PythonDirGoesFirstOnThePythonPathTheJobWouldHave) {
  EXPECT_EQ(PythonPathSeen({}, nullptr), "/opt/tessel python");
  EXPECT_EQ(PythonPathSeen({}, ""), "/opt/tessel python");
  EXPECT_EQ(PythonPathSeen({}, "/site/a:/site/b"), "/opt/tessel python:/site/a:/site/b");
  EXPECT_EQ(PythonPathSeen({{"PYTHONPATH", "/mine"}}, "/site/a"), "/opt/tessel python:/mine")
      << "the spec's PYTHONPATH replaces the inherited one, after tessel's";
}

}  // namespace
}  // namespace tessel
