// `tessel sweep`: a grid of simulations from a YAML file (cli/sweep.h), run
// locally on threads or as a Slurm job array, resumable, gathered into one
// table with means and 95% confidence intervals over seeds.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/sim_flags.h"
#include "cli/sweep.h"
#include "cluster/command_runner.h"
#include "cluster/launch.h"
#include "core/csv.h"

namespace fs = std::filesystem;

namespace tessel {
namespace {

std::string SelfPath() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tessel") : p.string();
}

// The task of a Slurm array: its cells, those without a result.
int RunTask(CommandIo io, const std::string& dir, int task) {
  int per_task = 1;
  auto cells = ReadSweepPlan(dir, &per_task, nullptr);
  if (!cells.ok()) {
    io.err << "error: --task: " << cells.status().message() << "\n";
    return 2;
  }
  const size_t begin = static_cast<size_t>(task) * static_cast<size_t>(std::max(1, per_task));
  if (begin >= cells->size()) {
    io.err << "error: --task " << task << ": the sweep has " << cells->size() << " cells, "
           << per_task << " per task\n";
    return 2;
  }
  const size_t end = std::min(cells->size(), begin + static_cast<size_t>(std::max(1, per_task)));
  int failed = 0;
  for (size_t i = begin; i < end; ++i) {
    const SweepCell& c = (*cells)[i];
    if (SweepCellDone(dir, c)) {
      io.out << "cell " << c.Id() << ": done before\n";
      continue;
    }
    Status s = RunSweepCell(dir, c);
    if (s.ok()) {
      io.out << "cell " << c.Id() << ": " << c.policy << ", " << c.cluster << ", seed " << c.seed << "\n";
    } else {
      ++failed;
      io.err << "error: cell " << c.Id() << ": " << s.message() << "\n";
    }
  }
  return failed ? 1 : 0;
}

struct SlurmOptions {
  std::string partition;
  int max_parallel = 0;
  int time_limit_minutes = 0;
};

// Submits the tasks that still have cells to run as one job array and waits
// for it (sbatch --wait). Returns the array's job id text, or an error.
Result<std::string> SubmitArray(const std::string& dir, const std::string& name, const std::vector<SweepCell>& cells,
                                int per_task, const SlurmOptions& o, std::ostream& out) {
  std::vector<int> tasks;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int task = static_cast<int>(i) / per_task;
    if (!SweepCellDone(dir, cells[i]) && (tasks.empty() || tasks.back() != task)) tasks.push_back(task);
  }
  if (tasks.empty()) return std::string();
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "logs", ec);
  const fs::path script = fs::absolute(fs::path(dir) / "sweep-task.sh");
  {
    std::ofstream f(script, std::ios::trunc);
    f << "#!/bin/sh\n# Written by `tessel sweep`: one task of the sweep's Slurm job array.\nexec "
      << ShellQuote(SelfPath()) << " sweep --out " << ShellQuote(fs::absolute(dir).string())
      << " --task \"$SLURM_ARRAY_TASK_ID\"\n";
    if (!f) return Unavailable("cannot write " + script.string());
  }
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec, ec);
  std::string list;
  for (int t : tasks) list += (list.empty() ? "" : ",") + std::to_string(t);
  if (o.max_parallel > 0) list += "%" + std::to_string(o.max_parallel);
  CommandRequest r;
  r.argv = {"sbatch", "--parsable", "--wait", "--array=" + list, "--job-name=tessel-sweep-" + name,
            "--chdir=" + fs::absolute(dir).string(), "--output=" + fs::absolute(dir).string() + "/logs/task-%a.out",
            "--ntasks=1"};
  if (!o.partition.empty()) r.argv.push_back("--partition=" + o.partition);
  if (o.time_limit_minutes > 0) r.argv.push_back("--time=" + std::to_string(o.time_limit_minutes));
  r.argv.push_back(script.string());
  r.timeout = std::chrono::hours(24 * 30);
  out << "submitting " << tasks.size() << " Slurm array task(s) of " << per_task << " cell(s) each; waiting\n"
      << std::flush;
  SystemCommandRunner runner;
  auto result = runner.Run(r);
  if (!result.ok()) return result.status();
  std::string id = result->stdout_text;
  id.erase(std::remove(id.begin(), id.end(), '\n'), id.end());
  if (!result->Succeeded()) {
    // sbatch --wait exits non-zero when a task failed; the results say which.
    return Status(StatusCode::kUnavailable, DescribeCommandFailure(r, *result) + (id.empty() ? "" : " (job " + id + ")"));
  }
  return id;
}

