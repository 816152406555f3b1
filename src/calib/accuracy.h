// The accuracy report: the estimator (through the planner, which fills in
// plan fields a reference leaves unstated) against every reference
// measurement, with relative errors per row and their median and 90th
// percentile per GPU generation and per source. Also the calibration of
// per-GPU-type GEMM efficiency that `tessel calibrate` performs on the same
// cases.
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
  double throughput_error = 0;  // measured / predicted - 1 (tokens/s, samples/s)
};

struct ErrorStats {
  std::string group;
  int rows = 0;
  double median_abs = 0;      // |time error|
  double p90_abs = 0;
  double median_signed = 0;   // bias: > 0 means the estimator is slow
  double median_abs_throughput = 0;
};

struct AccuracyReport {
  std::vector<CaseResult> results;
  std::vector<ErrorStats> by_generation;
  std::vector<ErrorStats> by_source;
  std::vector<ErrorStats> by_generation_and_source;  // "a100/megatron"
  ErrorStats overall;
  std::vector<SkippedCase> skipped;
  int infeasible_measured = 0;
  int not_predicted = 0;
};

// Where the reference files are, under a data folder.
struct ReferenceFiles {
  std::string calibration_csv;
  std::vector<std::string> arena_databases;
  std::string comm_dir;
  static ReferenceFiles Under(const std::string& data_dir);
};

// Loads the references. NotFound when the data folder lacks them.
Result<ReferenceSet> LoadReferences(const ReferenceFiles& files, double arena_network_gbps);

// Predicts each case with `estimator` and summarises the errors.
AccuracyReport EvaluateAccuracy(const ReferenceSet& refs, const Estimator& estimator);

// Per-GPU-type GEMM efficiency fitted so that the median time ratio of each
// type's cases is 1 (fixed-point iterations); other parameters unchanged.
PerfParams FitGemmEfficiency(const ReferenceSet& refs, const PerfParams& start, int iterations = 6);

}  // namespace tessel
