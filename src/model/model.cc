#include "model/model.h"

namespace tessel {

Result<Optimizer> ParseOptimizer(std::string_view s) {
  if (s == "adam" || s == "adamw") return Optimizer::kAdam;
  if (s == "adafactor") return Optimizer::kAdafactor;
  if (s == "sgd-momentum" || s == "sgd") return Optimizer::kSgdMomentum;
  return InvalidArgument("unknown optimizer '" + std::string(s) + "'; known: adam (adamw), adafactor, sgd-momentum (sgd)");
}

std::optional<bool> ChannelsFirstFromName(std::string_view s) {
  if (s == "nchw" || s == "channels_first") return true;
  if (s == "nhwc" || s == "channels_last") return false;
  return std::nullopt;
}

double ConvOp::Params() const {
  return static_cast<double>(cin) * cout * kernel * kernel + (batch_norm ? 2.0 * cout : cout);
}

double ConvOp::FlopsPerSample() const {
  return 2.0 * static_cast<double>(out_hw) * cout * cin * kernel * kernel;
}

namespace {

double TransformerLayerParams(const TransformerShape& s, bool moe) {
  double h = s.hidden;
  double kv_dim = static_cast<double>(s.kv_heads) * s.HeadDim();
  double attn = h * (h + 2 * kv_dim) + h * h + 3 * h + 2 * kv_dim;  // QKV, proj, biases
  double ffn_mats = s.gated_ffn ? 3.0 : 2.0;
  double ffn = ffn_mats * h * s.ffn_hidden + s.ffn_hidden + h;
  double norms = 4 * h;
  if (moe) return attn + norms + s.experts * ffn + h * s.experts;  // + router
  return attn + norms + ffn;
}

double EmbeddingParams(const TransformerShape& s) {
  double emb = static_cast<double>(s.vocab) * s.hidden;
  return (s.tied_embeddings ? emb : 2 * emb) + 2.0 * s.hidden;  // + final norm
}

}  // namespace

double ModelSpec::Params() const {
  if (kind == ModelKind::kCnn) {
    double p = 0;
    for (const auto& b : cnn.blocks)
      for (const auto& c : b.convs) p += c.Params();
    return p;
  }
  return tf.DenseLayers() * TransformerLayerParams(tf, false) +
         tf.MoeLayers() * TransformerLayerParams(tf, true) + EmbeddingParams(tf);
}

double ModelSpec::ActiveParams() const {
  if (kind == ModelKind::kCnn || !tf.IsMoe()) return Params();
  TransformerShape active = tf;
  active.experts = tf.top_k;
  return tf.DenseLayers() * TransformerLayerParams(tf, false) +
         tf.MoeLayers() * TransformerLayerParams(active, true) + EmbeddingParams(tf);
}

double ModelSpec::TokensPerSample() const {
  return kind == ModelKind::kTransformer ? tf.seq_len : 1.0;
}

int ModelSpec::NumLayers() const {
  return kind == ModelKind::kTransformer ? tf.layers : static_cast<int>(cnn.blocks.size());
}

Status ValidateModel(const ModelSpec& m) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgument("model '" + m.name + "': " + field + ": " + why);
  };
  if (m.kind == ModelKind::kCnn) {
    if (m.cnn.blocks.empty()) return bad("blocks", "a CNN needs at least one block");
    return Status::Ok();
  }
  const auto& s = m.tf;
  for (auto [field, v] : {std::pair{"layers", s.layers}, {"hidden", s.hidden}, {"heads", s.heads},
                          {"kv-heads", s.kv_heads}, {"ffn-hidden", s.ffn_hidden}, {"vocab", s.vocab},
                          {"seq-len", s.seq_len}, {"experts", s.experts}, {"top-k", s.top_k},
                          {"moe-every", s.moe_every}}) {
    if (v > kMaxModelDim) return bad(field, "at most " + std::to_string(kMaxModelDim) + ", got " + std::to_string(v));
  }
  if (s.layers <= 0) return bad("layers", "must be a positive integer");
  if (s.hidden <= 0) return bad("hidden", "must be a positive integer");
  if (s.heads <= 0) return bad("heads", "must be a positive integer");
  if (s.hidden % s.heads != 0)
    return bad("heads", "hidden (" + std::to_string(s.hidden) + ") must be divisible by heads (" +
                            std::to_string(s.heads) + ")");
  if (s.kv_heads <= 0 || s.kv_heads > s.heads || s.heads % s.kv_heads != 0)
    return bad("kv-heads", "must divide heads (" + std::to_string(s.heads) + ")");
  if (s.ffn_hidden <= 0) return bad("ffn-hidden", "must be a positive integer");
  if (s.vocab <= 0) return bad("vocab", "must be a positive integer");
  if (s.seq_len <= 0) return bad("seq-len", "must be a positive integer");
  if (s.experts < 0) return bad("experts", "must be >= 0");
  if (s.experts > 0) {
    if (s.top_k <= 0 || s.top_k > s.experts)
      return bad("top-k", "must be between 1 and experts (" + std::to_string(s.experts) + ")");
    if (s.moe_every <= 0 || s.moe_every > s.layers)
      return bad("moe-every", "must be between 1 and layers");
  }
  return Status::Ok();
}

}  // namespace tessel
