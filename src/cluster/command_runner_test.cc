#include "cluster/command_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cluster/fake_command_runner.h"
#include "core/strings.h"

namespace tessel {
namespace {

using std::chrono::milliseconds;

CommandRequest Cmd(std::vector<std::string> argv) {
  CommandRequest r;
  r.argv = std::move(argv);
  r.timeout = milliseconds(20'000);
  return r;
}

int OpenFdCount() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

TEST(SystemCommandRunner, ExitCodeAndStdout) {
  SystemCommandRunner runner;
  auto r = runner.Run(Cmd({"sh", "-c", "echo hello; exit 3"}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->term_signal, 0);
  EXPECT_FALSE(r->Succeeded());
  EXPECT_EQ(r->stdout_text, "hello\n");
  EXPECT_EQ(r->stderr_text, "");
}

TEST(SystemCommandRunner, SuccessIsExitZero) {
  SystemCommandRunner runner;
  auto r = runner.Run(Cmd({"true"}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->Succeeded());
}

TEST(SystemCommandRunner, StderrIsCapturedApartAndDescribed) {
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"sh", "-c",
                            "echo out; echo 'first problem' >&2; "
                            "echo second >&2; echo third >&2; echo fourth >&2; "
                            "exit 2"});
  auto r = runner.Run(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "first problem\nsecond\nthird\nfourth\n");
  EXPECT_EQ(DescribeCommandFailure(req, *r),
            "sh exited with code 2: first problem; second; third; ...");
}

TEST(SystemCommandRunner, KilledBySignalIsReported) {
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"sh", "-c", "kill -TERM $$"});
  auto r = runner.Run(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->term_signal, SIGTERM);
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_EQ(DescribeCommandFailure(req, *r), "sh was killed by signal 15: (no output)");
}

TEST(SystemCommandRunner, TimeoutKillsTheCommand) {
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"sleep", "30"});
  req.timeout = milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  auto r = runner.Run(req);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "sleep timed out after 0.2 s; killed its process group");
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

TEST(SystemCommandRunner, TimeoutKillsTheWholeProcessGroup) {
  // The background sleep keeps stdout open; only killing the group ends it.
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"sh", "-c", "echo started >&2; sleep 30 & sleep 30"});
  req.timeout = milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto r = runner.Run(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(r.status().message(), "stderr so far: started")) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(SystemCommandRunner, LargeOutputOnBothStreamsDoesNotDeadlock) {
  SystemCommandRunner runner;
  auto r = runner.Run(Cmd({"sh", "-c",
                           "head -c 1048576 /dev/zero | tr '\\0' a; "
                           "head -c 1048576 /dev/zero | tr '\\0' b >&2; "
                           "head -c 1000 /dev/zero | tr '\\0' c"}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->Succeeded());
  ASSERT_EQ(r->stdout_text.size(), 1048576u + 1000u);
  EXPECT_EQ(r->stdout_text.front(), 'a');
  EXPECT_EQ(r->stdout_text.back(), 'c');
  EXPECT_EQ(r->stderr_text, std::string(1048576, 'b'));
}

TEST(SystemCommandRunner, ArgumentsArePassedLiterally) {
  SystemCommandRunner runner;
  std::vector<std::string> args = {"a b", "$HOME", "; rm -rf /", "'q\"", "*", "x|y&z", ""};
  std::vector<std::string> argv = {"printf", "[%s]\\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = runner.Run(Cmd(argv));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "[a b]\n[$HOME]\n[; rm -rf /]\n['q\"]\n[*]\n[x|y&z]\n[]\n");
}

TEST(SystemCommandRunner, EnvironmentIsAddedToTheInheritedOne) {
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"sh", "-c", "printf '%s|%s' \"$TESSEL_TEST_VAR\" \"${PATH:+path}\""});
  req.env = {{"TESSEL_TEST_VAR", "a,b c\nd"}};
  auto r = runner.Run(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "a,b c\nd|path");
}

TEST(SystemCommandRunner, StdinIsFedAndClosed) {
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"cat"});
  req.stdin_text = std::string(1 << 20, 'x') + "end";
  auto r = runner.Run(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, *req.stdin_text);
}

TEST(SystemCommandRunner, StdinNotReadIsNoProblem) {
  SystemCommandRunner runner;
  CommandRequest req = Cmd({"true"});
  req.stdin_text = std::string(4 << 20, 'x');  // more than a pipe holds
  auto r = runner.Run(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->Succeeded());
}

