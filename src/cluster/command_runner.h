// CommandRunner: how tessel runs an external program (the Slurm tools) and
// collects its output. The Slurm client talks to the cluster only through
// this interface, so its logic is unit-tested with a fake that replays
// recorded outputs (fake_command_runner.h) and run for real by
// SystemCommandRunner.
//
// A command is an argv vector, never a shell line: arguments reach the
// program literally (spaces, quotes, `;`, `$` and all).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tessel {

struct CommandRequest {
  // argv[0] is looked up on PATH (execvp) unless it contains a '/'.
  std::vector<std::string> argv;
  // Variables set (or overridden) in the child's environment; the rest of
  // the caller's environment is inherited.
  std::vector<std::pair<std::string, std::string>> env;
  // Written to the child's stdin, which is then closed. Without it stdin is
  // /dev/null.
  std::optional<std::string> stdin_text;
  // Wall-clock limit; at its end the child's process group is killed.
  std::chrono::milliseconds timeout{30'000};
};

struct CommandResult {
  // The exit status when the command exited, else -1.
  int exit_code = -1;
  // The signal that killed the command, else 0.
  int term_signal = 0;
  std::string stdout_text;
  std::string stderr_text;

  bool Succeeded() const { return term_signal == 0 && exit_code == 0; }
};

// "sbatch exited with code 1: sbatch: error: ..." (or "was killed by signal
// 9"), naming argv[0] and quoting the first lines of stderr: the text an
// error Status about a failed command should carry.
std::string DescribeCommandFailure(const CommandRequest& request, const CommandResult& result);

// The first `max_lines` non-empty lines of `text`, joined by "; ".
std::string FirstLines(std::string_view text, int max_lines = 3);

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // Runs the command to completion and returns how it ended, whatever its
  // exit status: a non-zero exit is a result, not an error. Errors mean the
  // command could not be run or did not finish:
  //   InvalidArgument - empty argv, or an argument/variable holds a NUL byte;
  //   NotFound        - argv[0] is not an executable program (PATH lookup);
  //   Unavailable     - the timeout passed; the command was killed (retry);
  //   Internal        - pipes or process creation failed.
  // Implementations must be safe to call from several threads at once.
  virtual Result<CommandResult> Run(const CommandRequest& request) = 0;
};

// Runs commands as child processes (posix_spawnp; the child gets its own
// process group, default signal dispositions and an empty signal mask, and
// inherits no descriptor but 0-2). Reads stdout and stderr concurrently with
// poll(), so any output size is fine; on timeout SIGKILLs the whole process
// group and reaps the child. Output written after the command exited, by
// processes it left running in the background, is read only until the
// deadline. Thread-safe: it keeps no state.
class SystemCommandRunner : public CommandRunner {
 public:
  Result<CommandResult> Run(const CommandRequest& request) override;
};

}  // namespace tessel
