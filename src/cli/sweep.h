// Sweeps: a grid of simulations (policies x clusters x traces x seeds x
// simulate options) described in one YAML file, run locally on N threads or
// as a Slurm job array, each cell's summary written to a file of its own (so
// a re-run skips what is done), then gathered into one table with the mean
// and a 95% confidence interval over seeds (docs/sweeps.md).
//
//   name: load-study                  # optional, names the Slurm job
//   policies: [fcfs, tiresias, "fcfs:backfill=easy"]
//   clusters: [demo]                  # default [demo]
//   traces: [a.csv, b.csv]            # default: the embedded synthetic workload
//   seeds: [1, 2, 3]                  # or a count: 5 (seeds 1..5); default [1]
//   options:                          # any other `tessel simulate` flag
//     placement: [consolidate, first-fit]   # a list is one more axis
//     horizon: 30d
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tessel {

struct SweepSpec {
  std::string name = "sweep";
  std::vector<std::string> policies;
  std::vector<std::string> clusters{"demo"};
  std::vector<std::string> traces{""};  // "" = the embedded synthetic workload
  std::vector<uint64_t> seeds{1};
  // simulate flag (without "--") -> its values (more than one: an axis).
  std::vector<std::pair<std::string, std::vector<std::string>>> options;
};

// One simulation of the grid.
struct SweepCell {
  std::string policy, cluster, trace;
  uint64_t seed = 1;
  std::vector<std::pair<std::string, std::string>> options;  // in the spec's order
  // Canonical text of everything that defines the cell; its id is the
  // first 16 hex digits of its SHA-256 (the result file's name).
  std::string Key() const;
  std::string Id() const;
  // `tessel simulate`'s arguments for it (no --out, no logs).
  std::vector<std::string> FlagArgs() const;
  // The cell's group: everything but the seed.
  std::string GroupKey() const;
};

// Reads and checks a sweep file: unknown fields, empty lists, policies the
// registry does not know, simulate flags that do not exist or that the
// sweep sets itself (cluster, trace, seed, out, logs, json) are errors
// naming the file, line and field. Relative trace paths are taken from the
// file's folder.
Result<SweepSpec> LoadSweepFile(const std::string& path);
Result<SweepSpec> ParseSweep(const std::string& text, const std::string& source, const std::string& base_dir);

// Every cell, in a fixed order (policies fastest, then options, seeds,
// traces, clusters).
std::vector<SweepCell> ExpandSweep(const SweepSpec& spec);

// Checks each distinct set of simulate flags the cells use (the same parser
// as `tessel simulate`), before anything runs.
Status CheckSweepFlags(const std::vector<SweepCell>& cells);

// The sweep's folder: sweep.json (the cells, what Slurm tasks read),
// cells/<id>.json (one result each, written atomically), results.csv (a row
// per cell), table.csv and table.json (a row per group: mean, standard
// deviation and 95% CI half-width of each metric over its seeds), and
// sweep_*.png (average and p95 JCT, makespan, utilisation: a bar per
// policy in each setting, the CI as an error bar; sweep.gp, sweep_*.dat).
Status WriteSweepPlan(const std::string& dir, const SweepSpec& spec, const std::vector<SweepCell>& cells,
                      int cells_per_task);
Result<std::vector<SweepCell>> ReadSweepPlan(const std::string& dir, int* cells_per_task, std::string* name);

// Whether the cell's result file exists and is for this cell.
bool SweepCellDone(const std::string& dir, const SweepCell& cell);

// Runs one cell in-process (as `tessel simulate` would) and writes its
// result file.
Status RunSweepCell(const std::string& dir, const SweepCell& cell);

// Runs the cells not done yet on `workers` threads; returns how many ran.
// Failures are reported on `err` and counted in *failed.
int RunSweepLocally(const std::string& dir, const std::vector<SweepCell>& cells, int workers, std::ostream& err,
                    int* failed);

struct SweepTable {
  int cells = 0, done = 0;
  std::vector<std::string> missing;  // ids of cells without a result
  std::string results_csv, table_csv, table_json;
  // Not drawn: why (gnuplot missing or failed); the scripts are written.
  std::string plots_warning;
};

// Reads every result and writes results.csv, table.csv, table.json and the plots.
Result<SweepTable> GatherSweep(const std::string& dir, const std::vector<SweepCell>& cells);

// Two-sided 95% quantile of Student's t with `df` degrees of freedom.
double StudentT975(int df);

}  // namespace tessel
