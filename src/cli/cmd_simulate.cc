// `tessel simulate` (one policy) and `tessel compare` (several, side by
// side) on a cluster and a trace.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "cli/commands.h"
#include "cli/sim_flags.h"
#include "core/strings.h"
#include "sim/report.h"

namespace tessel {
namespace {

int ExitCode(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

void ShowNotes(const SimSetup& setup, std::ostream& err) {
  for (const std::string& n : setup.notes) err << "note: " << n << "\n";
}

// Writes --out (when given) with `write`, reports where, and returns the
// command's exit code.
int FinishOutputs(CommandIo io, const SimFlags& flags,
                  const std::function<Status(const std::string& dir, std::string* warning)>& write) {
  if (flags.out.empty()) return 0;
  std::string warning;
  Status s = write(flags.out, &warning);
  if (!s.ok()) {
    io.err << "error: " << s.message() << "\n";
    return 1;
  }
  if (!warning.empty()) io.err << "warning: " << warning << "\n";
  if (!flags.json) io.out << "outputs in " << flags.out << "\n";
  return 0;
}

const char* kSimFooter =
    "\nTime: integer microseconds; jobs progress at the --truth rate of their allocation and plan,\n"
    "policies decide on the analytical estimator. Restarts cost checkpoint save + load (model size /\n"
    "--storage-gbs per node) + --restart-overhead (+ plan search for adaptive policies).\n"
    "Unfinished jobs (at --horizon) are reported, never averaged into JCTs. Examples:\n"
    "  tessel simulate --policy fcfs\n"
    "  tessel simulate --cluster arena-1280 --trace $TESSEL_DATA/itp --policy fcfs:backfill=easy --out out/\n"
    "  tessel simulate --cluster arena-1280 --trace $TESSEL_DATA/arena/traces/simulate_trace_philly.csv \\\n"
    "      --policy gavel --truth arena-db --json\n"
    "Policy options: name:key=value:key=value (see `tessel policies`).";

}  // namespace

CommandAction SetupSimulate(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<SimFlags>();
  auto policy = std::make_shared<std::string>("fcfs");
  flags->Add(app);
  app.add_option("--policy", *policy, "Policy spec, e.g. fcfs, fcfs:backfill=easy, tiresias, gavel (default fcfs)");
  app.footer(kSimFooter);
  return [io, flags, policy] {
    auto setup = ResolveSim(*flags);
    if (!setup.ok()) {
      io.err << "error: " << setup.status().message() << "\n";
      return ExitCode(setup.status());
    }
    ShowNotes(*setup, io.err);
    auto result = RunPolicy(*setup, *flags, *policy, io.err);
    if (!result.ok()) {
      io.err << "error: " << result.status().message() << "\n";
      return ExitCode(result.status());
    }
    if (flags->json) {
      io.out << SummaryJson(result->summary);
    } else {
      RenderSummary(result->summary, io.out);
    }
    return FinishOutputs(io, *flags, [&](const std::string& dir, std::string* warning) {
      return WriteRunOutputs(*result, setup->cluster, dir, warning);
    });
  };
}

CommandAction SetupCompare(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<SimFlags>();
  auto policies = std::make_shared<std::string>("fcfs,srtf,tiresias,gandiva,gavel,gavel-throughput,elasticflow");
  flags->Add(app);
  app.add_option("--policies", *policies,
                 "Comma-separated policy specs (default: every baseline)");
  app.footer(kSimFooter);
  return [io, flags, policies] {
    auto setup = ResolveSim(*flags);
    if (!setup.ok()) {
      io.err << "error: " << setup.status().message() << "\n";
      return ExitCode(setup.status());
    }
    ShowNotes(*setup, io.err);
    std::vector<SimResult> runs;
    std::vector<Summary> summaries;
    for (const std::string& raw : Split(*policies, ',')) {
      std::string spec = Trim(raw);
      if (spec.empty()) continue;
      SimFlags per = *flags;
      if (!per.event_log.empty()) per.event_log += "." + spec;
      auto result = RunPolicy(*setup, per, spec, io.err);
      if (!result.ok()) {
        io.err << "error: " << spec << ": " << result.status().message() << "\n";
        return ExitCode(result.status());
      }
      summaries.push_back(result->summary);
      runs.push_back(std::move(*result));
    }
    if (flags->json) {
      io.out << SummaryListJson(summaries);
    } else {
      RenderComparison(summaries, io.out);
    }
    return FinishOutputs(io, *flags, [&](const std::string& dir, std::string* warning) {
      return WriteComparisonOutputs(runs, setup->cluster, dir, warning);
    });
  };
}

}  // namespace tessel
