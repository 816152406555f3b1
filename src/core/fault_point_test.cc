#include "core/fault_point.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessel {
namespace {

TEST(FaultPoint, ParsesNameAndCount) {
  EXPECT_EQ(ParseFaultPoint("after-sbatch").name, "after-sbatch");
  EXPECT_EQ(ParseFaultPoint("after-sbatch").count, 1);
  EXPECT_EQ(ParseFaultPoint("after-sbatch:3").name, "after-sbatch");
  EXPECT_EQ(ParseFaultPoint("after-sbatch:3").count, 3);
  EXPECT_EQ(ParseFaultPoint("odd:name:x").name, "odd:name:x");
  EXPECT_EQ(ParseFaultPoint("zero:0").count, 1);
}

// The armed point kills the process at its N-th passage, not before, and
// other points never do.
TEST(FaultPoint, KillsAtTheNamedPointOnItsNthPassage) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("TESSEL_FAULT_POINT", "here:2", 1);
    FaultPoint("elsewhere");
    FaultPoint("here");
    FaultPoint("elsewhere");
    FaultPoint("here");  // dies
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST(FaultPoint, UnsetDoesNothing) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    unsetenv("TESSEL_FAULT_POINT");
    for (int i = 0; i < 3; ++i) FaultPoint("here");
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace tessel
