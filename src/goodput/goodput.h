// Goodput = throughput x statistical efficiency (Pollux, OSDI'21, §3; SYSTEM.md
// idea 2). A job whose batch size may change is worth what it learns per
// second, not what it computes per second. This file is the model a job's
// agent and the goodput policies (pollux, sia) evaluate:
//
//  - statistical efficiency from the gradient noise scale (grad_sqr = |g|^2,
//    grad_var = tr(Σ), both as measured at the job's initial batch size);
//  - Pollux's throughput model of one data-parallel step, fitted by bounded
//    least squares to the steps a job has observed;
//  - the agent's choice of per-GPU (atomic) batch size and gradient
//    accumulation steps that maximises goodput on an allocation, within the
//    job's batch-size and memory limits.
//
// Units: batch sizes in samples; times in seconds; throughput in samples/s;
// goodput in samples/s at the initial batch size's efficiency (so goodput /
// init_batch is statistical progress in initial-batch steps per second, the
// unit a job's progress is measured in).
//
// Pure functions and value types; thread-compatible.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessel::goodput {

// Gradient statistics at the initial batch size (Pollux's grad_sqr and
// grad_var; the gradient noise scale is var / sqr).
struct GradStats {
  double sqr = 0;
  double var = 0;
};

// How the learning rate follows the batch size, and so how much statistical
// progress a step at a larger batch makes (its "gain", in initial-batch
// steps):
//  - adascale: lr x gain, where gain = (var + sqr) / (var / s + sqr) and
//    s = batch / init_batch (AdaScale, Johnson et al. 2020; Pollux eq. 6);
//  - linear: lr x s (Goyal et al. 2017). A step cannot make more progress
//    than the noise allows, nor more than its learning rate moves, so
//    gain = min(s, adascale gain) = the adascale gain;
//  - sqrt: lr x sqrt(s) (Krizhevsky 2014): gain = min(sqrt(s), adascale gain).
// Linear and AdaScale therefore credit the same progress; they differ in the
// learning rate the job is told to use (LrScale).
enum class ScalingRule { kAdaScale, kLinear, kSqrt };
Result<ScalingRule> ParseScalingRule(std::string_view s);  // adascale|linear|sqrt
const char* ScalingRuleName(ScalingRule r);

// Progress of one step at `batch`, in steps at `init_batch`. 1 at init_batch;
// grows with batch but never faster than batch / init_batch. Stats with
// sqr <= 0 and var <= 0 (unknown) give perfect scaling (s).
double Gain(const GradStats& g, double init_batch, double batch,
            ScalingRule rule = ScalingRule::kAdaScale);
// Gain / (batch / init_batch): 1 at init_batch, non-increasing in batch.
double Efficiency(const GradStats& g, double init_batch, double batch,
                  ScalingRule rule = ScalingRule::kAdaScale);
// The learning-rate multiplier the rule applies at `batch`.
double LrScale(const GradStats& g, double init_batch, double batch, ScalingRule rule);

// Pollux's model of one step's time (Pollux §4.1, eq. 10-11):
//   T_accum(b)   = alpha_c + beta_c * b                (forward+backward of b samples)
//   T_sync(n, r) = alpha_x + beta_x * max(r - 2, 0)    x = n (inter-node) if n > 1,
//                                                      r (intra-node) if n == 1 and r > 1,
//                                                      0 when r == 1
//   T_step       = (T_accum^gamma + T_sync^gamma)^(1/gamma)   (gamma in [1, 10]: overlap)
// A step with `accum` extra accumulation micro-steps takes
//   accum * T_accum(b) + T_step.
struct ThroughputParams {
  double alpha_c = 0.1, beta_c = 0.01;
  double alpha_n = 0.1, beta_n = 0.01;
  double alpha_r = 0.1, beta_r = 0.01;
  double gamma = 1.0;
  std::string ToString() const;
};