void PrintTable(const std::string& table_csv, std::ostream& out) {
  auto parsed = CsvTable::Parse(table_csv, "table.csv");
  if (!parsed.ok()) return;
  const CsvTable& t = *parsed;
  std::vector<std::string> keys;
  for (const std::string& c : t.header()) {
    if (c.size() > 5 && c.compare(c.size() - 5, 5, "_mean") == 0) break;
    keys.push_back(c);
  }
  std::vector<std::vector<std::string>> lines = {keys};
  lines[0].insert(lines[0].end(), {"avg JCT (s)", "p95 JCT (s)", "makespan (s)", "utilisation"});
  auto pm = [&](const CsvRow& row, const std::string& m, int digits) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(digits);
    const std::string mean = t.Get(row, m + "_mean"), ci = t.Get(row, m + "_ci95");
    if (mean.empty()) return std::string("-");
    o << std::stod(mean);
    if (!ci.empty()) o << " ± " << std::stod(ci);
    return o.str();
  };
  for (const CsvRow& row : t.rows()) {
    std::vector<std::string> l;
    for (const std::string& k : keys) {
      std::string v = t.Get(row, k);
      if (k == "trace" && !v.empty()) v = fs::path(v).filename().string();
      l.push_back(v.empty() ? "-" : v);
    }
    l.insert(l.end(), {pm(row, "avg_jct_s", 0), pm(row, "p95_jct_s", 0), pm(row, "makespan_s", 0),
                       pm(row, "gpu_utilization", 3)});
    lines.push_back(l);
  }
  std::vector<size_t> width(lines[0].size(), 0);
  for (const auto& l : lines)
    for (size_t i = 0; i < l.size(); ++i) width[i] = std::max(width[i], l[i].size());
  for (const auto& l : lines) {
    std::string line;
    for (size_t i = 0; i < l.size(); ++i) line += (i ? "  " : "") + l[i] + std::string(width[i] - l[i].size(), ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace

CommandAction SetupSweep(CLI::App& app, CommandIo io) {
  auto file = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto workers = std::make_shared<int>(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  auto slurm = std::make_shared<bool>(false);
  auto per_task = std::make_shared<int>(1);
  auto task = std::make_shared<int>(-1);
  auto json_out = std::make_shared<bool>(false);
  auto so = std::make_shared<SlurmOptions>();
  app.add_option("sweep", *file, "The sweep file (YAML: policies, clusters, traces, seeds, options)");
  app.add_option("--out", *out, "Folder for the plan, each cell's result and the tables (required)")->required();
  app.add_option("--workers", *workers, "Cells run at once on this machine (default: its cores)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--slurm", *slurm, "Run the cells as a Slurm job array (sbatch --wait) instead of here");
  app.add_option("--cells-per-task", *per_task, "With --slurm: cells each array task runs (default 1)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--max-parallel", so->max_parallel, "With --slurm: array tasks running at once (0 = Slurm's choice)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--partition", so->partition, "With --slurm: the partition");
  app.add_option("--time-limit", so->time_limit_minutes, "With --slurm: each task's time limit, minutes (0 = the partition's)")
      ->check(CLI::Range(0, 10000000));
  app.add_option("--task", *task, "Internal: run array task N of the plan in --out (what each Slurm task runs)")
      ->check(CLI::Range(0, 100000000));
  app.add_flag("--json", *json_out, "Print the table as JSON");
  app.footer(
      "Expands the grid (policies x clusters x traces x seeds x options; an option with a list of values is\n"
      "one more axis), writes OUT/sweep.json, runs every cell without a result (so a re-run resumes), each\n"
      "writing OUT/cells/ID.json, then OUT/results.csv (a row per cell) and OUT/table.csv, table.json (a row\n"
      "per policy and setting: mean and 95% CI over seeds). Example:\n"
      "  tessel sweep examples/sweep.yaml --out /tmp/sweep --workers 2\n"
      "  tessel sweep examples/sweep.yaml --out /shared/sweep --slurm --cells-per-task 4");
  return [io, file, out, workers, slurm, per_task, task, json_out, so] {
    if (*task >= 0) return RunTask(io, *out, *task);
    if (file->empty()) {
      io.err << "error: the sweep file is required (tessel sweep SWEEP.yaml --out DIR)\n";
      return 2;
    }
    auto spec = LoadSweepFile(*file);
    if (!spec.ok()) {
      io.err << "error: " << spec.status().message() << "\n";
      return ExitCode(spec.status());
    }
    std::vector<SweepCell> cells = ExpandSweep(*spec);
    Status flags_ok = CheckSweepFlags(cells);
    if (!flags_ok.ok()) {
      io.err << "error: " << *file << ": " << flags_ok.message() << "\n";
      return 2;
    }
    Status planned = WriteSweepPlan(*out, *spec, cells, *per_task);
    if (!planned.ok()) {
      io.err << "error: " << planned.message() << "\n";
      return 1;
    }
    int before = 0;
    for (const SweepCell& c : cells) before += SweepCellDone(*out, c) ? 1 : 0;
    io.err << "sweep " << spec->name << ": " << cells.size() << " cells, " << before << " done before\n";
    bool failed = false;
    if (*slurm) {
      auto id = SubmitArray(*out, spec->name, cells, *per_task, *so, io.err);
      if (!id.ok()) {
        io.err << "error: --slurm: " << id.status().message() << "\n";
        failed = true;
      } else if (!id->empty()) {
        io.err << "Slurm job " << *id << " finished\n";
      }
    } else {
      int bad = 0;
      int ran = RunSweepLocally(*out, cells, *workers, io.err, &bad);
      io.err << "ran " << ran << " cells on " << std::min(*workers, std::max(1, ran)) << " worker(s)"
             << (bad ? ", " + std::to_string(bad) + " failed" : std::string()) << "\n";
      failed = bad > 0;
    }
    auto table = GatherSweep(*out, cells);
    if (!table.ok()) {
      io.err << "error: " << table.status().message() << "\n";
      return 1;
    }
    if (*json_out) {
      io.out << table->table_json;
    } else if (table->done > 0) {
      PrintTable(table->table_csv, io.out);
    }
    if (!table->missing.empty()) {
      io.err << "error: " << table->missing.size() << " of " << table->cells
             << " cells have no result (the first: " << table->missing.front()
             << "); run the same command again to run only those\n";
      return 1;
    }
    if (!table->plots_warning.empty()) io.err << "warning: " << table->plots_warning << "\n";
    io.err << "tables: " << *out << "/table.csv, table.json; plots: sweep_*.png; every cell: results.csv\n";
    return failed ? 1 : 0;
  };
}

}  // namespace tessel
