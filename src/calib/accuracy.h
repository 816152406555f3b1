// The accuracy report: the estimator (through the planner, which fills in
// plan fields a reference leaves unstated) against every reference
// measurement, with the relative error of tokens/s (samples/s) per row and
// its median and 90th percentile per GPU architecture, framework and source.
// A run that ran but for which no plan fits is "called does not fit" and
// counts as a 100% error.
//
// Also the calibration `tessel calibrate` performs: each GPU architecture's
// GEMM efficiency (and Alpa's kernel efficiency) fitted within published
// bounds, and leave-one-source-out cross-validation: fit on every source but
// one, predict the one left out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "perf/estimator.h"
#include "calib/reference.h"

namespace tessel {

struct CaseResult {
  const ReferenceCase* ref = nullptr;
  bool predicted = false;
  std::string reason;        // when not predicted: why (e.g. nothing fits)
  Estimate estimate;         // the chosen plan's estimate
  double predicted_s = 0;
  double measured_s = 0;
  double time_error = 0;     // predicted / measured - 1 (iteration time)
  double throughput_error = 0;  // predicted / measured - 1 (tokens/s); -1 when not predicted
};

struct ErrorStats {
  std::string group;
  int rows = 0;
  int does_not_fit = 0;       // rows that ran but were called "does not fit"
  double median_abs = 0;      // |throughput error|, unpredicted rows at 100%
  double p90_abs = 0;
  double median_signed = 0;   // bias: > 0 means the estimator is too fast
};

struct AccuracyReport {
  std::vector<CaseResult> results;
  std::vector<ErrorStats> by_arch;
  std::vector<ErrorStats> by_framework;
  std::vector<ErrorStats> by_source;
  std::vector<ErrorStats> by_arch_and_framework;  // "ampere/megatron"
  // By the run's GPU count: "1", "2-8", "9-64", "65-512", "513+" (errors
  // that grow with scale show here: communication, pipelines).
  std::vector<ErrorStats> by_gpus;
  ErrorStats overall;
  std::vector<SkippedCase> skipped;
  int infeasible_measured = 0;
  int not_predicted = 0;
  // Runs measured out of memory (ReferenceSet::out_of_memory) and the ids of
  // those the estimator called fitting (a wrong "fits").
  int out_of_memory = 0;
  std::vector<std::string> out_of_memory_called_fitting;
};

// Strong scaling: one run (source, model, global batch, GPU type, precision,
// framework) measured on fewer and on more GPUs, both predicted. Speedup =
// iteration time on the fewer / on the more. Where one GPU count was
// measured on several host layouts (the Arena's 1 x 4 and 2 x 2 A100s), the
// faster measurement stands for it, with its own prediction.
struct ScalingStep {
  std::string run;   // "arena-prof-db wide_resnet__1B batch 256 on h100-sxm fp32"
  std::string kind;  // "cnn", "moe" or "transformer"
  int from_gpus = 0, to_gpus = 0;
  double measured_speedup = 0;
  double predicted_speedup = 0;
};

struct ScalingStats {
  std::string group;  // "cnn 2->4"
  int steps = 0;
  double median_measured = 0;   // median measured speedup
  double median_predicted = 0;  // median predicted speedup
  double median_ratio = 0;      // median of predicted / measured speedup (> 1: scales better in the model)
};

// Each run's consecutive GPU counts, in the report's row order of runs.
std::vector<ScalingStep> ScalingSteps(const AccuracyReport& rep);
// Grouped by model kind and GPU-count step ("cnn 2->4"), then by kind alone
// ("cnn, all steps").
std::vector<ScalingStats> SummarizeScaling(const std::vector<ScalingStep>& steps);

// Where the reference files are, under a data folder.
struct ReferenceFiles {
  std::string calibration_csv;
  std::vector<std::string> arena_databases;
  std::string comm_dir;
  bool embedded_published = true;  // data/measured/published.csv (built in)
  static ReferenceFiles Under(const std::string& data_dir);
};

// Loads the references. NotFound when the data folder lacks them.
Result<ReferenceSet> LoadReferences(const ReferenceFiles& files, double arena_network_gbps);

// Predicts each case with `estimator` and summarises the errors.
AccuracyReport EvaluateAccuracy(const ReferenceSet& refs, const Estimator& estimator);
// The same for some of the cases (pointers into a ReferenceSet that outlives
// the report).
AccuracyReport EvaluateCases(const std::vector<const ReferenceCase*>& cases, const Estimator& estimator);
// Recomputes the grouped statistics of `rep.results`.
void Summarize(AccuracyReport* rep);

// Fits each architecture's GEMM efficiency to the median time ratio of its
// rows from vendor-library frameworks and Alpa's kernel efficiency to its
// rows on those architectures; every value stays inside its bounds.
// Architectures without such rows (none at all, or only Alpa's, where the
// two factors cannot be told apart) get the fitted ones' median fraction of
// ceiling.
PerfParams FitParams(const std::vector<const ReferenceCase*>& cases, const PerfParams& start, int iterations = 8);
PerfParams FitParams(const ReferenceSet& refs, const PerfParams& start, int iterations = 8);

// Fitted values lying on (within 0.5% of) a bound, as "ampere.gemm = 0.9
// (ceiling)"; empty when none.
std::vector<std::string> ParamsOnBounds(const PerfParams& p);

// Leave-one-source-out: for each source, fit on the others (from `start`)
// and predict its rows. The report's rows are all held-out predictions.
AccuracyReport CrossValidateBySource(const ReferenceSet& refs, const PerfParams& start, int iterations = 8);

}  // namespace tessel
