#include "model/flops.h"

namespace tessel {

double TransformerLayerForwardFlopsPerToken(const TransformerShape& s, bool moe) {
  double h = s.hidden;
  double kv_dim = static_cast<double>(s.kv_heads) * s.HeadDim();
  double qkv = 2 * h * (h + 2 * kv_dim);
  double proj = 2 * h * h;
  double attn = 2 * 2 * static_cast<double>(s.seq_len) * h;  // QK^T and AV
  double ffn_mats = s.gated_ffn ? 3.0 : 2.0;
  double ffn = 2 * ffn_mats * h * s.ffn_hidden;
  if (moe) ffn = ffn * s.top_k + 2 * h * s.experts;  // + router
  return qkv + proj + attn + ffn;
}

double ForwardFlopsPerSample(const ModelSpec& m) {
  if (m.kind == ModelKind::kCnn) {
    double f = 0;
    for (const auto& b : m.cnn.blocks)
      for (const auto& c : b.convs) f += c.FlopsPerSample();
    return f;
  }
  const auto& s = m.tf;
  double per_token = s.DenseLayers() * TransformerLayerForwardFlopsPerToken(s, false) +
                     s.MoeLayers() * TransformerLayerForwardFlopsPerToken(s, true) +
                     2.0 * s.hidden * s.vocab;  // logits
  return per_token * s.seq_len;
}

double ModelFlopsPerSample(const ModelSpec& m) { return 3.0 * ForwardFlopsPerSample(m); }

double MegatronFlopsPerIteration(double batch, double seq, double layers, double hidden,
                                 double vocab, bool full_recompute) {
  double k = full_recompute ? 96.0 : 72.0;
  double c = full_recompute ? 16.0 : 12.0;
  return k * batch * seq * layers * hidden * hidden *
         (1.0 + seq / (6.0 * hidden) + vocab / (c * layers * hidden));
}

}  // namespace tessel
