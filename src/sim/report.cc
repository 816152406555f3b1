#include "sim/report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/json_text.h"
#include "core/stats.h"
#include "core/strings.h"
#include "core/table.h"
#include "sim/report_html.h"

extern char** environ;

namespace tessel {

const char* const kPngTerminal = "set terminal pngcairo size 1000,600 font 'sans,11'\n";
namespace {

using Json = nlohmann::ordered_json;

Json ToJson(const Summary& s, bool wall_time = true) {
  Json j;
  j["policy"] = s.policy;
  j["cluster"] = s.cluster;
  j["trace"] = s.trace;
  j["truth"] = s.truth;
  j["placement"] = s.placement;
  j["seed"] = s.seed;
  j["total_gpus"] = s.total_gpus;
  j["jobs_total"] = s.jobs_total;
  j["jobs_finished"] = s.jobs_finished;
  j["jobs_unfinished"] = s.jobs_unfinished;
  j["jobs_rejected"] = s.jobs_rejected;
  Json why = Json::object();
  for (const auto& [reason, n] : s.unfinished_reasons) why[reason] = n;
  j["unfinished_reasons"] = why;
  j["avg_jct_s"] = s.avg_jct_s;
  j["median_jct_s"] = s.median_jct_s;
  j["p95_jct_s"] = s.p95_jct_s;
  j["p99_jct_s"] = s.p99_jct_s;
  j["avg_queueing_s"] = s.avg_queueing_s;
  j["median_queueing_s"] = s.median_queueing_s;
  j["makespan_s"] = s.makespan_s;
  j["avg_throughput_samples_per_s"] = s.avg_throughput_samples_per_s;
  j["avg_throughput_tokens_per_s"] = s.avg_throughput_tokens_per_s;
  j["gpu_utilization"] = s.gpu_utilization;
  j["useful_utilization"] = s.useful_utilization;
  j["avg_finish_time_fairness"] = s.avg_ftf;
  j["max_finish_time_fairness"] = s.max_ftf;
  j["restarts"] = s.restarts;
  j["preemptions"] = s.preemptions;
  j["failures"] = s.failures;
  j["deadline_jobs"] = s.deadline_jobs;
  j["deadline_met"] = s.deadline_met;
  j["deadline_met_fraction"] = s.deadline_met_fraction;
  j["avg_tardiness_s"] = s.avg_tardiness_s;
  j["cluster_throughput_peak_samples_per_s"] = s.cluster_throughput_peak;
  j["cluster_throughput_p99_samples_per_s"] = s.cluster_throughput_p99;
  j["samples_per_gpu_s"] = s.samples_per_gpu_s;
  j["decisions"] = s.decisions;
  j["events"] = s.events;
  j["truth_fallbacks"] = s.truth_fallbacks;
  j["memory_refusals"] = s.memory_refusals;
  j["jobs_memory_refused"] = s.jobs_memory_refused;
  j["oom_placements"] = s.oom_placements;
  if (s.node_hours >= 0) {
    j["node_hours"] = s.node_hours;
    j["autoscale_changes"] = s.autoscale_changes;
  }
  if (wall_time) {
    j["decision_p50_ms"] = s.decision_p50_ms;
    j["decision_p99_ms"] = s.decision_p99_ms;
    j["decision_max_ms"] = s.decision_max_ms;
    j["sim_wall_time_s"] = s.sim_wall_time_s;
  }
  return j;
}

std::string Hours(double s) { return FormatDouble(s / 3600.0, 3) + " h"; }

std::string Num(double v, int precision = 6) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string TimeCell(SimTime t) { return t == kNever ? "" : Num(ToSeconds(t), 12); }

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return Unavailable("cannot write " + path);
  f << text;
  f.close();
  if (!f) return Unavailable("error writing " + path);
  return Status::Ok();
}

}  // namespace

