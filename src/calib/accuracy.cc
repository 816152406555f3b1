#include "calib/accuracy.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/stats.h"
#include "plan/planner.h"

namespace tessel {

namespace {


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

PlanRequest RequestFor(const ReferenceCase& c, const PerfParams& params) {
  PlanRequest req;
  auto fw = params.FindFramework(c.source == "alpa" ? "alpa" : "megatron");
  req.framework = fw.ok() ? *fw : nullptr;
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
    auto plans = SearchPlans(estimator, RequestFor(c, estimator.params()));
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
  std::map<std::string, std::vector<const CaseResult*>> by_gen, by_src, by_both;
  std::vector<const CaseResult*> all;
  for (const auto& r : rep.results) {
    if (!r.predicted) continue;
    by_gen[r.ref->gpu_generation].push_back(&r);
    by_src[r.ref->source].push_back(&r);
    by_both[r.ref->gpu_generation + "/" + r.ref->source].push_back(&r);
    all.push_back(&r);
  }
  for (const auto& [g, rs] : by_gen) rep.by_generation.push_back(Stats(g, rs));
  for (const auto& [g, rs] : by_src) rep.by_source.push_back(Stats(g, rs));
  for (const auto& [g, rs] : by_both) rep.by_generation_and_source.push_back(Stats(g, rs));
  rep.overall = Stats("all", all);
  return rep;
}

namespace {

// Median predicted/measured time ratio of the cases on `gpu` from tuned
// stacks (alpa = false) or from Alpa (alpa = true).
double MedianRatio(const AccuracyReport& rep, const std::string& gpu, bool alpa) {
  std::vector<double> ratios;
  for (const auto& r : rep.results)
    if (r.predicted && r.ref->topology.gpu->name == gpu && (r.ref->source == "alpa") == alpa)
      ratios.push_back(r.predicted_s / r.measured_s);
  return ratios.empty() ? 0.0 : Quantile(ratios, 0.5);
}

GpuEfficiency* Find(std::vector<GpuEfficiency>& v, const std::string& gpu) {
  for (auto& e : v)
    if (e.gpu == gpu) return &e;
  return nullptr;
}

}  // namespace

PerfParams FitGemmEfficiency(const ReferenceSet& refs, const PerfParams& start, int iterations) {
  PerfParams p = start;
  // GPU types measured by well-tuned stacks (Megatron, NVIDIA reference
  // code) define the hardware's efficiency. Alpa's runs fit Alpa's own
  // efficiency per GPU type; the median of Alpa/tuned over the types both
  // measured is Alpa's kernel factor, which also gives the hardware
  // efficiency of types only Alpa measured.
  std::vector<std::string> tuned, alpa;
  for (const auto& c : refs.cases) {
    const std::string& g = c.topology.gpu->name;
    auto& list = c.source == "alpa" ? alpa : tuned;
    if (std::find(list.begin(), list.end(), g) == list.end()) list.push_back(g);
  }
  std::sort(tuned.begin(), tuned.end());
  std::sort(alpa.begin(), alpa.end());
  FrameworkProfile* fw = nullptr;
  for (auto& f : p.frameworks)
    if (f.name == "alpa") fw = &f;
  for (const auto& g : tuned)
    if (!Find(p.gpus, g)) p.gpus.push_back({g, p.fallback.gemm, p.fallback.memory});
  if (fw != nullptr)
    for (const auto& g : alpa)
      if (!Find(fw->measured, g)) fw->measured.push_back({g, p.fallback.gemm * fw->kernel_efficiency, p.fallback.memory});
  for (int it = 0; it < iterations; ++it) {
    Estimator est(p);
    AccuracyReport rep = EvaluateAccuracy(refs, est);
    for (const auto& g : tuned) {
      double r = MedianRatio(rep, g, false);
      if (r > 0) Find(p.gpus, g)->gemm = std::clamp(Find(p.gpus, g)->gemm * r, 0.05, 0.95);
    }
    if (fw != nullptr)
      for (const auto& g : alpa) {
        double r = MedianRatio(rep, g, true);
        if (r > 0) Find(fw->measured, g)->gemm = std::clamp(Find(fw->measured, g)->gemm * r, 0.02, 0.95);
      }
  }
  if (fw != nullptr) {
    std::vector<double> factors;
    for (const auto& g : alpa)
      if (std::find(tuned.begin(), tuned.end(), g) != tuned.end())
        factors.push_back(Find(fw->measured, g)->gemm / Find(p.gpus, g)->gemm);
    if (!factors.empty()) fw->kernel_efficiency = Quantile(factors, 0.5);
    for (const auto& g : alpa) {
      if (std::find(tuned.begin(), tuned.end(), g) != tuned.end()) continue;
      double hw = std::min(0.95, Find(fw->measured, g)->gemm / fw->kernel_efficiency);
      if (GpuEfficiency* e = Find(p.gpus, g)) e->gemm = hw;
      else p.gpus.push_back({g, hw, p.fallback.memory});
    }
    std::sort(fw->measured.begin(), fw->measured.end(), [](const auto& a, const auto& b) { return a.gpu < b.gpu; });
  }
  std::sort(p.gpus.begin(), p.gpus.end(), [](const auto& a, const auto& b) { return a.gpu < b.gpu; });
  return p;
}

}  // namespace tessel
