#include "calib/accuracy.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "plan/planner.h"

namespace tessel {

namespace {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double idx = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (idx - lo) * (v[hi] - v[lo]);
}

ErrorStats Stats(const std::string& group, const std::vector<const CaseResult*>& rs) {
  ErrorStats s;
  s.group = group;
  std::vector<double> abs_t, signed_t, abs_tp;
  for (const auto* r : rs) {
    abs_t.push_back(std::fabs(r->time_error));
    signed_t.push_back(r->time_error);
    abs_tp.push_back(std::fabs(r->throughput_error));
  }
  s.rows = static_cast<int>(rs.size());
  s.median_abs = Quantile(abs_t, 0.5);
  s.p90_abs = Quantile(abs_t, 0.9);
  s.median_signed = Quantile(signed_t, 0.5);
  s.median_abs_throughput = Quantile(abs_tp, 0.5);
  return s;
}

PlanRequest RequestFor(const ReferenceCase& c) {
  PlanRequest req;
  req.model = &c.model;
  req.topology = c.topology;
  req.gpus = c.gpus;
  req.global_batch = c.global_batch;
  req.precision = c.precision;
  req.mode = SearchMode::kFull;
  req.top_k = 1;
  req.tp = c.tp;
  req.pp = c.pp;
  req.dp = c.dp;
  req.micro_batch = c.micro_batch;
  req.num_micro_batches = c.num_micro_batches;
  req.virtual_stages = c.virtual_stages;
  req.recompute = c.recompute;
  // Published Megatron runs state their plan and did not shard the
  // optimizer unless they say so.
  if (c.source != "alpa" && c.tp > 0) req.max_zero = 0;
  return req;
}

}  // namespace

ReferenceFiles ReferenceFiles::Under(const std::string& data_dir) {
  ReferenceFiles f;
  f.calibration_csv = data_dir + "/measured/calibration.csv";
  f.arena_databases = {data_dir + "/arena/database/prof_database.json",
                       data_dir + "/arena/database/prof_database_h100_l20.json"};
  f.comm_dir = data_dir + "/arena/comm";
  return f;
}

Result<ReferenceSet> LoadReferences(const ReferenceFiles& files, double arena_network_gbps) {
  ReferenceSet set;
  if (!std::filesystem::exists(files.calibration_csv))
    return NotFound("reference data not found: " + files.calibration_csv +
                    " (set TESSEL_DATA or --data to the shared data folder)");
  TESSEL_RETURN_IF_ERROR(LoadCalibrationCsv(files.calibration_csv, &set));
  for (const auto& db : files.arena_databases) {
    if (!std::filesystem::exists(db)) return NotFound("reference data not found: " + db);
    TESSEL_RETURN_IF_ERROR(LoadArenaDatabase(db, arena_network_gbps, &set));
  }
  return set;
}

AccuracyReport EvaluateAccuracy(const ReferenceSet& refs, const Estimator& estimator) {
  AccuracyReport rep;
  rep.skipped = refs.skipped;
  rep.infeasible_measured = refs.infeasible_measured;
  for (const auto& c : refs.cases) {
    CaseResult r;
    r.ref = &c;
    r.measured_s = c.measured_iteration_s;
    auto plans = SearchPlans(estimator, RequestFor(c));
    if (!plans.ok()) {
      r.reason = plans.status().message();
    } else if (plans->plans.empty()) {
      r.reason = plans->reason;
    } else {
      r.predicted = true;
      r.estimate = plans->plans.front();
      r.predicted_s = r.estimate.iteration_time_s;
      r.time_error = r.predicted_s / r.measured_s - 1;
      r.throughput_error = r.measured_s / r.predicted_s - 1;
    }
    if (!r.predicted) rep.not_predicted++;
    rep.results.push_back(std::move(r));
  }
  std::map<std::string, std::vector<const CaseResult*>> by_gen, by_src;
  std::vector<const CaseResult*> all;
  for (const auto& r : rep.results) {
    if (!r.predicted) continue;
    by_gen[r.ref->gpu_generation].push_back(&r);
    by_src[r.ref->source].push_back(&r);
    all.push_back(&r);
  }
  for (const auto& [g, rs] : by_gen) rep.by_generation.push_back(Stats(g, rs));
  for (const auto& [g, rs] : by_src) rep.by_source.push_back(Stats(g, rs));
  rep.overall = Stats("all", all);
  return rep;
}

PerfParams FitGemmEfficiency(const ReferenceSet& refs, const PerfParams& start, int iterations) {
  PerfParams p = start;
  std::vector<std::string> gpus;
  for (const auto& c : refs.cases)
    if (std::find(gpus.begin(), gpus.end(), c.topology.gpu->name) == gpus.end()) gpus.push_back(c.topology.gpu->name);
  std::sort(gpus.begin(), gpus.end());
  for (const auto& g : gpus) {
    bool present = false;
    for (const auto& e : p.gpus) present |= e.gpu == g;
    if (!present) p.gpus.push_back({g, p.fallback.gemm, p.fallback.memory});
  }
  for (int it = 0; it < iterations; ++it) {
    Estimator est(p);
    AccuracyReport rep = EvaluateAccuracy(refs, est);
    for (auto& e : p.gpus) {
      std::vector<double> ratios;
      for (const auto& r : rep.results)
        if (r.predicted && r.ref->topology.gpu->name == e.gpu) ratios.push_back(r.predicted_s / r.measured_s);
      if (ratios.empty()) continue;
      double ratio = Quantile(ratios, 0.5);
      e.gemm = std::clamp(e.gemm * ratio, 0.05, 0.95);
    }
  }
  return p;
}

}  // namespace tessel
