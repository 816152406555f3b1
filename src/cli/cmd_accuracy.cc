// `tessel accuracy`: the estimator against published and measured runs.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "calib/accuracy.h"
#include "cli/accuracy_report.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_out.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"
#include "hardware/node.h"

namespace tessel {

namespace {

std::string Pct(double v) { return FormatDouble(100 * v, 3) + "%"; }

void AddStatsRows(TextTable& t, const std::vector<ErrorStats>& stats) {
  for (const auto& s : stats)
    t.AddRow({s.group, std::to_string(s.rows), Pct(s.median_abs), Pct(s.p90_abs), Pct(s.median_signed),
              std::to_string(s.does_not_fit)});
}

nlohmann::json StatsJson(const ErrorStats& s) {
  return {{"group", s.group}, {"rows", s.rows}, {"median_abs_error", s.median_abs},
          {"p90_abs_error", s.p90_abs}, {"median_signed_error", s.median_signed},
          {"does_not_fit", s.does_not_fit}};
}

nlohmann::json StatsListJson(const std::vector<ErrorStats>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : v) a.push_back(StatsJson(s));
  return a;
}

}  // namespace

double ArenaNetworkGbps() {
  auto n = FindNodeType("arena-a100");
  return n.ok() ? (*n)->network_gbps : 50;
}

namespace {

// The strong-scaling table (and, with `rows`, every step).
std::string RenderScaling(const AccuracyReport& rep, bool rows) {
  std::vector<ScalingStep> steps = ScalingSteps(rep);
  std::string out;
  if (rows) {
    TextTable t({"run", "GPUs", "measured speedup", "predicted speedup"});
    for (const auto& s : steps)
      t.AddRow({s.run, std::to_string(s.from_gpus) + "->" + std::to_string(s.to_gpus),
                FormatDouble(s.measured_speedup, 3), FormatDouble(s.predicted_speedup, 3)});
    out += t.Render() + "\n";
  }
  TextTable t({"kind and GPUs", "steps", "measured speedup", "predicted speedup", "predicted/measured"});
  for (const auto& s : SummarizeScaling(steps))
    t.AddRow({s.group, std::to_string(s.steps), FormatDouble(s.median_measured, 3),
              FormatDouble(s.median_predicted, 3), FormatDouble(s.median_ratio, 3)});
  out += "Strong scaling: one run (source, model, global batch, GPU type, precision, framework) on fewer and on\n"
         "more GPUs; "
         "speedup = iteration time on the fewer / on the more (medians; the faster host layout where a\n"
         "count has several):\n" +
         t.Render() + "\n";
  return out;
}

}  // namespace

std::string RenderAccuracy(const AccuracyReport& rep, bool rows, bool scaling) {
  std::string out;
  if (rows) {
    TextTable t({"id", "source", "model", "gpus", "plan (chosen)", "framework", "measured s", "predicted s",
                 "tput err"});
    for (const auto& r : rep.results) {
      const auto& c = *r.ref;
      t.AddRow({c.id, c.source, c.model.name, std::to_string(c.gpus) + "x" + c.topology.gpu->name,
                r.predicted ? r.estimate.plan.ToString() : "does not fit: " + r.reason.substr(0, 60),
                r.predicted ? r.estimate.framework : "-", FormatDouble(r.measured_s, 4),
                r.predicted ? FormatDouble(r.predicted_s, 4) : "-", Pct(r.throughput_error)});
    }
    out += t.Render() + "\n";
    if (!rep.skipped.empty()) {
      out += "Skipped (not compared):\n";
      for (const auto& s : rep.skipped) out += "  " + s.id + ": " + s.reason + "\n";
      out += "\n";
    }
  }
  const std::vector<std::string> cols = {"rows", "median |err|", "p90 |err|", "median bias", "does not fit"};
  auto table = [&](const char* title, const char* first, const std::vector<ErrorStats>& stats, bool overall) {
    std::vector<std::string> h = {first};
    h.insert(h.end(), cols.begin(), cols.end());
    TextTable t(h);
    AddStatsRows(t, stats);
    if (overall) AddStatsRows(t, {rep.overall});
    out += std::string(title) + "\n" + t.Render() + "\n";
  };
  table("Throughput (tokens/s, samples/s) error by GPU architecture (err = predicted/measured - 1; "
        "a run called \"does not fit\" counts as 100%):",
        "architecture", rep.by_arch, true);
  table("By framework:", "framework", rep.by_framework, false);
  table("By source:", "source", rep.by_source, false);
  table("By architecture and framework:", "architecture/framework", rep.by_arch_and_framework, false);
  table("By GPU count:", "GPUs", rep.by_gpus, false);
  if (scaling) out += RenderScaling(rep, rows);
  out += std::to_string(rep.results.size()) + " reference rows compared, " + std::to_string(rep.not_predicted) +
         " called \"does not fit\", " + std::to_string(rep.skipped.size()) + " skipped (no shape or result, or a shape that is not what ran: --rows and --json give each reason), " +
         std::to_string(rep.infeasible_measured) + " Alpa entries measured out-of-memory.\n";
  if (rep.out_of_memory > 0) {
    out += std::to_string(rep.out_of_memory) + " published runs measured out of memory, " +
           std::to_string(rep.out_of_memory_called_fitting.size()) + " of them called fitting";
    out += rep.out_of_memory_called_fitting.empty() ? ".\n" : ": " + Join(rep.out_of_memory_called_fitting, ", ") + ".\n";
  }
  return out;
}