// gnuplot by argv, in `dir` (the scripts name their files relative to it):
// no shell, so an --out folder's name is never read as a command.
std::string RunGnuplot(const std::string& dir, const std::string& script) {
  const std::string not_found = "gnuplot not found: plot scripts written to " + dir + "; draw them with `cd " + dir +
                                " && gnuplot " + script + "` (Debian: apt-get install gnuplot-nox)";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "gnuplot.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string arg0 = "gnuplot", arg1 = script;
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT) return not_found;
  if (rc != 0) return "gnuplot could not start on " + dir + "/" + script + ": " + std::strerror(rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // A missing gnuplot can also surface as the child's exit 127.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return not_found;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "gnuplot failed on " + dir + "/" + script + " (see " + dir + "/gnuplot.err)";
  std::filesystem::remove(std::filesystem::path(dir) / "gnuplot.err");
  return "";
}

namespace {

// Sorted JCTs of finished jobs, in hours, as "x y" lines of an empirical CDF.
std::string JctCdfData(const std::vector<JobRecord>& jobs, int max_points = 2000) {
  std::vector<double> jct;
  for (const JobRecord& j : jobs) {
    if (j.outcome == JobOutcome::kFinished) jct.push_back(j.jct_s() / 3600.0);
  }
  std::sort(jct.begin(), jct.end());
  std::ostringstream out;
  size_t n = jct.size();
  size_t step = std::max<size_t>(1, n / max_points);
  for (size_t i = 0; i < n; i += step) out << Num(jct[i]) << ' ' << Num(static_cast<double>(i + 1) / n) << '\n';
  if (n > 0 && (n - 1) % step != 0) out << Num(jct[n - 1]) << " 1\n";
  return out.str();
}



}  // namespace

std::string SummaryJson(const Summary& s, bool wall_time) { return JsonText(ToJson(s, wall_time), 2) + "\n"; }

std::string SummaryListJson(const std::vector<Summary>& list, bool wall_time) {
  Json arr = Json::array();
  for (const Summary& s : list) arr.push_back(ToJson(s, wall_time));
  return JsonText(arr, 2) + "\n";
}

std::vector<SummaryRow> SummaryRows(const Summary& s, bool wall_time) {
  std::vector<SummaryRow> t;
  t.push_back({"average JCT", Hours(s.avg_jct_s)});
  t.push_back({"median JCT", Hours(s.median_jct_s)});
  t.push_back({"p95 JCT", Hours(s.p95_jct_s)});
  t.push_back({"p99 JCT", Hours(s.p99_jct_s)});
  t.push_back({"average queueing", Hours(s.avg_queueing_s)});
  t.push_back({"makespan", Hours(s.makespan_s)});
  t.push_back({"throughput", FormatDouble(s.avg_throughput_samples_per_s, 4) + " samples/s, " +
                                 FormatDouble(s.avg_throughput_tokens_per_s, 4) + " tokens/s"});
  t.push_back({"cluster throughput peak / p99", FormatDouble(s.cluster_throughput_peak, 4) + " / " +
                                                   FormatDouble(s.cluster_throughput_p99, 4) + " samples/s"});
  t.push_back({"samples per GPU-second", FormatDouble(s.samples_per_gpu_s, 4)});
  t.push_back({"GPU allocation", FormatDouble(100 * s.gpu_utilization, 3) + "%"});
  t.push_back({"useful utilisation", FormatDouble(100 * s.useful_utilization, 3) + "%"});
  t.push_back({"finish-time fairness", "avg " + FormatDouble(s.avg_ftf, 3) + ", max " + FormatDouble(s.max_ftf, 3)});
  t.push_back({"restarts / preemptions / failures", std::to_string(s.restarts) + " / " +
                                                       std::to_string(s.preemptions) + " / " +
                                                       std::to_string(s.failures)});
  if (s.deadline_jobs > 0) {
    t.push_back({"deadlines met", std::to_string(s.deadline_met) + " of " + std::to_string(s.deadline_jobs) + " (" +
                                      FormatDouble(100 * s.deadline_met_fraction, 3) + "%)"});
    t.push_back({"mean tardiness (finished)", Hours(s.avg_tardiness_s)});
  }
  t.push_back({"decisions / events", std::to_string(s.decisions) + " / " + std::to_string(s.events)});
  if (s.truth_fallbacks > 0) t.push_back({"truth fallbacks to estimator", std::to_string(s.truth_fallbacks)});
  t.push_back({"placements refused for memory", std::to_string(s.memory_refusals) + " shapes, " +
                                                    std::to_string(s.jobs_memory_refused) + " jobs"});
  if (s.oom_placements > 0) t.push_back({"placements out of memory as placed", std::to_string(s.oom_placements)});
  if (s.node_hours >= 0) {
    t.push_back({"node-hours powered (--autoscale)", FormatDouble(s.node_hours, 4) + " (" +
                                                         std::to_string(s.autoscale_changes) + " power changes)"});
  }
  if (wall_time) {
    t.push_back({"decision time p50 / p99 / max", FormatDouble(s.decision_p50_ms, 3) + " / " +
                                                     FormatDouble(s.decision_p99_ms, 3) + " / " +
                                                     FormatDouble(s.decision_max_ms, 3) + " ms"});
    t.push_back({"simulation wall time", FormatDouble(s.sim_wall_time_s, 3) + " s"});
  }
  return t;
}

