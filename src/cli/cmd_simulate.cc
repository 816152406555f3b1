// `tessel simulate` (one policy) and `tessel compare` (several, side by
// side) on a cluster and a trace.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/sim_flags.h"
#include "policy/policy.h"
#include "core/strings.h"
#include "core/table.h"
#include "sim/report.h"
#include "workload/trace.h"

namespace tessel {
namespace {

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
    "policies decide on the analytical estimator. Jobs of Pollux/Sia workloads are played from their\n"
    "application profiles: progress is statistical, batch sizes adapt under pollux and sia.\n"
    "Restarts cost checkpoint save + load (model size /\n"
    "--storage-gbs per node) + --restart-overhead (+ plan search for adaptive policies).\n"
    "Unfinished jobs (at --horizon) are reported with their reason (jobs.csv, summary), never averaged into\n"
    "JCTs; a job that did all its work but was left unfinished is an internal error. Examples:\n"
    "  tessel simulate --policy fcfs\n"
    "  tessel simulate --cluster arena-1280 --trace $TESSEL_DATA/itp --policy fcfs:backfill=easy --out out/\n"
    "  tessel simulate --cluster arena-1280 --trace $TESSEL_DATA/arena/traces/simulate_trace_philly.csv \\\n"
    "      --policy gavel --truth arena-db --json\n"
    "  tessel simulate --policy tiresias --placement lwf-kappa:kappa=2\n"
    "  tessel simulate --cluster pollux-64 --trace $TESSEL_DATA/pollux/workloads/workload-1.csv --policy pollux\n"
    "  tessel compare --cluster sia-64 --trace $TESSEL_DATA/sia/workloads/philly --each \\\n"
    "      --policies sia,pollux,gavel,tiresias\n"
    "Policy options: name:key=value:key=value (see `tessel policies`). Placement: consolidate (default),\n"
    "first-fit or lwf-kappa:kappa=N, for every policy.";

// The trace files of --trace arguments (workload/trace.h's listing), each
// directory's in natural order (workload-2 before workload-10).
Result<std::vector<std::string>> EachTraceFile(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    auto files = ListTraceFiles(a);
    if (!files.ok()) return files.status();
    std::stable_sort(files->begin(), files->end(), [](const std::string& x, const std::string& y) {
      return x.size() != y.size() ? x.size() < y.size() : x < y;
    });
    out.insert(out.end(), files->begin(), files->end());
  }
  return out;
}

// `compare --each`: every trace file on its own; a table of average JCT
// per file and policy, the mean over files, and how each policy's mean
// compares with the best other policy's.
int CompareEach(CommandIo io, const SimFlags& flags, const std::vector<std::string>& specs) {
  auto listed = EachTraceFile(flags.traces);
  if (!listed.ok()) {
    io.err << "error: --trace: " << listed.status().message() << "\n";
    return ExitCode(listed.status());
  }
  const std::vector<std::string>& files = *listed;
  if (files.empty()) {
    io.err << "error: --each needs --trace files or directories of them\n";
    return 2;
  }
  if (flags.json || !flags.out.empty() || !flags.event_log.empty()) {
    io.err << "error: --each prints one table; it does not take --json, --out or --event-log (run a trace on its "
              "own for those)\n";
    return 2;
  }
  std::vector<std::string> header = {"trace"};
  for (const std::string& p : specs) header.push_back(p + " avg JCT s");
  TextTable table(header);
  std::vector<double> sum(specs.size(), 0.0);
  std::vector<int> unfinished(specs.size(), 0);
  std::vector<int> empty_files(specs.size(), 0);  // files where the policy finished no job
  std::vector<std::string> shown;
  std::string cluster_name;
  for (const std::string& file : files) {
    SimFlags per = flags;
    per.traces = {file};
    per.out.clear();
    per.event_log.clear();
    auto setup = ResolveSim(per);
    if (!setup.ok()) {
      io.err << "error: " << setup.status().message() << "\n";
      return ExitCode(setup.status());
    }
    cluster_name = setup->cluster.name();
    for (const std::string& n : setup->notes) {
      // Notes name the file they come from; say each only once.
      if (std::find(shown.begin(), shown.end(), n) == shown.end()) {
        io.err << "note: " << n << "\n";
        shown.push_back(n);
      }
    }
    std::vector<std::string> row = {std::filesystem::path(file).filename().string()};
    for (size_t i = 0; i < specs.size(); ++i) {
      auto result = RunPolicy(*setup, per, specs[i], io.err);
      if (!result.ok()) {
        io.err << "error: " << file << ": " << specs[i] << ": " << result.status().message() << "\n";
        return ExitCode(result.status());
      }
      const Summary& s = result->summary;
      unfinished[i] += s.jobs_total - s.jobs_finished;
      if (s.jobs_finished == 0) {
        ++empty_files[i];
        row.push_back("-");
        continue;
      }
      sum[i] += s.avg_jct_s;
      row.push_back(FormatDouble(s.avg_jct_s, 5));
    }
    table.AddRow(row);
  }
  std::vector<std::string> mean_row = {"mean"};
  std::vector<double> mean(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    // A policy that finished nothing on some file has no mean.
    mean[i] = empty_files[i] > 0 ? 0 : sum[i] / files.size();
    mean_row.push_back(empty_files[i] > 0 ? "-" : FormatDouble(mean[i], 5));
  }
  table.AddRow(mean_row);
  std::vector<std::string> vs_row = {"vs best other"};
  for (size_t i = 0; i < specs.size(); ++i) {
    double best = 0;
    for (size_t k = 0; k < specs.size(); ++k)
      if (k != i && mean[k] > 0 && (best == 0 || mean[k] < best)) best = mean[k];
    vs_row.push_back(best > 0 && mean[i] > 0 ? FormatDouble(100.0 * (mean[i] / best - 1.0), 3) + "%" : "-");
  }
  table.AddRow(vs_row);
  io.out << "cluster " << cluster_name << ", " << files.size() << " traces, each simulated on its own\n"
         << table.Render();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (unfinished[i] > 0) {
      io.out << "note: " << specs[i] << " left " << unfinished[i]
             << " jobs unfinished or rejected (not in its averages)\n";
    }
  }
  return 0;
}

}  // namespace

