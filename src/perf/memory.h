// Memory model of one GPU: parameter, gradient and optimizer state (with
// ZeRO sharding) and activations (Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models", section 4),
// refined per framework and attention kernel and checked against bytes
// measured with PyTorch (scripts/measure-activations.py,
// data/measured/activation-bytes-cpu.csv; memory_test.cc).
#pragma once

#include "model/model.h"
#include "perf/parallel_plan.h"

namespace tessel {

// What decides which tensors a layer keeps for its backward pass.
struct ActivationOptions {
  Precision precision = Precision::kBf16;
  // FlashAttention semantics: no s x s tensor is kept; q, k, v, the output
  // and an fp32 log-sum-exp per head and token are.
  bool fused_attention = false;
  // Dropout runs (1-byte masks kept); recipes without dropout skip the op.
  bool dropout = true;
  Recompute recompute = Recompute::kNone;
  // Selective recompute at op level (PyTorch selective activation
  // checkpointing) rather than Megatron's core-attention recompute.
  bool op_level_selective = false;
  bool moe = false;
  // FP8 linear layers save their inputs for backward as the FP8 tensors
  // their GEMMs consumed (Transformer Engine's Linear/LayerNormLinear,
  // torchao's Float8Linear): the LayerNorm outputs, the attention output
  // and FC2's input take 1 byte per value instead of 2.
  bool fp8_linear_inputs = false;
  // Automatic mixed precision over fp32 weights (torch.autocast): the
  // embedding's output and so the residual stream are fp32, and the two
  // LayerNorms keep their fp32 inputs (4 bytes per value, not e).
  bool fp32_residual = false;
  // The attention kernel keeps its output in its own layout and the
  // projection a contiguous copy ([b, heads, s, d] -> [b, s, h]: eager
  // PyTorch's transpose + reshape), e bytes per value more.
  bool attention_output_copy = false;
};

// Bytes of activations one transformer layer keeps for the backward pass,
// per micro-batch of `micro_batch` sequences, on one of `tp` ranks (with
// sequence parallelism when tp > 1). Per token, with e-byte activations,
// hidden h, FFN f, key/value width kv, a heads, sequence s:
//   LayerNorm inputs and outputs 4eh (+ 16 B of fp32 mean/rstd),
//   QKV output e(h + 2kv), attention output eh,
//   unfused attention: softmax output e*a*s, with dropout + (1 + e)*a*s
//     (and GQA's K, V expanded to a heads: 2e(h - kv));
//   fused attention: the fp32 log-sum-exp 4a,
//   MLP: GeLU 2ef, SwiGLU 4ef; dropout masks 2h;
//   with FP8 linear layers the LayerNorm outputs, the attention output and
//   FC2's input (the linear layers' inputs) at 1 byte.
// Megatron's GPT (gelu, f = 4h, MHA, dropout, unfused, e = 2) gives
// Korthikanti's 34sbh + 5as^2b. Full recompute keeps the layer input eh;
// Megatron's selective recompute drops the core attention's own tensors; op-level selective
// keeps the layer input, the attention output and every other matmul output.
double TransformerLayerActivationBytes(const TransformerShape& s, int micro_batch, int tp,
                                       const ActivationOptions& o);

// Bytes per parameter of weights, gradients and optimizer state (Adam) for
// a precision, before ZeRO sharding: mixed precision 2 + 2 + 12 (fp32
// master, m, v; Rajbhandari et al. 2020), fp32 4 + 4 + 8.
struct StateBytesPerParam {
  double weights, gradients, optimizer;
};
StateBytesPerParam StateBytes(Precision p, Optimizer o = Optimizer::kAdam);

// Micro-batches whose activations the busiest (first) stage holds at once
// under 1F1B; interleaving adds (p-1)/(p*v) (Korthikanti eq. 5).
double InFlightMicroBatches(int pp, int num_micro_batches, int virtual_stages);

}  // namespace tessel