TEST(SystemCommandRunner, WithoutStdinTheChildReadsEof) {
  SystemCommandRunner runner;
  auto r = runner.Run(Cmd({"cat"}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->Succeeded());
  EXPECT_EQ(r->stdout_text, "");
}

TEST(SystemCommandRunner, MissingProgramIsNotFound) {
  SystemCommandRunner runner;
  auto r = runner.Run(Cmd({"tessel-no-such-program", "x"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(r.status().message(), "tessel-no-such-program: cannot execute"))
      << r.status().message();
}

TEST(SystemCommandRunner, EmptyArgvIsInvalid) {
  SystemCommandRunner runner;
  auto r = runner.Run(Cmd({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(SystemCommandRunner, ChildInheritsNoDescriptorsAndParentLeaksNone) {
  // A descriptor without O_CLOEXEC must still not reach the child.
  int leaky = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 0);
  SystemCommandRunner runner;
  int before = OpenFdCount();
  auto r = runner.Run(Cmd({"ls", "/proc/self/fd"}));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(runner.Run(Cmd({"true"})).ok());
  CommandRequest slow = Cmd({"sleep", "30"});
  slow.timeout = milliseconds(50);
  ASSERT_FALSE(runner.Run(slow).ok());
  int after = OpenFdCount();
  close(leaky);
  ASSERT_TRUE(r.ok());
  // ls sees 0, 1, 2 and the descriptor it opened to read the directory.
  EXPECT_EQ(r->stdout_text, "0\n1\n2\n3\n");
  EXPECT_EQ(before, after);
}

TEST(SystemCommandRunner, LeavesNoZombies) {
  SystemCommandRunner runner;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(runner.Run(Cmd({"true"})).ok());
  CommandRequest slow = Cmd({"sleep", "30"});
  slow.timeout = milliseconds(100);
  ASSERT_FALSE(runner.Run(slow).ok());
  int status;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(SystemCommandRunner, RunsConcurrentlyFromManyThreads) {
  SystemCommandRunner runner;
  std::vector<std::thread> threads;
  std::vector<int> wrong(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string word = std::to_string(t) + "-" + std::to_string(i);
        auto r = runner.Run(Cmd({"echo", word}));
        if (!r.ok() || r->stdout_text != word + "\n") ++wrong[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(CommandRunnerDescribe, FirstLinesSkipsBlanksAndTrims) {
  EXPECT_EQ(FirstLines("\n  a  \n\nb\n", 3), "a; b");
  EXPECT_EQ(FirstLines("1\n2\n3\n4\n", 2), "1; 2; ...");
  EXPECT_EQ(FirstLines("", 3), "");
}

TEST(FakeCommandRunner, ReplaysInOrderAndRecordsCalls) {
  FakeCommandRunner fake;
  fake.Expect({"a", "1"}).Stdout("one");
  fake.Expect({"b"}).ExitCode(2).Stderr("bad");
  auto r1 = fake.Run(Cmd({"a", "1"}));
  auto r2 = fake.Run(Cmd({"b"}));
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->stdout_text, "one");
  EXPECT_TRUE(r1->Succeeded());
  EXPECT_EQ(r2->exit_code, 2);
  EXPECT_EQ(r2->stderr_text, "bad");
  ASSERT_EQ(fake.calls().size(), 2u);
  EXPECT_EQ(fake.calls()[1].argv, std::vector<std::string>{"b"});
}

TEST(FakeCommandRunner, AnyOrderMatchesByArgv) {
  FakeCommandRunner fake;
  fake.InAnyOrder();
  fake.Expect({"a"}).Stdout("A");
  fake.Expect({"b"}).Stdout("B");
  EXPECT_EQ(fake.Run(Cmd({"b"}))->stdout_text, "B");
  EXPECT_EQ(fake.Run(Cmd({"a"}))->stdout_text, "A");
}

TEST(FakeCommandRunner, WrongArgvFailsTheTestShowingBoth) {
  EXPECT_NONFATAL_FAILURE(
      {
        FakeCommandRunner fake;
        fake.Expect({"sinfo", "--json"});
        auto r = fake.Run(Cmd({"sinfo", "--yaml", "a b"}));
        EXPECT_EQ(r.status().code(), StatusCode::kInternal);
      },
      "expected: [sinfo --json]\n       got: [sinfo --yaml 'a b']");
}

TEST(FakeCommandRunner, UnexpectedExtraCallFails) {
  EXPECT_NONFATAL_FAILURE(
      {
        FakeCommandRunner fake;
        (void)fake.Run(Cmd({"scancel", "1"}));
      },
      "no more commands expected");
}

TEST(FakeCommandRunner, UnusedExpectationFails) {
  EXPECT_NONFATAL_FAILURE(
      {
        FakeCommandRunner fake;
        fake.Expect({"squeue", "--json"});
      },
      "expected command never ran: [squeue --json]");
}

void RunWithWrongEnvironment() {
  FakeCommandRunner fake;
  fake.Expect({"x"}).Env("SLURM_CONF", "/a");
  CommandRequest req = Cmd({"x"});
  req.env.emplace_back("SLURM_CONF", "/b");
  (void)fake.Run(req);
}

TEST(FakeCommandRunner, ChecksEnvironment) {
  EXPECT_NONFATAL_FAILURE(RunWithWrongEnvironment(),
                          "expected SLURM_CONF=/a in its environment; got SLURM_CONF=/b");
}

TEST(FakeCommandRunner, ScriptedErrors) {
  FakeCommandRunner fake;
  fake.Expect({"x"}).Fails(Unavailable("x timed out"));
  auto r = fake.Run(Cmd({"x"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "x timed out");
}

}  // namespace
}  // namespace tessel
