#include "perf/memory.h"

#include <algorithm>

namespace tessel {

double TransformerLayerActivationBytes(const TransformerShape& s, int micro_batch, int tp,
                                       const ActivationOptions& o) {
  const double e = ActivationBytes(o.precision);
  const double t = tp;
  const double tokens = static_cast<double>(micro_batch) * s.seq_len;  // s*b
  const double h = s.hidden;
  const double f = s.ffn_hidden;
  const double kv = static_cast<double>(s.kv_heads) * s.HeadDim();
  const double a = s.heads;
  const double routed = o.moe ? s.top_k : 1.0;
  const double mask = o.dropout ? 1.0 : 0.0;
  // The LayerNorms' saved inputs: the residual stream, fp32 under autocast.
  const double ln_in = o.fp32_residual ? 4.0 : e;
  if (o.recompute == Recompute::kFull) return ln_in * tokens * h / t;  // the layer's input only

  // Per token, on one tensor-parallel rank (sequence parallelism splits the
  // token-wise tensors, tensor parallelism the rest: all of it divides by t).
  const double lin = o.fp8_linear_inputs ? 1.0 : e;  // a linear layer's saved input
  double ln = 2 * ln_in * h + 2 * lin * h + 16;  // two LayerNorms' inputs and outputs (= QKV, FC1 inputs) + mean/rstd
  double qkv = e * (h + 2 * kv);               // the fused QKV projection's output
  double attn_out = lin * h + (o.attention_output_copy ? e * h : 0);  // core attention output (= projection input)
  double scores = 0;
  if (o.fused_attention) {
    scores = 4 * a;                            // fp32 log-sum-exp
  } else {
    scores = (e + mask * (1 + e)) * a * s.seq_len;  // softmax out (+ dropout mask and output)
    scores += 2 * e * (h - kv);                // K, V expanded to every query head (GQA)
  }
  // GeLU: its input and output (= FC2's input); SwiGLU: gate, up, SiLU
  // output and the product (= FC2's input).
  double mlp = routed * ((s.gated_ffn ? 3.0 : 1.0) * e + lin) * f;
  double masks = mask * 2 * h;                 // hidden dropout after attention and MLP

  double per_token = 0;
  if (o.recompute == Recompute::kSelective && o.op_level_selective) {
    // Kept: the checkpoint's input, the attention output (+ lse when fused)
    // and every other matmul output (half of all matmul outputs).
    double matmul_outputs = qkv + e * h + routed * (s.gated_ffn ? 2.0 : 1.0) * e * f + routed * e * h;
    per_token = e * h + attn_out + (o.fused_attention ? 4 * a : 0) + matmul_outputs / 2;
  } else {
    // Megatron's selective recompute re-runs the whole core attention: its
    // scores, GQA's expanded K and V and the log-sum-exp are not kept.
    if (o.recompute == Recompute::kSelective) scores = 0;
    per_token = ln + qkv + attn_out + scores + mlp + masks;
  }
  return tokens * per_token / t;
}

StateBytesPerParam StateBytes(Precision p, Optimizer o) {
  const bool full = p == Precision::kFp32 || p == Precision::kTf32;
  double moments = o == Optimizer::kAdam ? 8 : o == Optimizer::kSgdMomentum ? 4 : 0;
  // Mixed precision keeps an fp32 master copy beside the optimizer's state.
  if (full) return {4, 4, moments};
  return {2, 2, 4 + moments};
}

double InFlightMicroBatches(int pp, int num_micro_batches, int virtual_stages) {
  double in_flight = std::min(pp, num_micro_batches);
  if (virtual_stages > 1 && pp > 1)
    in_flight *= 1.0 + static_cast<double>(pp - 1) / (static_cast<double>(pp) * virtual_stages);
  return in_flight;
}

}  // namespace tessel