double PredictAccumTime(const ThroughputParams& p, double atomic_bsz);
double PredictSyncTime(const ThroughputParams& p, int nodes, int replicas);
double PredictStepTime(const ThroughputParams& p, int nodes, int replicas, double atomic_bsz);
// Samples per second with `accum` accumulation steps per optimizer step.
double PredictThroughput(const ThroughputParams& p, int nodes, int replicas, double atomic_bsz,
                         int accum);

// One measured configuration: `accum_time` is the compute part of a step
// (step time minus synchronisation), `step_time` the whole optimizer step
// without accumulation.
struct StepObservation {
  int nodes = 1;
  int replicas = 1;
  double atomic_bsz = 1;
  double accum_time = 0;
  double step_time = 0;
};

struct FitResult {
  ThroughputParams params;
  double rmsle_accum = 0;  // root-mean-square log error over the observations
  double rmsle_step = 0;
  int iterations = 0;
};

// Fits ThroughputParams to the observations by bounded, regularised least
// squares on log times (Pollux §4.1). Parameters the observations cannot
// identify are pinned: alpha_c to half the mean compute time when only one
// batch size was seen; the inter-node terms when no multi-node step was
// seen (then raised to at least 1.1x the intra-node terms, a pessimistic
// prior); the intra-node terms when no single-node multi-GPU step was seen;
// both beta_x when no step had more than 2 replicas. Solved by projected
// BFGS in log space from two starts (a fixed one and one from the data);
// the better wins. Deterministic. InvalidArgument when empty, when a time
// or count is not positive, or when replicas < nodes.
Result<FitResult> FitThroughputParams(std::span<const StepObservation> obs);

// A job's batch-size limits.
struct BatchLimits {
  int init_batch = 1;  // the batch the job was written for; efficiency 1 there
  int max_batch = 1;   // largest total batch the job accepts (>= init_batch)
  int min_atomic = 1;  // smallest per-GPU micro-batch worth running
  int max_atomic = 1;  // largest per-GPU micro-batch that fits in memory
};

// A per-GPU micro-batch and accumulation count, and what it yields.
struct BatchChoice {
  bool valid = false;  // false: no configuration within the limits
  int atomic_bsz = 0;
  int accum_steps = 0;  // extra micro-steps before each optimizer step
  int batch = 0;        // replicas * atomic_bsz * (accum_steps + 1)
  double throughput = 0;  // samples/s
  double efficiency = 0;
  double goodput = 0;     // throughput * efficiency
};

class GoodputFunction {
 public:
  GoodputFunction(ThroughputParams params, GradStats grad, BatchLimits limits,
                  ScalingRule rule = ScalingRule::kAdaScale);

  // Goodput of a given configuration (no limit checks).
  double Evaluate(int nodes, int replicas, int atomic_bsz, int accum_steps) const;

  // The agent's choice on (nodes, replicas): the total batch is searched
  // over a geometric grid between max(init_batch, min_atomic * replicas)
  // and max_batch; each candidate is split into an atomic batch within
  // [min_atomic, max_atomic] plus accumulation steps (at least one extra
  // step on a single GPU above init_batch when `accumulation`, because the
  // gradient noise cannot be measured from one micro-batch). Invalid when
  // even min_atomic * replicas exceeds max_batch.
  BatchChoice Optimize(int nodes, int replicas, bool accumulation = true) const;

  // The split of a fixed total batch over `replicas` (for jobs whose batch
  // does not adapt): atomic = ceil(batch / replicas / (accum + 1)) with the
  // fewest accumulation steps that keep atomic <= max_atomic.
  BatchChoice Fixed(int nodes, int replicas, int batch) const;

  const ThroughputParams& params() const { return params_; }
  const GradStats& grad() const { return grad_; }
  const BatchLimits& limits() const { return limits_; }
  ScalingRule rule() const { return rule_; }

 private:
  ThroughputParams params_;
  GradStats grad_;
  BatchLimits limits_;
  ScalingRule rule_;
};

}  // namespace tessel::goodput
