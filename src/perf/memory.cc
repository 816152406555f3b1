#include "perf/memory.h"

#include <algorithm>

namespace tessel {

double TransformerLayerActivationBytes(const TransformerShape& s, int micro_batch, int tp,
                                       Recompute recompute, Precision precision,
                                       bool fused_attention, bool moe) {
  const double e = ActivationBytes(precision);
  const double t = tp;
  const double tokens = static_cast<double>(micro_batch) * s.seq_len;  // s*b
  const double h = s.hidden;
  const double kv = static_cast<double>(s.kv_heads) * s.HeadDim();
  if (recompute == Recompute::kFull) return e * tokens * h / t;  // the layer's input only
  // Attention block (Korthikanti: 11sbh + 5as^2b at e = 2): QKV input,
  // Q, K, V, projection input, dropout mask.
  double attn = e * tokens * (h + h + kv + kv + h) + tokens * h;
  // s x s tensors: softmax output, dropout mask, dropout output.
  double scores = (2 * e + 1) * static_cast<double>(s.heads) * s.seq_len * tokens;
  if (fused_attention || recompute == Recompute::kSelective) scores = 0;
  // MLP (19sbh at e = 2, f = 4h): FFN input, activation input and output,
  // dropout mask. Routed tokens count top_k times in an MoE layer.
  double ffn_tensors = s.gated_ffn ? 3.0 : 2.0;
  double routed = moe ? s.top_k : 1.0;
  double mlp = routed * (e * tokens * h + ffn_tensors * e * tokens * s.ffn_hidden) + tokens * h;
  // Two layer norms' inputs.
  double ln = 2 * e * tokens * h;
  return (attn + scores + mlp + ln) / t;
}

StateBytesPerParam StateBytes(Precision p) {
  if (p == Precision::kFp32 || p == Precision::kTf32) return {4, 4, 8};
  return {2, 2, 12};
}

double InFlightMicroBatches(int pp, int num_micro_batches, int virtual_stages) {
  double in_flight = std::min(pp, num_micro_batches);
  if (virtual_stages > 1 && pp > 1)
    in_flight *= 1.0 + static_cast<double>(pp - 1) / (static_cast<double>(pp) * virtual_stages);
  return in_flight;
}

}  // namespace tessel
