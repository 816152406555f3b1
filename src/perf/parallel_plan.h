// A parallelism plan: how one training job is laid over its GPUs.
// Rank order is Megatron's: tensor-parallel ranks fastest (inside a node),
// then data-parallel, then pipeline stages.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "hardware/gpu.h"

namespace tessel {

enum class Recompute { kNone, kSelective, kFull };
const char* RecomputeName(Recompute r);
Result<Recompute> ParseRecompute(std::string_view s);

struct ParallelPlan {
  int dp = 1;                // data-parallel replicas (d)
  int tp = 1;                // tensor-parallel ranks (t), with sequence parallelism
  int pp = 1;                // pipeline stages (p)
  int micro_batch = 1;       // samples per micro-batch per replica
  int num_micro_batches = 1; // micro-batches per iteration (gradient accumulation)
  int virtual_stages = 1;    // interleaved 1F1B chunks per stage (1 = plain 1F1B)
  int ep = 1;                // expert-parallel ranks (MoE), within the dp group
  Recompute recompute = Recompute::kNone;
  int zero = 0;              // 0: none, 1: optimizer, 2: +gradients, 3: +weights (FSDP)
  Precision precision = Precision::kBf16;

  int Gpus() const { return dp * tp * pp; }
  // "d4 t2 p2 mb2x16 sel z1 bf16"
  std::string ToString() const;
  bool operator==(const ParallelPlan&) const = default;
};

}  // namespace tessel