void RenderSummary(const Summary& s, std::ostream& out) {
  out << "policy " << s.policy << " on " << s.cluster << " (" << s.total_gpus << " GPUs), trace " << s.trace
      << ", truth " << s.truth << ", placement " << s.placement << ", seed " << s.seed << "\n";
  out << "jobs: " << s.jobs_total << " total, " << s.jobs_finished << " finished, " << s.jobs_unfinished
      << " unfinished, " << s.jobs_rejected << " rejected\n";
  for (const auto& [reason, n] : s.unfinished_reasons) out << "  unfinished, " << reason << ": " << n << "\n";
  TextTable t({"metric", "value"});
  for (const SummaryRow& row : SummaryRows(s)) t.AddRow({row.metric, row.value});
  out << t.Render();
}

void RenderComparison(const std::vector<Summary>& list, std::ostream& out) {
  if (list.empty()) return;
  out << "cluster " << list[0].cluster << " (" << list[0].total_gpus << " GPUs), trace " << list[0].trace
      << ", truth " << list[0].truth << ", placement " << list[0].placement << ", seed " << list[0].seed << "\n";
  // Deadline columns only when some job has a deadline.
  bool deadlines = std::any_of(list.begin(), list.end(), [](const Summary& s) { return s.deadline_jobs > 0; });
  std::vector<std::string> head = {"policy", "finished", "unfinished", "rejected", "avg JCT h", "median h",
                                   "p99 h", "avg queue h", "makespan h", "alloc %", "useful %", "avg FTF"};
  if (deadlines) head.insert(head.end(), {"deadline met %", "tardiness h"});
  // Out-of-memory placements only when some run had one.
  bool oom = std::any_of(list.begin(), list.end(), [](const Summary& s) { return s.oom_placements > 0; });
  head.insert(head.end(), {"restarts", "mem refused"});
  if (oom) head.push_back("oom placed");
  head.insert(head.end(), {"decide p99 ms", "wall s"});
  TextTable t(head);
  for (const Summary& s : list) {
    std::vector<std::string> row = {s.policy, std::to_string(s.jobs_finished), std::to_string(s.jobs_unfinished),
                                    std::to_string(s.jobs_rejected), FormatDouble(s.avg_jct_s / 3600, 4),
                                    FormatDouble(s.median_jct_s / 3600, 4), FormatDouble(s.p99_jct_s / 3600, 4),
                                    FormatDouble(s.avg_queueing_s / 3600, 4), FormatDouble(s.makespan_s / 3600, 4),
                                    FormatDouble(100 * s.gpu_utilization, 3), FormatDouble(100 * s.useful_utilization, 3),
                                    FormatDouble(s.avg_ftf, 3)};
    if (deadlines)
      row.insert(row.end(), {FormatDouble(100 * s.deadline_met_fraction, 3), FormatDouble(s.avg_tardiness_s / 3600, 4)});
    row.insert(row.end(), {std::to_string(s.restarts), std::to_string(s.jobs_memory_refused)});
    if (oom) row.push_back(std::to_string(s.oom_placements));
    row.insert(row.end(), {FormatDouble(s.decision_p99_ms, 3),
                           FormatDouble(s.sim_wall_time_s, 3)});
    t.AddRow(row);
  }
  out << t.Render();
}

