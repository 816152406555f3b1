// Memory model of one GPU: parameter, gradient and optimizer state (with
// ZeRO sharding) and activations (Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models", section 4).
#pragma once

#include "model/model.h"
#include "perf/parallel_plan.h"

namespace tessel {

// Bytes of activations one transformer layer keeps for the backward pass,
// per micro-batch of `micro_batch` sequences, on one of `tp` ranks (with
// sequence parallelism when tp > 1). With 2-byte activations, no recompute
// and unfused attention this is Korthikanti's
//   s*b*h*(34 + 5*a*s/h) / t.
// `fused_attention`: FlashAttention keeps no s x s tensors.
double TransformerLayerActivationBytes(const TransformerShape& s, int micro_batch, int tp,
                                       Recompute recompute, Precision precision,
                                       bool fused_attention, bool moe);

// Bytes per parameter of weights, gradients and optimizer state (Adam) for
// a precision, before ZeRO sharding: mixed precision 2 + 2 + 12 (fp32
// master, m, v; Rajbhandari et al. 2020), fp32 4 + 4 + 8.
struct StateBytesPerParam {
  double weights, gradients, optimizer;
};
StateBytesPerParam StateBytes(Precision p);

// Micro-batches whose activations the busiest (first) stage holds at once
// under 1F1B; interleaving adds (p-1)/(p*v) (Korthikanti eq. 5).
double InFlightMicroBatches(int pp, int num_micro_batches, int virtual_stages);

}  // namespace tessel