CommandAction SetupAccuracy(CLI::App& app, CommandIo io) {
  struct Flags {
    std::string data, cv = "none";
    ParamsFlag params;
    bool rows = false, json = false, scaling = false;
  };
  auto f = std::make_shared<Flags>();
  app.footer(
      "Compare the estimator with published measurements (TESSEL_DATA/measured/calibration.csv\n"
      "and the built-in data/measured/published.csv) and Alpa-measured iteration times\n"
      "(TESSEL_DATA/arena/database). Plan fields a reference does not state are chosen by the\n"
      "planner (its best plan), as the measured system chose its own. Prints the relative\n"
      "error of throughput per row (--rows) and its median and 90th percentile per GPU\n"
      "architecture, framework, source and GPU count. Rows whose stated shape is not what ran\n"
      "(data/measured/unusable-rows.csv, each with its evidence) are skipped, not compared.\n"
      "--cv source: leave-one-source-out. For each source, the parameters are fitted (as\n"
      "`tessel calibrate` does) on every other source and the source's rows predicted with\n"
      "them: the error on measurements the estimator has never seen.\n"
      "--scaling: the same run measured on fewer and on more GPUs (the Arena databases hold\n"
      "each model and batch on 1 to 16 GPUs): measured against predicted speedup, by model\n"
      "kind and GPU-count step; with --rows, every step.");
  app.add_option("--data", f->data, "Shared data folder (default $TESSEL_DATA or ../shared/data)");
  f->params.Add(app);
  app.add_option("--cv", f->cv, "Cross-validation: none (in-sample, default) or source (leave-one-source-out)")
      ->check(CLI::IsMember({"none", "source"}));
  app.add_flag("--rows", f->rows, "Print every row, and every skipped row with the reason");
  app.add_flag("--scaling", f->scaling,
               "Also compare measured and predicted speedups of the same run on more GPUs (strong scaling)");
  app.add_flag("--json", f->json, "Print JSON");
  return [io, f]() -> int {
    auto params = f->params.Resolve();
    if (!params.ok()) {
      io.err << "error: " << params.status().message() << "\n";
      return 2;
    }
    std::string data = DataDir(f->data);
    if (Status s = CheckDataDir(data); !s.ok()) {
      io.err << "error: " << s.message() << "\n";
      return 2;
    }
    auto refs = LoadReferences(ReferenceFiles::Under(data), ArenaNetworkGbps());
    if (!refs.ok()) {
      io.err << "error: " << refs.status().message() << "\n";
      return 2;
    }
    AccuracyReport rep = f->cv == "source" ? CrossValidateBySource(*refs, **params)
                                           : EvaluateAccuracy(*refs, Estimator(**params));
    if (f->json) {
      nlohmann::json j;
      j["cross_validation"] = f->cv;
      j["by_arch"] = StatsListJson(rep.by_arch);
      j["by_framework"] = StatsListJson(rep.by_framework);
      j["by_source"] = StatsListJson(rep.by_source);
      j["by_arch_and_framework"] = StatsListJson(rep.by_arch_and_framework);
      j["by_gpus"] = StatsListJson(rep.by_gpus);
      j["overall"] = StatsJson(rep.overall);
      if (f->scaling) {
        j["scaling_steps"] = nlohmann::json::array();
        std::vector<ScalingStep> steps = ScalingSteps(rep);
        for (const auto& s : steps)
          j["scaling_steps"].push_back({{"run", s.run}, {"kind", s.kind}, {"from_gpus", s.from_gpus},
                                        {"to_gpus", s.to_gpus}, {"measured_speedup", s.measured_speedup},
                                        {"predicted_speedup", s.predicted_speedup}});
        j["scaling"] = nlohmann::json::array();
        for (const auto& s : SummarizeScaling(steps))
          j["scaling"].push_back({{"group", s.group}, {"steps", s.steps}, {"median_measured_speedup", s.median_measured},
                                  {"median_predicted_speedup", s.median_predicted},
                                  {"median_predicted_over_measured", s.median_ratio}});
      }
      j["out_of_memory"] = {{"runs", rep.out_of_memory}, {"called_fitting", rep.out_of_memory_called_fitting}};
      j["rows"] = nlohmann::json::array();
      for (const auto& r : rep.results) {
        nlohmann::json row = {{"id", r.ref->id}, {"source", r.ref->source}, {"model", r.ref->model.name},
                              {"gpu", r.ref->topology.gpu->name}, {"arch", r.ref->arch}, {"gpus", r.ref->gpus},
                              {"measured_s", r.measured_s}, {"throughput_error", r.throughput_error},
                              {"note", r.ref->note}};
        if (r.ref->measured_memory_gib > 0) row["measured_memory_gib"] = r.ref->measured_memory_gib;
        if (r.predicted) {
          row["predicted_s"] = r.predicted_s;
          row["time_error"] = r.time_error;
          row["framework"] = r.estimate.framework;
          row["predicted_memory_gib"] = r.estimate.memory.total_gib;
          // What an allocator's peak counts: no context, no fragmentation.
          row["predicted_allocated_gib"] = r.estimate.memory.total_gib - r.estimate.memory.overhead_gib;
          row["plan"] = PlanToJson(r.estimate.plan);
        } else {
          row["reason"] = r.reason;
        }
        j["rows"].push_back(row);
      }
      j["skipped"] = nlohmann::json::array();
      for (const auto& s : rep.skipped) j["skipped"].push_back({{"id", s.id}, {"reason", s.reason}});
      io.out << JsonText(j, 2) << "\n";
    } else {
      if (f->cv == "source")
        io.out << "Leave-one-source-out: every row predicted with parameters fitted without its source.\n\n";
      io.out << RenderAccuracy(rep, f->rows, f->scaling);
    }
    return 0;
  };
}

}  // namespace tessel