Status WriteJobsCsv(const SimResult& r, const Cluster& cluster, const std::string& path) {
  return WriteFile(path, JobsCsv(r, cluster));
}

std::string JobsCsv(const SimResult& r, const Cluster& cluster) {
  std::ostringstream out;
  out << "job_id,user,model,requested_gpus,requested_gpu_type,outcome,reason,submit_s,first_start_s,finish_s,"
         "jct_s,queueing_s,waiting_s,reconfig_s,restarts,preemptions,failures,total_iterations,done_iterations,"
         "lost_iterations,gpu_hours";
  for (size_t t = 0; t < cluster.types().size(); ++t) out << ",gpu_hours_" << cluster.TypeName(static_cast<int>(t));
  out << ",isolated_s,finish_time_fairness,deadline_s,deadline_met\n";
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
      if (c == '"') q += '"';
      q += c;
    }
    return q + "\"";
  };
  for (const JobRecord& j : r.jobs) {
    bool finished = j.outcome == JobOutcome::kFinished;
    out << quote(j.id) << ',' << quote(j.user) << ',' << quote(j.model) << ',' << j.requested_gpus << ','
        << j.requested_gpu_type << ',' << JobOutcomeName(j.outcome) << ',' << quote(j.reason) << ','
        << Num(ToSeconds(j.submit), 12) << ',' << TimeCell(j.first_start) << ',' << TimeCell(j.finish) << ','
        << (finished ? Num(j.jct_s(), 12) : "") << ',' << Num(j.queueing_s, 12) << ',' << Num(j.waiting_s, 12) << ','
        << Num(j.reconfig_s, 12) << ',' << j.restarts << ',' << j.preemptions << ',' << j.failures << ','
        << Num(j.total_iterations, 12) << ',' << Num(j.done_iterations, 12) << ',' << Num(j.lost_iterations, 12) << ','
        << Num(j.gpu_s / 3600, 12);
    for (double g : j.gpu_s_by_type) out << ',' << Num(g / 3600, 12);
    out << ',' << Num(j.isolated_s, 12) << ',' << (finished && j.isolated_s > 0 ? Num(j.jct_s() / j.isolated_s) : "")
        << ',' << (j.deadline ? Num(ToSeconds(*j.deadline), 12) : "") << ','
        << (j.deadline ? (j.DeadlineMet() ? "true" : "false") : "") << '\n';
  }
  return out.str();
}

