// The command table of the `tessel` binary: each subcommand is a row (name,
// one-line summary, a function that declares its flags on a CLI11 app and
// returns the action to run). main() and the tests dispatch through it.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessel {

// What a command writes to, so tests can capture it.
struct CommandIo {
  std::ostream& out;
  std::ostream& err;
};

using CommandAction = std::function<int()>;
struct CommandSpec {
  const char* name;
  const char* summary;
  // Declares flags on `app`; the returned action runs after parsing.
  std::function<CommandAction(CLI::App& app, CommandIo io)> setup;
  // The doc a user reads next (a path in the source tree), named in --help.
  const char* doc;
};

const std::vector<CommandSpec>& Commands();

// Runs the CLI on `args` (args[0] is the program name). Exit codes: 0 done,
// 1 a runtime failure (e.g. a data file missing), 2 bad input.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Per-command setup functions (one file each).
CommandAction SetupGpus(CLI::App& app, CommandIo io);
CommandAction SetupNodeTypes(CLI::App& app, CommandIo io);
CommandAction SetupModels(CLI::App& app, CommandIo io);
CommandAction SetupEstimate(CLI::App& app, CommandIo io);
CommandAction SetupPlan(CLI::App& app, CommandIo io);
CommandAction SetupAccuracy(CLI::App& app, CommandIo io);
CommandAction SetupCalibrate(CLI::App& app, CommandIo io);
CommandAction SetupKernels(CLI::App& app, CommandIo io);
CommandAction SetupClusters(CLI::App& app, CommandIo io);
CommandAction SetupPolicies(CLI::App& app, CommandIo io);
CommandAction SetupGenTrace(CLI::App& app, CommandIo io);
CommandAction SetupSimulate(CLI::App& app, CommandIo io);
CommandAction SetupCompare(CLI::App& app, CommandIo io);
CommandAction SetupSweep(CLI::App& app, CommandIo io);
CommandAction SetupJobExec(CLI::App& app, CommandIo io);
// The clients of `tessel serve` (cmd_client.cc) and its benchmark.
CommandAction SetupSubmit(CLI::App& app, CommandIo io);
CommandAction SetupJobs(CLI::App& app, CommandIo io);
CommandAction SetupJob(CLI::App& app, CommandIo io);
CommandAction SetupCancel(CLI::App& app, CommandIo io);
CommandAction SetupClientNodes(CLI::App& app, CommandIo io);
CommandAction SetupLoadtest(CLI::App& app, CommandIo io);
CommandAction SetupServe(CLI::App& app, CommandIo io);

}  // namespace tessel
