// Per-layer costs of a plan (the estimator's first step, perf/estimator.h):
// one transformer layer (dense or MoE), the embedding and the head, or each
// block of a CNN, for one micro-batch on one GPU, with the tensor- and
// expert-parallel collectives inside them; and a CNN's split into pipeline
// stages of balanced time. Internal to src/perf (estimator.cc and
// EstimateMemo, which keeps layer sets across a search's plans).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "perf/collective.h"
#include "perf/compute.h"
#include "perf/estimator.h"
#include "perf/memory.h"

namespace tessel::layer_costs {

// The cost of one pipeline-able layer (or CNN block) for one micro-batch on
// one GPU.
struct LayerCost {
  double fwd_s = 0;          // forward kernels
  double bwd_s = 0;          // backward kernels
  double recompute_s = 0;    // forward kernels re-run during backward
  double tp_fwd_s = 0;       // tensor-parallel collectives in forward
  double tp_bwd_s = 0;       // ... in backward
  double ep_s = 0;           // MoE all-to-all, forward + backward
  double params = 0;         // parameters held by this GPU
  double act_bytes = 0;      // activations kept for backward (recompute applied)
  double work_bytes = 0;     // transient activations of one layer (full recompute)
  double hw_flops = 0;       // executed FLOPs incl. recompute
  double out_bytes = 0;      // activation this layer/stage hands to the next, per micro-batch
  double Time() const { return fwd_s + bwd_s + recompute_s + tp_fwd_s + tp_bwd_s + ep_s; }
  void Add(const LayerCost& o, double times) {
    fwd_s += times * o.fwd_s;
    bwd_s += times * o.bwd_s;
    recompute_s += times * o.recompute_s;
    tp_fwd_s += times * o.tp_fwd_s;
    tp_bwd_s += times * o.tp_bwd_s;
    ep_s += times * o.ep_s;
    params += times * o.params;
    act_bytes += times * o.act_bytes;
    work_bytes = std::max(work_bytes, o.work_bytes);
    hw_flops += times * o.hw_flops;
    if (o.out_bytes > 0) out_bytes = o.out_bytes;
  }
};

// What a plan's layer costs are computed for.
struct Ctx {
  const EstimateRequest& req;
  const ParallelPlan& plan;
  const Topology& topo;
  const ComputeModel& cm;
  const CollectiveModel& coll;
  const PerfParams& params;
  int gpn;  // GPUs per node actually used by this job
  const FrameworkProfile& fw;
  ActivationOptions act;  // what layers keep for backward (act.fused_attention: UsesFusedAttention)
};

// Ranks of a group that strides over `stride` consecutive ranks.
inline GroupShape StridedGroup(const Ctx& c, int size, int stride) {
  int per_node = std::clamp(c.topo.gpus_per_node / std::max(1, stride), 1, size);
  int concurrent = std::max(1, c.gpn / per_node);
  return {size, per_node, concurrent};
}

// Splits per-layer costs (`total_s`: their times' sum) into p contiguous
// stages with balanced time.
std::vector<LayerCost> PartitionCnn(const std::vector<LayerCost>& blocks, double total_s, int pp);

// The per-layer costs of one plan: a transformer's dense and MoE layers,
// embedding and head, or a CNN's blocks in order.
struct LayerSet {
  LayerCost dense, moe, embedding, head;
  std::vector<LayerCost> blocks;
  // One micro-batch through every layer (summed in order): the stages'
  // times sum to at least this, so the slowest stage takes at least total_s / p.
  double total_s = 0;
  // A CNN's blocks split into p stages (PartitionCnn), kept per p once
  // asked: a search prices many plans of one layer set and p.
  const std::vector<LayerCost>& Stages(int pp) const {
    for (const auto& [q, stages] : partitions)
      if (q == pp) return stages;
    return partitions.emplace_back(pp, PartitionCnn(blocks, total_s, pp)).second;
  }

 private:
  mutable std::vector<std::pair<int, std::vector<LayerCost>>> partitions;
};

LayerSet ComputeLayers(const Ctx& c);

}  // namespace tessel::layer_costs