Status WriteTimelineCsv(const SimResult& r, const std::string& path, int rows) {
  std::ostringstream out;
  out << "time_s,running_jobs,starting_jobs,pending_jobs,allocated_gpus,progressing_gpus,down_gpus,"
         "gpu_allocation,useful_utilization,samples_per_s,tokens_per_s\n";
  const auto& tl = r.timeline;
  if (tl.empty()) return WriteFile(path, out.str());
  SimTime start = tl.front().time;
  SimTime end = std::max<SimTime>(start + 1, static_cast<SimTime>(std::llround(r.summary.makespan_s * 1e6)) + start);
  // A round-number interval of at least (end - start) / rows.
  SimTime step = std::max<SimTime>(kMicrosPerSecond, (end - start + rows - 1) / rows);
  step = (step + kMicrosPerSecond - 1) / kMicrosPerSecond * kMicrosPerSecond;
  double gpus = std::max(1, r.summary.total_gpus);
  size_t i = 0;
  for (SimTime a = start; a < end; a += step) {
    SimTime b = std::min(end, a + step);
    double acc[10] = {0};
    while (i + 1 < tl.size() && tl[i + 1].time <= a) ++i;
    for (size_t k = i; k < tl.size() && tl[k].time < b; ++k) {
      SimTime lo = std::max(a, tl[k].time);
      SimTime hi = k + 1 < tl.size() ? std::min(b, tl[k + 1].time) : b;
      if (hi <= lo) continue;
      double w = static_cast<double>(hi - lo) / static_cast<double>(b - a);
      const TimelinePoint& p = tl[k];
      acc[0] += w * p.running_jobs;
      acc[1] += w * p.starting_jobs;
      acc[2] += w * p.pending_jobs;
      acc[3] += w * p.allocated_gpus;
      acc[4] += w * p.progressing_gpus;
      acc[5] += w * p.down_gpus;
      acc[6] += w * p.samples_per_s;
      acc[7] += w * p.tokens_per_s;
    }
    out << Num(ToSeconds(a), 12) << ',' << Num(acc[0]) << ',' << Num(acc[1]) << ',' << Num(acc[2]) << ','
        << Num(acc[3]) << ',' << Num(acc[4]) << ',' << Num(acc[5]) << ',' << Num(acc[3] / gpus) << ','
        << Num(acc[4] / gpus) << ',' << Num(acc[6]) << ',' << Num(acc[7]) << '\n';
  }
  return WriteFile(path, out.str());
}

namespace {

// WriteRunOutputs without report.html (compare writes one page for all).
Status WriteRunFiles(const SimResult& r, const Cluster& cluster, const std::string& dir, std::string* warning) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create " + dir + ": " + ec.message());
  auto p = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  TESSEL_RETURN_IF_ERROR(WriteFile(p("summary.json"), SummaryJson(r.summary, /*wall_time=*/false)));
  TESSEL_RETURN_IF_ERROR(WriteJobsCsv(r, cluster, p("jobs.csv")));
  TESSEL_RETURN_IF_ERROR(WriteTimelineCsv(r, p("timeline.csv")));
  TESSEL_RETURN_IF_ERROR(WriteFile(p("jct_cdf.dat"), JctCdfData(r.jobs)));
  std::string title = r.summary.policy + " on " + r.summary.cluster;
  std::ostringstream gp;
  gp << kPngTerminal << "set datafile separator ','\nset key top left\nset grid\n"
     << "set output 'jct_cdf.png'\nset title 'JCT CDF: " << title << "'\n"
     << "set datafile separator whitespace\nset xlabel 'JCT (hours)'\nset ylabel 'fraction of finished jobs'\n"
     << "set logscale x\nset yrange [0:1]\n"
     << "plot 'jct_cdf.dat' using 1:2 with lines lw 2 title '" << r.summary.policy << "'\n"
     << "unset logscale x\nset yrange [*:*]\nset datafile separator ','\n"
     << "set output 'utilization.png'\nset title 'GPU allocation and useful utilisation: " << title << "'\n"
     << "set xlabel 'time (hours)'\nset ylabel 'fraction of GPUs'\nset yrange [0:1.05]\n"
     << "plot 'timeline.csv' using ($1/3600):8 every ::1 with lines lw 2 title 'allocated', "
        "'' using ($1/3600):9 every ::1 with lines lw 2 title 'making progress'\n"
     << "set yrange [0:*]\nset output 'queue.png'\nset title 'Queue length: " << title << "'\n"
     << "set ylabel 'jobs'\n"
     << "plot 'timeline.csv' using ($1/3600):4 every ::1 with lines lw 2 title 'pending', "
        "'' using ($1/3600):2 every ::1 with lines lw 2 title 'running'\n";
  TESSEL_RETURN_IF_ERROR(WriteFile(p("plots.gp"), gp.str()));
  std::string w = RunGnuplot(dir, "plots.gp");
  if (warning) *warning = w;
  return Status::Ok();
}

}  // namespace

