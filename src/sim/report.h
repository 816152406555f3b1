// A simulation's outputs: the terminal summary, summary.json, jobs.csv,
// timeline.csv and plots (drawn by gnuplot, run as a separate process).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "hardware/cluster.h"
#include "sim/engine.h"

namespace tessel {

// The summary as one JSON object (keys in a fixed order). `wall_time`:
// include sim_wall_time_s (the terminal's --json does; files under --out
// do not, so two identical runs write identical files).
std::string SummaryJson(const Summary& s, bool wall_time = true);
// A JSON list of summaries (for `compare --json`).
std::string SummaryListJson(const std::vector<Summary>& list, bool wall_time = true);

// One figure of the readable summary: "average JCT", "6.453 h".
struct SummaryRow {
  std::string metric;
  std::string value;
};
// The table RenderSummary prints (after its header and job counts), row by
// row; report.html shows the same. `wall_time`: the decision-time and
// simulation wall-time rows, which differ run to run.
std::vector<SummaryRow> SummaryRows(const Summary& s, bool wall_time = true);

// The readable summary printed by `tessel simulate`.
void RenderSummary(const Summary& s, std::ostream& out);
// One row per policy, side by side (`tessel compare`).
void RenderComparison(const std::vector<Summary>& list, std::ostream& out);

Status WriteJobsCsv(const SimResult& r, const Cluster& cluster, const std::string& path);
// jobs.csv's text: one row per job (WriteJobsCsv writes it).
std::string JobsCsv(const SimResult& r, const Cluster& cluster);
// The timeline resampled to `rows` at most equal intervals, each row the
// time-weighted mean over its interval.
Status WriteTimelineCsv(const SimResult& r, const std::string& path, int rows = 2000);

// Writes summary.json, jobs.csv, timeline.csv, the plots and report.html
// (sim/report_html.h) into `dir` (created if missing). Plots need gnuplot
// on the PATH; without it the gnuplot scripts are still written and
// `warning` says how to draw them.
// Runs gnuplot on `script` inside `dir` (by argv, no shell). Returns a
// warning ("" when drawn): gnuplot missing, or failed (its stderr kept in
// dir/gnuplot.err).
std::string RunGnuplot(const std::string& dir, const std::string& script);
// The PNG terminal every plot script starts with.
extern const char* const kPngTerminal;

Status WriteRunOutputs(const SimResult& r, const Cluster& cluster, const std::string& dir, std::string* warning);

// compare: summary.json (a list), one directory per policy with its run's
// outputs (report.html aside), compare_jct_cdf.png / compare_bars.png and
// one report.html of every run.
Status WriteComparisonOutputs(const std::vector<SimResult>& runs, const Cluster& cluster, const std::string& dir,
                              std::string* warning);

}  // namespace tessel