CommandAction SetupSimulate(CLI::App& app, CommandIo io) {
  auto flags = std::make_shared<SimFlags>();
  auto policy = std::make_shared<std::string>("fcfs");
  flags->Add(app);
  app.add_option("--policy", *policy, "Policy spec, e.g. fcfs, fcfs:backfill=easy, tiresias, gavel, pollux, sia, arena (default fcfs; see `tessel policies`)");
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
  auto policies = std::make_shared<std::string>("fcfs,srtf,tiresias,gandiva,gavel,gavel-throughput,elasticflow,pollux,sia,optimus,arena");
  flags->Add(app);
  auto each = std::make_shared<bool>(false);
  app.add_option("--policies", *policies,
                 "Comma-separated policy specs (default: every built-in policy but the arena ablations)");
  app.add_flag("--each", *each,
               "Simulate each trace file of --trace (directories: their *.csv) on its own and print average JCT "
               "per file and policy, the mean over files and each policy's mean against the best other's");
  app.footer(kSimFooter);
  return [io, flags, policies, each] {
    std::vector<std::string> specs = PolicyRegistry::Builtin().SplitList(*policies);
    if (specs.empty()) {
      io.err << "error: --policies: expected a comma-separated list of policy specs (see `tessel policies`), got '"
             << *policies << "'\n";
      return 2;
    }
    // Every spec is checked before the first simulation runs.
    for (const std::string& spec : specs) {
      auto policy = PolicyRegistry::Builtin().Create(spec, MakePolicyContext(*flags));
      if (!policy.ok()) {
        io.err << "error: --policies: " << spec << ": " << policy.status().message() << "\n";
        return 2;
      }
    }
    if (*each) return CompareEach(io, *flags, specs);
    auto setup = ResolveSim(*flags);
    if (!setup.ok()) {
      io.err << "error: " << setup.status().message() << "\n";
      return ExitCode(setup.status());
    }
    ShowNotes(*setup, io.err);
    std::vector<SimResult> runs;
    std::vector<Summary> summaries;
    for (const std::string& spec : specs) {
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