Status WriteRunOutputs(const SimResult& r, const Cluster& cluster, const std::string& dir, std::string* warning) {
  TESSEL_RETURN_IF_ERROR(WriteRunFiles(r, cluster, dir, warning));
  return WriteFile((std::filesystem::path(dir) / "report.html").string(),
                   ReportHtml(std::span<const SimResult>(&r, 1), cluster, "simulate"));
}

Status WriteComparisonOutputs(const std::vector<SimResult>& runs, const Cluster& cluster, const std::string& dir,
                              std::string* warning) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create " + dir + ": " + ec.message());
  std::vector<Summary> summaries;
  std::ostringstream cdf, bars;
  cdf << kPngTerminal << "set output 'compare_jct_cdf.png'\nset title 'JCT CDF by policy'\nset grid\n"
      << "set key bottom right\nset xlabel 'JCT (hours)'\nset ylabel 'fraction of finished jobs'\n"
      << "set logscale x\nset yrange [0:1]\nplot ";
  std::ostringstream bar_data;
  bar_data << "# policy avg_jct_h p99_jct_h avg_queueing_h deadline_met_percent\n";
  bool deadlines = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SimResult& r = runs[i];
    summaries.push_back(r.summary);
    // Policy specs may hold ':' and '='; directory names keep them readable.
    std::string sub = r.summary.policy;
    for (char& c : sub) {
      if (c == ':' || c == '=' || c == '/') c = '_';
    }
    std::string w;
    TESSEL_RETURN_IF_ERROR(WriteRunFiles(r, cluster, (std::filesystem::path(dir) / sub).string(), &w));
    cdf << (i ? ", " : "") << "'" << sub << "/jct_cdf.dat' using 1:2 with lines lw 2 title '" << r.summary.policy
        << "'";
    bar_data << '"' << r.summary.policy << "\" " << Num(r.summary.avg_jct_s / 3600) << ' '
             << Num(r.summary.p99_jct_s / 3600) << ' ' << Num(r.summary.avg_queueing_s / 3600) << ' '
             << Num(100 * r.summary.deadline_met_fraction) << '\n';
    deadlines |= r.summary.deadline_jobs > 0;
  }
  cdf << "\n";
  TESSEL_RETURN_IF_ERROR(WriteFile((std::filesystem::path(dir) / "summary.json").string(), SummaryListJson(summaries, /*wall_time=*/false)));
  TESSEL_RETURN_IF_ERROR(WriteFile((std::filesystem::path(dir) / "compare.dat").string(), bar_data.str()));
  bars << "unset logscale x\nset yrange [0:*]\nset xlabel ''\nset key top left\n"
       << "set output 'compare_bars.png'\nset title 'Average and p99 JCT, average queueing'\n"
       << "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
       << "set grid ytics\nset ylabel 'hours'\nset xtics rotate by -20\n"
       << "plot 'compare.dat' using 2:xtic(1) title 'avg JCT', '' using 3 title 'p99 JCT', "
          "'' using 4 title 'avg queueing'\n";
  if (deadlines) {
    bars << "set output 'compare_deadlines.png'\nset title 'Jobs finished by their deadline'\n"
         << "set ylabel 'percent of jobs with a deadline'\nset yrange [0:100]\nset key off\n"
         << "plot 'compare.dat' using 5:xtic(1) title 'deadline met'\n";
  }
  TESSEL_RETURN_IF_ERROR(WriteFile((std::filesystem::path(dir) / "compare.gp").string(), cdf.str() + bars.str()));
  TESSEL_RETURN_IF_ERROR(WriteFile((std::filesystem::path(dir) / "report.html").string(),
                                   ReportHtml(runs, cluster, "compare")));
  std::string w = RunGnuplot(dir, "compare.gp");
  if (warning) *warning = w;
  return Status::Ok();
}

}  // namespace tessel
