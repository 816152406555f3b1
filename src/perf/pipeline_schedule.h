// A pipeline-parallel iteration priced step by step: every forward and
// backward of every micro-batch on every stage (and virtual chunk) placed
// in the order the framework's schedule issues them, each started when its
// stage is free and its input has arrived. Replaces the closed-form bubble
// ((p - 1) / v stage times), which is exact only for equal stages; the
// first and last stages (embedding, output layer, loss) and balanced or
// CNN partitions are not equal.
#pragma once

#include <vector>

namespace tessel {

// One stage's time per micro-batch, all its virtual chunks together,
// communication on the critical path included (tensor-parallel collectives,
// its half of the pipeline sends).
struct PipelineStageTime {
  double fwd_s = 0;
  double bwd_s = 0;  // backward, recompute included
};

// Seconds from the first forward to the last backward of one iteration of
// `micro_batches` micro-batches through `stages.size()` stages, each split
// into `virtual_stages` chunks of equal time. virtual_stages == 1 is 1F1B
// (PipeDream-Flush, Megatron's non-interleaved schedule): stage i runs
// p - i - 1 warm-up forwards, then one forward and one backward in turn,
// then the cool-down backwards. virtual_stages > 1 is Megatron's
// interleaved 1F1B (Narayanan et al. 2021, section 2.2; Megatron-Core's
// get_schedule_table): micro-batches in groups of p, each group's forwards
// chunk by chunk (backwards in reverse chunk order), (p - i - 1) * 2 +
// (v - 1) * p warm-up forwards on stage i. For long iterations, once the
// slowest stage is busy throughout (checked by placing one group more),
// the groups left are added at its pace: the same result as placing every
// micro-batch, and the closed form's where that is exact (equal stages:
// (M + (p - 1) / v) x (f + b) for 1F1B and for interleaving with M a
// multiple of p, which interleaving requires: ValidatePlan). Returns a
// negative value if the order cannot run (a guard for callers).
double PipelineIterationTime(const std::vector<PipelineStageTime>& stages, int micro_batches, int virtual_stages);

// The same without extrapolation (every micro-batch placed): for tests.
double PipelineIterationTimeExact(const std::vector<PipelineStageTime>& stages, int micro_batches,
                                  int virtual_stages);

}  // namespace tessel
