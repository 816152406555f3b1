#include "sim/report_html.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/sha256.h"
#include "sim/report.h"
#include "sim/report_assets.h"
#include "sim/report_series.h"

namespace tessel {
namespace {

using Json = nlohmann::ordered_json;

double R5(double v) { return RoundSignificant(v, 5); }

Json SeriesJson(const ReportSeries& s) {
  Json j;
  j["x"] = s.x;
  j["y"] = s.y;
  return j;
}

// The summary table: one row per figure, one value per run ("" where a
// run lacks the figure: deadline rows when it had no deadline job, an
// unfinished reason it did not see). Rows keep the order they first occur
// in.
Json SummaryTable(std::span<const SimResult> runs) {
  std::vector<std::string> metrics;
  std::vector<std::vector<std::string>> values;  // [row][run]
  auto put = [&](size_t run, const std::string& metric, const std::string& value, size_t* after) {
    auto it = std::find(metrics.begin(), metrics.end(), metric);
    size_t row;
    if (it != metrics.end()) {
      row = static_cast<size_t>(it - metrics.begin());
    } else {
      // A new row goes after the last row this run filled.
      row = *after;
      metrics.insert(metrics.begin() + static_cast<std::ptrdiff_t>(row), metric);
      values.insert(values.begin() + static_cast<std::ptrdiff_t>(row), std::vector<std::string>(runs.size()));
    }
    values[row][run] = value;
    *after = row + 1;
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    const Summary& s = runs[i].summary;
    size_t after = 0;
    put(i, "jobs", std::to_string(s.jobs_total), &after);
    put(i, "finished", std::to_string(s.jobs_finished), &after);
    put(i, "unfinished", std::to_string(s.jobs_unfinished), &after);
    for (const auto& [reason, n] : s.unfinished_reasons) put(i, "unfinished, " + reason, std::to_string(n), &after);
    put(i, "rejected", std::to_string(s.jobs_rejected), &after);
    for (const SummaryRow& row : SummaryRows(s, /*wall_time=*/false)) put(i, row.metric, row.value, &after);
  }
  Json rows = Json::array();
  for (size_t r = 0; r < metrics.size(); ++r) {
    Json row;
    row["metric"] = metrics[r];
    row["values"] = values[r];
    rows.push_back(std::move(row));
  }
  return rows;
}

Json RunJson(const SimResult& r, const Cluster& cluster) {
  const Summary& s = r.summary;
  SimTime end = RunEnd(r);
  Json j;
  j["policy"] = s.policy;
  j["jct_cdf"] = SeriesJson(JctCdfSeries(r.jobs));
  j["allocated_gpus"] = SeriesJson(TimelineSeries(r.timeline, &TimelinePoint::allocated_gpus, end));
  j["progressing_gpus"] = SeriesJson(TimelineSeries(r.timeline, &TimelinePoint::progressing_gpus, end));
  j["pending_jobs"] = SeriesJson(TimelineSeries(r.timeline, &TimelinePoint::pending_jobs, end));
  // Each GPU type's allocated GPU-time over its GPU-time in the makespan
  // (what gpu_utilization is for the whole cluster), in percent.
  std::vector<double> by_type(cluster.types().size(), 0.0);
  for (const JobRecord& job : r.jobs) {
    for (size_t t = 0; t < by_type.size() && t < job.gpu_s_by_type.size(); ++t) by_type[t] += job.gpu_s_by_type[t];
  }
  Json type_pct = Json::array();
  for (size_t t = 0; t < by_type.size(); ++t) {
    double avail = cluster.types()[t].total_gpus * s.makespan_s;
    type_pct.push_back(R5(avail > 0 ? 100 * by_type[t] / avail : 0.0));
  }
  j["type_allocation_pct"] = type_pct;
  j["jct_h"] = {R5(s.avg_jct_s / 3600), R5(s.median_jct_s / 3600), R5(s.p99_jct_s / 3600),
                R5(s.avg_queueing_s / 3600)};
  j["restarts"] = {s.restarts, s.preemptions, s.failures};
  j["deadline_jobs"] = s.deadline_jobs;
  j["deadline_met_pct"] = R5(100 * s.deadline_met_fraction);
  j["tardiness_h"] = R5(s.avg_tardiness_s / 3600);
  return j;
}

Json PageData(std::span<const SimResult> runs, const Cluster& cluster, std::string_view command) {
  Json j;
  j["command"] = std::string(command);
  Summary head = runs.empty() ? Summary{} : runs.front().summary;
  j["cluster"] = head.cluster.empty() ? cluster.name() : head.cluster;
  j["trace"] = head.trace;
  j["truth"] = head.truth;
  j["placement"] = head.placement;
  j["seed"] = head.seed;
  j["total_gpus"] = cluster.total_gpus();
  Json types = Json::array();
  for (size_t t = 0; t < cluster.types().size(); ++t) {
    Json type;
    type["name"] = cluster.TypeName(static_cast<int>(t));
    type["gpus"] = cluster.types()[t].total_gpus;
    types.push_back(std::move(type));
  }
  j["gpu_types"] = types;
  j["palette"] = ReportPalette();
  j["cdf_points"] = kReportCdfPoints;
  j["timeline_buckets"] = kReportTimelineBuckets;
  j["deadlines"] = std::any_of(runs.begin(), runs.end(), [](const SimResult& r) { return r.summary.deadline_jobs > 0; });
  j["table"] = SummaryTable(runs);
  Json list = Json::array();
  for (const SimResult& r : runs) list.push_back(RunJson(r, cluster));
  j["runs"] = list;
  return j;
}

// Static text of the page (nothing from input).
constexpr std::string_view kHead = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src @SCRIPTS@; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="tessel">
<title>tessel report</title>
<style>
)";

constexpr std::string_view kBody = R"(</style>
</head>
<body>
<header>
<h1 id="title">tessel report</h1>
<p id="setup"></p>
</header>
<noscript><p>This report draws its table and charts with JavaScript. The same figures are in
summary.json, jobs.csv and timeline.csv (per policy) beside it.</p></noscript>
<main>
<section>
<h2>Summary</h2>
<div class="table-wrap"><table id="summary"></table></div>
<p class="note">The figures <code>tessel simulate</code> prints, per policy (decision and simulation
wall times aside: they differ run to run). JCTs and queueing are over finished jobs.</p>
</section>
<section>
<h2>Charts</h2>
<div id="charts" class="charts"></div>
</section>
<footer class="note">
<p>Drawn from the simulation's records. For a small page, each JCT CDF keeps at most
<span id="cdf-points"></span> points (evenly spaced ranks, the fastest and slowest job included),
and each timeline series at most three points per each of <span id="buckets"></span> equal
intervals of the run (the interval's minimum, maximum and last change), so every extreme
survives; timeline.csv has the full resolution. Colours: Kelly's 22 colours of maximum contrast
(1965), in his order, without white and greenish yellow; past 16 policies, lines are dashed.
Charts by Chart.js, inlined: the page loads nothing.</p>
</footer>
</main>
<script type="application/json" id="report-data">)";

}  // namespace

