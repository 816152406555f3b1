// `tessel accuracy`: the estimator against published and measured runs.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "calib/accuracy.h"
#include "cli/accuracy_report.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_out.h"
#include "core/strings.h"
#include "core/table.h"
#include "hardware/node.h"

namespace tessel {

namespace {

std::string Pct(double v) { return FormatDouble(100 * v, 3) + "%"; }

void AddStatsRows(TextTable& t, const std::vector<ErrorStats>& stats) {
  for (const auto& s : stats)
    t.AddRow({s.group, std::to_string(s.rows), Pct(s.median_abs), Pct(s.p90_abs), Pct(s.median_signed),
              Pct(s.median_abs_throughput)});
}

nlohmann::json StatsJson(const ErrorStats& s) {
  return {{"group", s.group}, {"rows", s.rows}, {"median_abs_time_error", s.median_abs},
          {"p90_abs_time_error", s.p90_abs}, {"median_signed_time_error", s.median_signed},
          {"median_abs_throughput_error", s.median_abs_throughput}};
}

}  // namespace

double ArenaNetworkGbps() {
  auto n = FindNodeType("arena-a100");
  return n.ok() ? (*n)->network_gbps : 50;
}

std::string RenderAccuracy(const AccuracyReport& rep, bool rows) {
  std::string out;
  if (rows) {
    TextTable t({"id", "model", "gpus", "plan (chosen)", "measured s", "predicted s", "time err"});
    for (const auto& r : rep.results) {
      const auto& c = *r.ref;
      t.AddRow({c.id, c.model.name, std::to_string(c.gpus) + "x" + c.topology.gpu->name,
                r.predicted ? r.estimate.plan.ToString() : "none: " + r.reason.substr(0, 60),
                FormatDouble(r.measured_s, 4), r.predicted ? FormatDouble(r.predicted_s, 4) : "-",
                r.predicted ? Pct(r.time_error) : "-"});
    }
    out += t.Render() + "\n";
  }
  TextTable g({"gpu generation", "rows", "median |err|", "p90 |err|", "median bias", "median |tput err|"});
  AddStatsRows(g, rep.by_generation);
  AddStatsRows(g, {rep.overall});
  out += "Iteration-time error by GPU generation (err = predicted/measured - 1):\n" + g.Render() + "\n";
  TextTable s({"source", "rows", "median |err|", "p90 |err|", "median bias", "median |tput err|"});
  AddStatsRows(s, rep.by_source);
  out += "By source:\n" + s.Render();
  TextTable b({"generation/source", "rows", "median |err|", "p90 |err|", "median bias", "median |tput err|"});
  AddStatsRows(b, rep.by_generation_and_source);
  out += "\nBy GPU generation and source:\n" + b.Render();
  out += "\n" + std::to_string(rep.results.size()) + " reference rows compared, " +
         std::to_string(rep.not_predicted) + " without a fitting plan, " + std::to_string(rep.skipped.size()) +
         " skipped (no shape or result), " + std::to_string(rep.infeasible_measured) +
         " Alpa entries measured out-of-memory.\n";
  return out;
}

CommandAction SetupAccuracy(CLI::App& app, CommandIo io) {
  struct Flags {
    std::string data;
    ParamsFlag params;
    bool rows = false, json = false;
  };
  auto f = std::make_shared<Flags>();
  app.footer(
      "Compare the estimator with published measurements (TESSEL_DATA/measured/calibration.csv)\n"
      "and Alpa-measured iteration times (TESSEL_DATA/arena/database). Plan fields a reference\n"
      "does not state are chosen by the planner (its best plan), as the measured system chose\n"
      "its own. Prints the relative error per row (--rows) and its median and 90th percentile\n"
      "per GPU generation and per source.");
  app.add_option("--data", f->data, "Shared data folder (default $TESSEL_DATA or ../shared/data)");
  f->params.Add(app);
  app.add_flag("--rows", f->rows, "Print every row");
  app.add_flag("--json", f->json, "Print JSON");
  return [io, f]() -> int {
    auto params = f->params.Resolve();
    if (!params.ok()) {
      io.err << "error: " << params.status().message() << "\n";
      return 2;
    }
    auto refs = LoadReferences(ReferenceFiles::Under(DataDir(f->data)), ArenaNetworkGbps());
    if (!refs.ok()) {
      io.err << "error: " << refs.status().message() << "\n";
      return refs.status().code() == StatusCode::kNotFound ? 1 : 2;
    }
    Estimator est(**params);
    AccuracyReport rep = EvaluateAccuracy(*refs, est);
    if (f->json) {
      nlohmann::json j;
      j["by_generation"] = nlohmann::json::array();
      for (const auto& s : rep.by_generation) j["by_generation"].push_back(StatsJson(s));
      j["by_source"] = nlohmann::json::array();
      for (const auto& s : rep.by_source) j["by_source"].push_back(StatsJson(s));
      j["overall"] = StatsJson(rep.overall);
      j["by_generation_and_source"] = nlohmann::json::array();
      for (const auto& s : rep.by_generation_and_source) j["by_generation_and_source"].push_back(StatsJson(s));
      j["rows"] = nlohmann::json::array();
      for (const auto& r : rep.results) {
        nlohmann::json row = {{"id", r.ref->id}, {"model", r.ref->model.name}, {"gpu", r.ref->topology.gpu->name},
                              {"gpus", r.ref->gpus}, {"measured_s", r.measured_s}, {"note", r.ref->note}};
        if (r.predicted) {
          row["predicted_s"] = r.predicted_s;
          row["time_error"] = r.time_error;
          row["plan"] = PlanToJson(r.estimate.plan);
        } else {
          row["reason"] = r.reason;
        }
        j["rows"].push_back(row);
      }
      j["skipped"] = nlohmann::json::array();
      for (const auto& s : rep.skipped) j["skipped"].push_back({{"id", s.id}, {"reason", s.reason}});
      io.out << j.dump(2) << "\n";
    } else {
      io.out << RenderAccuracy(rep, f->rows);
    }
    return 0;
  };
}

}  // namespace tessel
