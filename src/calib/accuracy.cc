#include "calib/accuracy.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/stats.h"
#include "core/strings.h"
#include "plan/planner.h"

namespace tessel {

namespace {

ErrorStats Stats(const std::string& group, const std::vector<const CaseResult*>& rs) {
  ErrorStats s;
  s.group = group;
  std::vector<double> abs_e, signed_e;
  for (const auto* r : rs) {
    abs_e.push_back(std::fabs(r->throughput_error));
    signed_e.push_back(r->throughput_error);
    if (!r->predicted) s.does_not_fit++;
  }
  s.rows = static_cast<int>(rs.size());
  if (rs.empty()) return s;
  s.median_abs = Quantile(abs_e, 0.5);
  s.p90_abs = Quantile(abs_e, 0.9);
  s.median_signed = Quantile(signed_e, 0.5);
  return s;
}

PlanRequest RequestFor(const ReferenceCase& c, const PerfParams& params) {
  PlanRequest req;
  if (!c.framework.empty()) {
    auto fw = params.FindFramework(c.framework);
    req.framework = fw.ok() ? *fw : nullptr;
  }
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
  req.zero = c.zero;
  // A stated stage deeper than the framework implements (Llama 3's
  // FSDP-style sharding with TP/PP, classified as megatron): its deepest.
  if (req.framework != nullptr && c.zero > req.framework->max_zero) req.zero = req.framework->max_zero;
  // Megatron-LM papers' runs state their plan and did not shard the
  // optimizer unless they say so.
  if (c.zero < 0 && c.framework == "megatron-legacy" && c.tp > 0) req.max_zero = 0;
  return req;
}

CaseResult Evaluate(const ReferenceCase& c, const Estimator& estimator) {
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
  if (!r.predicted) r.throughput_error = -1;  // it ran: "does not fit" is a 100% error
  return r;
}

bool Alpa(const ReferenceCase& c) { return c.framework == "alpa"; }

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
  if (files.embedded_published)
    TESSEL_RETURN_IF_ERROR(LoadThroughputCsvText(EmbeddedPublishedCsv(), "published.csv", &set));
  for (const auto& db : files.arena_databases) {
    if (!std::filesystem::exists(db)) return NotFound("reference data not found: " + db);
    TESSEL_RETURN_IF_ERROR(LoadArenaDatabase(db, arena_network_gbps, &set));
  }
  return set;
}

void Summarize(AccuracyReport* rep) {
  std::map<std::string, std::vector<const CaseResult*>> by_arch, by_fw, by_src, by_both;
  // GPU-count bands, smallest runs first: a run falls in the first whose
  // upper bound it does not pass.
  static constexpr std::pair<int, const char*> kBands[] = {
      {1, "1"}, {8, "2-8"}, {64, "9-64"}, {512, "65-512"}, {std::numeric_limits<int>::max(), "513+"}};
  std::map<size_t, std::vector<const CaseResult*>> by_gpus;  // band index -> rows
  std::vector<const CaseResult*> all;
  rep->not_predicted = 0;
  for (const auto& r : rep->results) {
    if (!r.predicted) rep->not_predicted++;
    std::string fw = r.predicted ? r.estimate.framework : (r.ref->framework.empty() ? "default" : r.ref->framework);
    by_arch[r.ref->arch].push_back(&r);
    by_fw[fw].push_back(&r);
    by_src[r.ref->source].push_back(&r);
    by_both[r.ref->arch + "/" + fw].push_back(&r);
    size_t band = 0;
    while (r.ref->gpus > kBands[band].first) ++band;
    by_gpus[band].push_back(&r);
    all.push_back(&r);
  }
  rep->by_arch.clear();
  rep->by_framework.clear();
  rep->by_source.clear();
  rep->by_arch_and_framework.clear();
  rep->by_gpus.clear();
  for (const auto& [g, rs] : by_arch) rep->by_arch.push_back(Stats(g, rs));
  for (const auto& [g, rs] : by_fw) rep->by_framework.push_back(Stats(g, rs));
  for (const auto& [g, rs] : by_src) rep->by_source.push_back(Stats(g, rs));
  for (const auto& [g, rs] : by_both) rep->by_arch_and_framework.push_back(Stats(g, rs));
  for (const auto& [band, rs] : by_gpus) rep->by_gpus.push_back(Stats(kBands[band].second, rs));
  rep->overall = Stats("all", all);
}

std::vector<ScalingStep> ScalingSteps(const AccuracyReport& rep) {
  // run -> GPU count -> the fastest measured row; runs in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::map<int, const CaseResult*>> runs;
  for (const auto& r : rep.results) {
    const ReferenceCase& c = *r.ref;
    if (!r.predicted || c.global_batch <= 0 || r.measured_s <= 0 || r.predicted_s <= 0) continue;
    std::string run = c.source + " " + c.model.name + " batch " + std::to_string(c.global_batch) + " on " +
                      c.topology.gpu->name + " " + PrecisionName(c.precision) +
                      (c.framework.empty() ? "" : " " + c.framework);
    auto [it, fresh] = runs.try_emplace(run);
    if (fresh) order.push_back(run);
    const CaseResult*& best = it->second[c.gpus];
    if (best == nullptr || r.measured_s < best->measured_s) best = &r;
  }
  std::vector<ScalingStep> steps;
  for (const auto& run : order) {
    const CaseResult* prev = nullptr;
    for (const auto& [gpus, r] : runs[run]) {
      if (prev != nullptr) {
        const ModelSpec& m = r->ref->model;
        ScalingStep s;
        s.run = run;
        s.kind = m.kind == ModelKind::kCnn ? "cnn" : (m.tf.IsMoe() ? "moe" : "transformer");
        s.from_gpus = prev->ref->gpus;
        s.to_gpus = gpus;
        s.measured_speedup = prev->measured_s / r->measured_s;
        s.predicted_speedup = prev->predicted_s / r->predicted_s;
        steps.push_back(s);
      }
      prev = r;
    }
  }
  return steps;
}

std::vector<ScalingStats> SummarizeScaling(const std::vector<ScalingStep>& steps) {
  // (kind, from, to) sorts the steps of a kind by size; to = 0 is the kind's
  // every step, listed after them.
  std::map<std::tuple<std::string, int, int>, std::vector<const ScalingStep*>> groups;
  for (const auto& s : steps) {
    groups[{s.kind, s.from_gpus, s.to_gpus}].push_back(&s);
    groups[{s.kind, std::numeric_limits<int>::max(), 0}].push_back(&s);
  }
  std::vector<ScalingStats> out;
  for (const auto& [key, ss] : groups) {
    const auto& [kind, from, to] = key;
    ScalingStats st;
    st.group = to == 0 ? kind + ", all steps" : kind + " " + std::to_string(from) + "->" + std::to_string(to);
    st.steps = static_cast<int>(ss.size());
    std::vector<double> m, p, ratio;
    for (const ScalingStep* s : ss) {
      m.push_back(s->measured_speedup);
      p.push_back(s->predicted_speedup);
      ratio.push_back(s->predicted_speedup / s->measured_speedup);
    }
    st.median_measured = Quantile(m, 0.5);
    st.median_predicted = Quantile(p, 0.5);
    st.median_ratio = Quantile(ratio, 0.5);
    out.push_back(st);
  }
  return out;
}

AccuracyReport EvaluateCases(const std::vector<const ReferenceCase*>& cases, const Estimator& estimator) {
  AccuracyReport rep;
  for (const ReferenceCase* c : cases) rep.results.push_back(Evaluate(*c, estimator));
  Summarize(&rep);
  return rep;
}

// A run measured out of memory that the estimator calls fitting.
void CheckOutOfMemory(const ReferenceCase& c, const Estimator& estimator, AccuracyReport* rep) {
  rep->out_of_memory++;
  if (Evaluate(c, estimator).predicted) rep->out_of_memory_called_fitting.push_back(c.id);
}

AccuracyReport EvaluateAccuracy(const ReferenceSet& refs, const Estimator& estimator) {
  std::vector<const ReferenceCase*> cases;
  for (const auto& c : refs.cases) cases.push_back(&c);
  AccuracyReport rep = EvaluateCases(cases, estimator);
  rep.skipped = refs.skipped;
  rep.infeasible_measured = refs.infeasible_measured;
  for (const auto& c : refs.out_of_memory) CheckOutOfMemory(c, estimator, &rep);
  return rep;
}

namespace {

// Median predicted/measured time ratio of the rows selected by `pick`
// (rows without a fitting plan count as far too slow a prediction: 2),
// each source weighing the same whatever its number of rows: a source with
// many rows (a database, one lab's sweep) does not set the figure alone.
template <typename Pick>
double MedianRatio(const std::vector<CaseResult>& results, Pick pick) {
  std::map<std::string, int> per_source;
  for (const auto& r : results)
    if (pick(*r.ref)) per_source[r.ref->source]++;
  std::vector<std::pair<double, double>> ratios;  // (ratio, weight)
  for (const auto& r : results)
    if (pick(*r.ref))
      ratios.push_back({r.predicted ? r.predicted_s / r.measured_s : 2.0, 1.0 / per_source[r.ref->source]});
  return WeightedMedian(std::move(ratios));
}

constexpr double kAlpaFloor = 0.2, kAlpaCeiling = 1.0;
constexpr double kMoeGemmFloor = 0.3, kMoeGemmCeiling = 1.0;

}  // namespace

PerfParams FitParams(const std::vector<const ReferenceCase*>& cases, const PerfParams& start, int iterations) {
  PerfParams p = start;
  // An architecture is fitted on rows of frameworks that run cuBLAS-class
  // kernels. One whose only rows are Alpa's (Ada: the L20s) is not: its GEMM
  // fraction and Alpa's kernel efficiency multiply, and one set of rows
  // cannot tell them apart; it takes the fitted architectures' prior.
  std::set<std::string> tuned;
  for (const ReferenceCase* c : cases)
    if (!Alpa(*c)) tuned.insert(c->arch);
  FrameworkProfile* alpa = p.MutableFramework("alpa");
  // Alpa's kernel efficiency is its GEMMs' (XLA's dots and fusions) against
  // cuBLAS: fitted on its transformer rows on those architectures, whose
  // steps are GEMMs. A CNN step is cuDNN's convolutions, in fp32 on the CUDA
  // cores for the Arena's Wide-ResNets, which the architectures' tensor-core
  // fit does not describe; its rows would carry that into XLA's GEMMs.
  auto alpa_gemm_row = [&](const ReferenceCase& c) {
    return Alpa(c) && tuned.count(c.arch) > 0 && c.model.kind == ModelKind::kTransformer;
  };
  for (auto& a : p.archs) a.fitted = tuned.count(a.arch) > 0;

  for (int it = 0; it < iterations; ++it) {
    Estimator est(p);
    AccuracyReport rep = EvaluateCases(cases, est);
    // Damped multiplicative steps: the time is only partly GEMM time.
    auto step = [](double value, double ratio, double lo, double hi) {
      if (ratio <= 0) return value;
      return std::clamp(value * std::pow(ratio, 1.2), lo, hi);
    };
    for (const auto& arch : tuned) {
      ArchEfficiency* a = p.MutableArch(arch);
      if (a == nullptr) continue;
      double r = MedianRatio(rep.results, [&](const ReferenceCase& c) { return !Alpa(c) && c.arch == arch; });
      a->gemm = step(a->gemm, r, a->gemm_floor, a->gemm_ceiling);
    }
    if (alpa != nullptr) {
      // MedianRatio is 0 without rows (step then keeps the value): nothing
      // to fit.
      alpa->kernel_efficiency =
          step(alpa->kernel_efficiency, MedianRatio(rep.results, alpa_gemm_row), kAlpaFloor, kAlpaCeiling);
      // The routed GEMMs' efficiency, from the one-GPU transformer runs (no
      // communication): the MoE rows' median time ratio against the dense
      // ones' (a ratio > 1 means the MoE rows are predicted slow). The
      // routed GEMMs are about half an MoE step, hence the squared ratio.
      auto one_gpu = [&](const ReferenceCase& c, bool moe) {
        return alpa_gemm_row(c) && c.gpus == 1 && c.model.tf.IsMoe() == moe;
      };
      double moe = MedianRatio(rep.results, [&](const ReferenceCase& c) { return one_gpu(c, true); });
      double dense = MedianRatio(rep.results, [&](const ReferenceCase& c) { return one_gpu(c, false); });
      if (moe > 0 && dense > 0)
        alpa->moe_gemm_efficiency = step(alpa->moe_gemm_efficiency, std::pow(moe / dense, 2.0), kMoeGemmFloor, kMoeGemmCeiling);
    }
  }
  // Architectures without rows: the fitted ones' median fraction of ceiling.
  std::vector<double> fractions;
  for (const auto& a : p.archs)
    if (a.fitted) fractions.push_back(a.gemm / a.gemm_ceiling);
  if (!fractions.empty()) {
    double f = Quantile(fractions, 0.5);
    for (auto& a : p.archs)
      if (!a.fitted) a.gemm = std::clamp(f * a.gemm_ceiling, a.gemm_floor, a.gemm_ceiling);
    p.fallback.gemm = std::clamp(f * p.fallback.gemm_ceiling, p.fallback.gemm_floor, p.fallback.gemm_ceiling);
  }
  return p;
}

PerfParams FitParams(const ReferenceSet& refs, const PerfParams& start, int iterations) {
  std::vector<const ReferenceCase*> cases;
  for (const auto& c : refs.cases) cases.push_back(&c);
  return FitParams(cases, start, iterations);
}

std::vector<std::string> ParamsOnBounds(const PerfParams& p) {
  std::vector<std::string> out;
  auto near = [](double v, double bound) { return std::fabs(v - bound) <= 0.005 * bound; };
  for (const auto& a : p.archs) {
    if (!a.fitted) continue;
    if (near(a.gemm, a.gemm_ceiling)) out.push_back(a.arch + ".gemm = " + std::to_string(a.gemm) + " (ceiling)");
    if (near(a.gemm, a.gemm_floor)) out.push_back(a.arch + ".gemm = " + std::to_string(a.gemm) + " (floor)");
  }
  for (const auto& f : p.frameworks) {
    if (f.name != "alpa") continue;
    if (near(f.kernel_efficiency, kAlpaCeiling) || near(f.kernel_efficiency, kAlpaFloor))
      out.push_back("alpa.kernel_efficiency = " + std::to_string(f.kernel_efficiency) + " (bound)");
    if (near(f.moe_gemm_efficiency, kMoeGemmCeiling) || near(f.moe_gemm_efficiency, kMoeGemmFloor))
      out.push_back("alpa.moe_gemm_efficiency = " + std::to_string(f.moe_gemm_efficiency) + " (bound)");
  }
  return out;
}

AccuracyReport CrossValidateBySource(const ReferenceSet& refs, const PerfParams& start, int iterations) {
  std::set<std::string> sources;
  for (const auto& c : refs.cases) sources.insert(c.source);
  AccuracyReport rep;
  for (const auto& held_out : sources) {
    std::vector<const ReferenceCase*> train, test;
    for (const auto& c : refs.cases) (c.source == held_out ? test : train).push_back(&c);
    PerfParams fitted = FitParams(train, start, iterations);
    Estimator est(fitted);
    for (const ReferenceCase* c : test) rep.results.push_back(Evaluate(*c, est));
    for (const auto& c : refs.out_of_memory)
      if (c.source == held_out) CheckOutOfMemory(c, est, &rep);
  }
  // Report rows in the references' order.
  std::map<const ReferenceCase*, size_t> order;
  for (size_t i = 0; i < refs.cases.size(); ++i) order[&refs.cases[i]] = i;
  std::sort(rep.results.begin(), rep.results.end(),
            [&](const CaseResult& a, const CaseResult& b) { return order[a.ref] < order[b.ref]; });
  rep.skipped = refs.skipped;
  rep.infeasible_measured = refs.infeasible_measured;
  Summarize(&rep);
  return rep;
}

}  // namespace tessel