const std::vector<std::string>& ReportPalette() {
  static const std::vector<std::string> kPalette = {
      "#222222", "#f3c300", "#875692", "#f38400", "#a1caf1", "#be0032", "#c2b280", "#848482",
      "#008856", "#e68fac", "#0067a5", "#f99379", "#604e97", "#f6a600", "#b3446c", "#882d17"};
  return kPalette;
}

std::string CspScriptSource(std::string_view script) {
  std::array<uint8_t, 32> digest = Sha256(script);
  return "'sha256-" + Base64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size())) + "'";
}

std::string EscapeJsonForScript(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string ReportHtml(std::span<const SimResult> runs, const Cluster& cluster, std::string_view command) {
  std::string_view chart_js = EmbeddedChartJs();
  std::string_view page_js = EmbeddedReportJs();
  std::string head(kHead);
  head.replace(head.find("@SCRIPTS@"), 9, CspScriptSource(chart_js) + " " + CspScriptSource(page_js));
  std::string out;
  out.reserve(chart_js.size() + 200000);
  out += head;
  out += EmbeddedReportCss();
  out += kBody;
  out += EscapeJsonForScript(JsonText(PageData(runs, cluster, command)));
  out += "</script>\n<script>";
  out += chart_js;
  out += "</script>\n<script>";
  out += page_js;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace tessel
