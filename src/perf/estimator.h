// The performance estimator: for a model, a global batch, a topology and a
// parallelism plan, predicts iteration time, throughput, memory per GPU and
// whether it fits, with a breakdown of where the time goes.
//
// Iteration time (Arena's AP-tailored form, SYSTEM.md idea 1): with stage
// times S_i = F_i + B_i per micro-batch (compute + tensor-parallel and
// expert all-to-all communication + pipeline transfers), M micro-batches and
// v interleaved chunks,
//   T = M * max_i S_i + (p - 1) * mean_i S_i / v          (1F1B pipeline)
//     + exposed data-parallel sync + optimizer step + fixed overhead.
// Thread-safe: an Estimator is immutable after construction.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "hardware/node.h"
#include "model/model.h"
#include "perf/params.h"
#include "perf/parallel_plan.h"

namespace tessel {

class EstimateMemo;

struct EstimateRequest {
  const ModelSpec* model = nullptr;
  Topology topology;
  int gpus = 1;
  int global_batch = 1;
  ParallelPlan plan;
  // The training framework; nullptr = DefaultFrameworkFor(plan).
  const FrameworkProfile* framework = nullptr;
  // Write Estimate::reason when the plan does not fit (a search that only
  // keeps the leanest failure's reason asks for it again then).
  bool explain = true;
  // Optional: per-layer costs kept between the estimates of one search
  // (EstimateMemo). The estimate is the same with or without it.
  EstimateMemo* memo = nullptr;
  // > 0: the caller wants the estimate only of a plan whose iteration can
  // take at most this many seconds (a search's k-th best so far). A plan
  // shown to take longer comes back with Estimate::pruned set and nothing
  // else estimated.
  double prune_above = 0;
  // true: a plan that does not fit in memory comes back with its memory
  // (fits false; the reason with explain) and its time not estimated: a
  // search uses only the memory of the plans that fail.
  bool time_fitting_only = false;
};

// Seconds per iteration on the slowest stage, by cause.
struct TimeBreakdown {
  double compute_s = 0;         // forward + backward kernels (incl. recompute)
  double recompute_s = 0;       // of which: recomputed forward passes
  double tp_comm_s = 0;         // tensor/sequence-parallel collectives
  double ep_comm_s = 0;         // MoE all-to-all
  double pp_p2p_s = 0;          // pipeline sends/receives
  double pp_bubble_s = 0;       // pipeline fill and drain
  double dp_comm_s = 0;         // gradient sync / ZeRO gathers, total
  // Hidden: behind backward, or behind the pipeline's cool-down (a later
  // stage finishes its last backward before the first stage does).
  double dp_comm_overlapped_s = 0;
  double dp_comm_exposed_s = 0;
  // What the hidden part costs the compute beside it (its SMs and memory
  // bandwidth; PerfParams::overlap_interference).
  double dp_interference_s = 0;
  double optimizer_s = 0;       // the optimizer step's part not hidden by the cool-down
  double overhead_s = 0;        // fixed per-iteration overhead

  // The collectives among a stage's GPUs (tensor-, expert- and
  // data-parallel), without the pipeline's sends between stages.
  double CollectiveSeconds() const { return tp_comm_s + ep_comm_s + dp_comm_s; }
};

struct MemoryBreakdown {
  double weights_gib = 0;
  double gradients_gib = 0;
  double optimizer_gib = 0;
  double activations_gib = 0;
  double in_flight_micro_batches = 0;
  // False where gradients and activations never coexist
  // (FrameworkProfile::gradients_freed_each_step): the larger one counts.
  bool gradients_beside_activations = true;
  double overhead_gib = 0;
  double total_gib = 0;
  double capacity_gib = 0;
};

struct Estimate {
  double iteration_time_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;     // model FLOPs (no recompute) / time / GPUs
  double hardware_tflops_per_gpu = 0;  // including recomputation
  double mfu = 0;                      // model FLOP/s / dense peak
  double memory_gib_per_gpu = 0;
  bool fits = true;
  bool pruned = false;  // EstimateRequest::prune_above: not estimated
  std::string reason;  // why it does not fit; empty when it fits
  TimeBreakdown breakdown;
  MemoryBreakdown memory;
  ParallelPlan plan;
  std::string framework;  // the framework whose mechanisms were modelled
};

// Whether attention runs as one fused (FlashAttention-style) kernel: the
// framework has it, the GPU supports it (sm_80+) and activations are 16-bit.
// Then no s x s tensor is stored and selective recompute has nothing to drop.
bool UsesFusedAttention(const GpuSpec& gpu, Precision precision, const FrameworkProfile& framework);

// Checks a plan against the model, GPU count and batch. InvalidArgument
// names the rule broken ("d*t*p = 2*4*2 = 16 != --gpus 8").
Status ValidatePlan(const EstimateRequest& req);

// What estimates share: the per-layer (and per-block) costs, which depend
// on the plan only through t, the micro-batch, recompute, expert
// parallelism, precision and the framework (d too, for a CNN whose
// framework synchronises BatchNorm), not on p, the interleaving or ZeRO,
// and on the GPU count only through the GPUs per node it uses. A search
// keeps one memo for its candidates (SearchPlans); a caller searching the
// same models again and again may keep one across searches
// (PlanRequest::memo). Entries are found by the addresses of the
// estimator's parameters, the model, the GPU and the framework: those must
// outlive the memo. Not thread-safe: one memo per thread.
class EstimateMemo {
 public:
  EstimateMemo();
  ~EstimateMemo();
  EstimateMemo(const EstimateMemo&) = delete;
  EstimateMemo& operator=(const EstimateMemo&) = delete;

 private:
  friend class Estimator;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Estimator {
 public:
  explicit Estimator(const PerfParams& params = DefaultPerfParams()) : params_(params) {}

  // Validates, then estimates. Not fitting in memory is a normal result
  // (fits = false, reason set), not an error.
  Result<Estimate> Run(const EstimateRequest& req) const;
  // Estimates a plan already known to be valid (the planner's hot path).
  Estimate RunUnchecked(const EstimateRequest& req) const;

  const PerfParams& params() const { return params_; }

 private:
  const PerfParams& params_;
};

}  // namespace tessel
