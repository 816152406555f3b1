#include "perf/layer_costs.h"

#include <cmath>

#include "model/flops.h"

namespace tessel::layer_costs {

namespace {

// The host issues kernels one after another; when a layer's kernels are
// shorter than their launch cost the GPU waits (small models, eager
// frameworks). Returns the layer's effective time.
double HostBound(const Ctx& c, double gpu_s, double kernels) {
  double host_s = (kernels * c.fw.launch_us + c.fw.layer_overhead_us) * 1e-6;
  return std::max(gpu_s, host_s);
}

GroupShape TpGroup(const Ctx& c) {
  return {c.plan.tp, std::min(c.plan.tp, c.topo.gpus_per_node), std::max(1, c.gpn / c.plan.tp)};
}

// --- transformers ---

LayerCost TransformerLayer(const Ctx& c, bool moe) {
  const TransformerShape& s = c.req.model->tf;
  const ParallelPlan& p = c.plan;
  const double t = p.tp;
  const double e = c.cm.elem_bytes();
  const double tokens = static_cast<double>(p.micro_batch) * s.seq_len;
  const double h = s.hidden, f = s.ffn_hidden, dh = s.HeadDim();
  const double kv = static_cast<double>(s.kv_heads) * dh;
  const double heads_local = s.heads / t;
  const bool fused = c.act.fused_attention;
  const double ffn_mats = s.gated_ffn ? 3.0 : 2.0;
  const bool dropout = c.act.dropout;
  const bool fused_ew = c.fw.fused_elementwise;
  LayerCost lc;

  // Forward GEMMs.
  double qkv = c.cm.LinearGemm(tokens, (h + 2 * kv) / t, h);
  double proj = c.cm.LinearGemm(tokens, h, h / t);
  double attn_fwd, attn_bwd, attn_recompute;
  double attn_kernels;  // forward launches of the core attention
  if (fused) {
    attn_fwd = c.cm.FusedAttentionForward(p.micro_batch * heads_local, s.seq_len, dh, s.causal);
    attn_bwd = ComputeModel::kFusedAttentionBackwardRatio * attn_fwd;
    attn_recompute = 0;         // FlashAttention already recomputes
    attn_kernels = 1;
  } else {
    double bh = p.micro_batch * heads_local;
    double score_gemms = c.cm.Gemm(s.seq_len, s.seq_len, dh, bh) + c.cm.Gemm(s.seq_len, dh, s.seq_len, bh);
    // scale+mask+softmax (fused: read, write), dropout (read, write, mask).
    double per_score = 2 * e + (dropout ? 2 * e + 1 : 0);
    double score_bytes = bh * s.seq_len * static_cast<double>(s.seq_len) * per_score;
    attn_kernels = 2 + (dropout ? 2 : 1) + (fused_ew ? 0 : 1);  // eager: mask and softmax apart
    double softmax = c.cm.Elementwise(score_bytes * (fused_ew ? 1.0 : 1.5), attn_kernels - 2);
    attn_fwd = score_gemms + softmax;
    attn_bwd = 2 * score_gemms + 1.5 * softmax;
    attn_recompute = p.recompute == Recompute::kSelective && !c.act.op_level_selective ? attn_fwd : 0;
  }
  double ffn;
  double routed_tokens = tokens;
  if (moe) {
    double experts_local = static_cast<double>(s.experts) / p.ep;
    routed_tokens = tokens * s.top_k;
    double rows_per_expert = routed_tokens / experts_local;
    ffn = c.cm.LinearGemm(rows_per_expert, (ffn_mats - 1) * f / t, h, experts_local) +
          c.cm.LinearGemm(rows_per_expert, h, f / t, experts_local) + c.cm.Gemm(tokens, s.experts, h);
    if (c.fw.moe_dense_dispatch_group > 0) {
      // GShard's dispatch and combine as dense einsums over one-hot masks
      // [G, S, E, C] (Lepikhin et al. 2020): per group of S tokens,
      // E*C x S @ S x h and S x E*C @ E*C x h, capacity C = top_k * S / E.
      // Each GPU dispatches its own groups to all E experts' slots (the
      // einsum runs before the all-to-all hands the experts their slots).
      double group = std::min<double>(c.fw.moe_dense_dispatch_group, tokens);
      double capacity = s.top_k * group / s.experts;
      double slots = s.experts * capacity;
      double groups = tokens / group;
      ffn += c.cm.Gemm(slots, h / t, group, groups) + c.cm.Gemm(group, h / t, slots, groups);
    }
    ffn /= c.fw.moe_gemm_efficiency;  // the routed GEMMs' own efficiency (FrameworkProfile)
  } else {
    ffn = c.cm.LinearGemm(tokens, (ffn_mats - 1) * f / t, h) + c.cm.LinearGemm(tokens, h, f / t);
  }
  // Memory-bound kernels on the sequence-parallel shard (token-wise) and the
  // tensor-parallel shard (FFN activation). Per token and pass:
  //  - two LayerNorms: read + write;
  //  - two residual adds with the bias and dropout: fused (Megatron
  //    bias-dropout-add) read 2, write 1 (+ mask); eager: the dropout and the
  //    add are separate kernels, each reading and writing;
  //  - the activation: GeLU read + write; SwiGLU reads gate and up, writes
  //    one (fused) or runs SiLU and the product apart (eager).
  double sp = t;  // sequence parallelism splits token-wise ops when t > 1
  double residual = dropout ? (fused_ew ? 3 * e + 1 : 2 * e + 1 + 3 * e) : 3 * e;
  double act = s.gated_ffn ? (fused_ew ? 3 * e : 5 * e) : 2 * e;
  double ew_bytes = tokens * h / sp * (2 * 2 * e + 2 * residual) + routed_tokens * f / t * act;
  // Launches: 2 LayerNorms, 2 residual paths, the activation; eager adds the
  // dropouts and the q/k/v layout copies. An eager Llama layer written as
  // Hugging Face writes it launches far more, counted per layer
  // (scripts/count-eager-ops.py, aten operators that are not views, with
  // SDPA for the core attention and the bf16 casts of the fp32 RMSNorm):
  // forward 33 elementwise kernels (RMSNorm's upcast, pow, mean, add,
  // rsqrt, multiplies and downcast twice; rotary's negations, concatenations,
  // multiplies and adds for q and k; repeat_kv's and the output's layout
  // copies; SiLU, the product, two residual adds) beside 7 GEMMs (q, k, v,
  // o, gate, up, down); backward 59 beside 14.
  // The host issues each of them (HostBound); their GPU time is the
  // traffic below (eager_elementwise_traffic counts the same passes).
  const bool hf_eager = !fused_ew && s.gated_ffn;
  double ew_kernels = 5 + (fused_ew ? 0 : (dropout ? 2 : 0) + (s.gated_ffn ? 1 : 0) + 3);
  double fwd_ew_launches = hf_eager ? 33 : ew_kernels;
  double bwd_ew_launches = hf_eager ? 59 : 2 * ew_kernels;
  if (!fused_ew) {
    // The eager chains are the Llama family's (RMSNorm, rotary, SwiGLU);
    // nn.LayerNorm and F.gelu are single kernels even in eager PyTorch.
    if (s.gated_ffn) ew_bytes *= c.fw.eager_elementwise_traffic;
    ew_bytes += tokens * (h + 2 * kv) / t * 2 * e;  // q, k, v made contiguous per head
  }
  double ew = c.cm.Elementwise(ew_bytes, ew_kernels);
  // FP8 linear layers quantize their inputs in forward (QKV and FC1 read
  // the gathered LayerNorm output, the projection and FC2 their shards) and
  // their output gradients in backward (Transformer Engine's cast + amax
  // kernels; weights' FP8 copies are cached across micro-batches).
  double fp8_fwd = c.cm.Fp8Cast(tokens * h + tokens * h / t + routed_tokens * (h + f / t), 4);
  double fp8_bwd = c.cm.Fp8Cast(tokens * (h + 2 * kv) / t + tokens * h +
                                    routed_tokens * ((ffn_mats - 1) * f / t + h), 4);
  ew += fp8_fwd;
  double gemm_fwd = qkv + proj + ffn;
  double gemm_kernels = (hf_eager ? 7 : 4) + (moe ? 1 : 0);
  double fwd_kernels = gemm_kernels + attn_kernels + fwd_ew_launches;
  // Backward: data and weight gradients per GEMM, the attention backward,
  // about twice the elementwise launches.
  double bwd_kernels = 2 * gemm_kernels + 2 * attn_kernels + bwd_ew_launches;
  lc.fwd_s = HostBound(c, gemm_fwd + attn_fwd + ew, fwd_kernels);
  lc.bwd_s = HostBound(c, 2 * gemm_fwd + attn_bwd + 2 * (ew - fp8_fwd) + fp8_bwd, bwd_kernels);
  if (p.recompute == Recompute::kFull) lc.recompute_s = lc.fwd_s;
  else if (p.recompute == Recompute::kSelective && c.act.op_level_selective)
    lc.recompute_s = HostBound(c, gemm_fwd / 2 + ew, gemm_kernels / 2 + fwd_ew_launches);  // every other matmul
  else lc.recompute_s = attn_recompute;

  // Tensor parallel: per layer 2 all-gathers + 2 reduce-scatters (sequence
  // parallel; the same bytes as 2 all-reduces) forward, and again backward.
  if (p.tp > 1) {
    double bytes = tokens * h * e;
    GroupShape g = TpGroup(c);
    double pair = c.coll.Time(Collective::kAllGather, bytes, g) +
                  c.coll.Time(Collective::kReduceScatter, bytes, g);
    lc.tp_fwd_s = 2 * pair;
    lc.tp_bwd_s = 2 * pair + (p.recompute == Recompute::kFull ? 2 * pair : 0);
    if (c.fw.tp_comm_overlap) {  // pipelined with the GEMMs beside them
      double f_ov = c.params.tp_overlap_fraction;
      lc.tp_fwd_s -= std::min(f_ov * lc.tp_fwd_s, gemm_fwd);
      lc.tp_bwd_s -= std::min(f_ov * lc.tp_bwd_s, 2 * gemm_fwd);
    }
  }
  if (moe && p.ep > 1) {
    double bytes = routed_tokens * h * e;
    GroupShape g = StridedGroup(c, p.ep, p.tp);
    lc.ep_s = 4 * c.coll.Time(Collective::kAllToAll, bytes, g) *
              (p.recompute == Recompute::kFull ? 1.5 : 1.0);
  }

  // Parameters on this GPU.
  double attn_params = h * (h + 2 * kv) + h * h + 3 * h + 2 * kv;
  double ffn_params = ffn_mats * h * f + f + h;
  lc.params = attn_params / t + 4 * h;
  lc.params += moe ? (s.experts / static_cast<double>(p.ep)) * ffn_params / t + h * s.experts
                   : ffn_params / t;

  ActivationOptions ao = c.act;
  ao.moe = moe;
  lc.act_bytes = TransformerLayerActivationBytes(s, p.micro_batch, p.tp, ao);
  ao.recompute = Recompute::kNone;
  // Recomputing a layer materialises its activations again, one layer at a
  // time (Megatron's selective recompute only the attention's, kept small).
  bool rebuilds_layer = p.recompute == Recompute::kFull ||
                        (p.recompute == Recompute::kSelective && c.act.op_level_selective);
  lc.work_bytes = rebuilds_layer ? TransformerLayerActivationBytes(s, p.micro_batch, p.tp, ao) : 0;
  double layer_flops = TransformerLayerForwardFlopsPerToken(s, moe) * tokens / t;
  double re = p.recompute == Recompute::kFull ? 1.0
              : (p.recompute == Recompute::kSelective && c.act.op_level_selective) ? 0.5
              : (p.recompute == Recompute::kSelective || fused)
                  ? 4.0 * s.seq_len * h / TransformerLayerForwardFlopsPerToken(s, moe)
                  : 0.0;
  lc.hw_flops = layer_flops * (3.0 + re);
  return lc;
}

// The vocabulary as the framework builds its layers: padded to a multiple of
// vocab_pad_multiple x t (Megatron), else as the tokenizer gives it.
double PaddedVocab(const Ctx& c) {
  const double v = c.req.model->tf.vocab, m = static_cast<double>(c.fw.vocab_pad_multiple) * c.plan.tp;
  return c.fw.vocab_pad_multiple > 1 ? std::ceil(v / m) * m : v;
}

// Input embedding (first stage) and output layer + loss (last stage).
LayerCost EmbeddingCost(const Ctx& c) {
  const TransformerShape& s = c.req.model->tf;
  const double tokens = static_cast<double>(c.plan.micro_batch) * s.seq_len;
  const double t = c.plan.tp;
  LayerCost lc;
  lc.fwd_s = c.cm.Elementwise(tokens * s.hidden * c.cm.elem_bytes() * 2 / t, 2);
  lc.bwd_s = lc.fwd_s;
  lc.params = PaddedVocab(c) * s.hidden / t;
  lc.act_bytes = c.act.dropout ? tokens * s.hidden / t : 0;  // dropout mask
  return lc;
}

LayerCost HeadCost(const Ctx& c) {
  const TransformerShape& s = c.req.model->tf;
  const double tokens = static_cast<double>(c.plan.micro_batch) * s.seq_len;
  const double t = c.plan.tp;
  LayerCost lc;
  const double v = PaddedVocab(c) / t;  // the vocabulary shard
  double logits = c.cm.Gemm(tokens, v, s.hidden);
  // fp32 cross-entropy over the shard (FrameworkProfile::loss_traffic_bytes).
  double ce = c.cm.Elementwise(tokens * v * c.fw.loss_traffic_bytes / 2, 3);
  lc.fwd_s = logits + ce;
  lc.bwd_s = 2 * logits + ce;
  if (c.plan.tp > 1) {
    double bytes = tokens * s.hidden * c.cm.elem_bytes();
    lc.tp_fwd_s = c.coll.Time(Collective::kAllGather, bytes, TpGroup(c));
    lc.tp_bwd_s = c.coll.Time(Collective::kReduceScatter, bytes, TpGroup(c));
  }
  lc.params = (s.tied_embeddings ? 0.0 : v * s.hidden) + 2 * s.hidden;
  // Kept: the final LayerNorm's input and output and, unless the loss is
  // chunked, the fp32 softmax of the vocabulary shard; transient: what the
  // loss's backward allocates beside it (loss_backward_bytes per logit).
  lc.act_bytes = tokens * (2 * s.hidden * c.cm.elem_bytes() / t + (c.fw.chunked_loss ? 0.0 : 4.0 * v));
  lc.work_bytes = c.fw.chunked_loss ? 0.0 : tokens * v * c.fw.loss_backward_bytes;
  lc.hw_flops = 3 * 2.0 * tokens * s.hidden * v;
  return lc;
}

// --- CNNs ---

LayerCost CnnBlockCost(const Ctx& c, const CnnBlock& b) {
  const ParallelPlan& p = c.plan;
  const double t = p.tp;
  const double e = c.cm.elem_bytes();
  const double mb = p.micro_batch;
  LayerCost lc;
  double out_bytes = 0, flops = 0;
  // Channels-first activations under tensor-core convolutions
  // (CnnShape::channels_first): each convolution's input is transposed to
  // NHWC and its output back, a read and a write of each, and the backward
  // pass (data and weight gradients) transposes twice as much. A block's
  // convolutions read its input (the first and the projection) or the
  // previous convolution's output, whole (channel-parallel convolutions
  // gather it), and write their channel shard.
  const bool transposes = c.req.model->cnn.channels_first && c.plan.precision != Precision::kFp32;
  for (size_t j = 0; j < b.convs.size(); ++j) {
    const ConvOp& op = b.convs[j];
    double m = mb * op.out_hw, n = op.cout / t, k = op.cin * op.kernel * op.kernel;
    double gemm = c.cm.ConvGemm(m, n, k, ComputeModel::WinogradShape(op.kernel, op.kernel, op.stride, op.cin));
    if (transposes) {
      const bool reads_block_input = j == 0 || op.cin != b.convs[j - 1].cout;  // first, or projection
      const ConvOp& src = reads_block_input ? b.convs[0] : b.convs[j - 1];
      double in = mb * src.out_hw * (reads_block_input ? src.cin : src.cout);
      gemm += c.cm.Elementwise(2 * (in + m * n) * e, 2);
    }
    // BN statistics + normalise + ReLU: ~5 passes over the output.
    double ew = op.batch_norm ? c.cm.Elementwise(5 * m * n * e, 3) : 0.0;
    lc.fwd_s += gemm + ew;
    lc.bwd_s += 2 * gemm + 2 * ew;
    lc.params += op.Params() / t;
    lc.act_bytes += m * n * e * (op.batch_norm ? 2.0 : 1.0);  // conv out, BN out (ReLU in place)
    out_bytes = m * op.cout * e;
    flops += 2.0 * m * n * k;
  }
  lc.hw_flops = 3 * flops;
  lc.out_bytes = out_bytes;
  // Global BatchNorm: the statistics' all-reduces (fp32 sums per channel)
  // are latency-bound, on the critical path.
  double bn_sync = 0;
  if (c.fw.global_batch_norm && p.dp > 1) {
    GroupShape g = StridedGroup(c, p.dp, p.tp);
    for (const ConvOp& op : b.convs)
      if (op.batch_norm) bn_sync += 2 * c.coll.Time(Collective::kAllReduce, 4.0 * op.cout / t, g);
  }
  lc.fwd_s += bn_sync;
  lc.bwd_s += bn_sync;
  if (p.recompute == Recompute::kFull) {
    lc.work_bytes = lc.act_bytes;
    lc.act_bytes = out_bytes / t;
    lc.recompute_s = lc.fwd_s;
    lc.hw_flops += flops;
  }
  if (p.tp > 1) {
    // Channel-parallel (each GPU computes 1/t of every conv's output
    // channels): every conv needs its whole input, so each gathers its
    // input's channels forward and reduce-scatters the input's gradient
    // backward (the partial sums over its output-channel shard).
    for (const ConvOp& op : b.convs) {
      double in_bytes = mb * op.out_hw * op.cin * e;  // the input at the output's resolution
      lc.tp_fwd_s += c.coll.Time(Collective::kAllGather, in_bytes, TpGroup(c));
      lc.tp_bwd_s += c.coll.Time(Collective::kReduceScatter, in_bytes, TpGroup(c));
    }
  }
  return lc;
}

}  // namespace

std::vector<LayerCost> PartitionCnn(const std::vector<LayerCost>& blocks, double total_s, int pp) {
  std::vector<LayerCost> stages(pp);
  int stage = 0;
  double acc = 0;
  int remaining_blocks = static_cast<int>(blocks.size());
  for (const auto& b : blocks) {
    int remaining_stages = pp - stage;
    bool must_advance = remaining_blocks <= remaining_stages - 1;
    if (stage < pp - 1 && acc > 0 && (must_advance || acc + b.Time() / 2 > total_s * (stage + 1) / pp)) {
      ++stage;
    }
    stages[stage].Add(b, 1);
    acc += b.Time();
    --remaining_blocks;
  }
  return stages;
}

LayerSet ComputeLayers(const Ctx& c) {
  LayerSet ls;
  const ModelSpec& m = *c.req.model;
  if (m.kind == ModelKind::kTransformer) {
    ls.dense = TransformerLayer(c, false);
    if (m.tf.IsMoe()) ls.moe = TransformerLayer(c, true);
    ls.embedding = EmbeddingCost(c);
    ls.head = HeadCost(c);
    const double moe_frac = m.tf.IsMoe() ? static_cast<double>(m.tf.MoeLayers()) / m.tf.layers : 0.0;
    ls.total_s = m.tf.layers * (ls.dense.Time() * (1 - moe_frac) + ls.moe.Time() * moe_frac) + ls.embedding.Time() +
                 ls.head.Time();
  } else {
    ls.blocks.reserve(m.cnn.blocks.size());
    for (const auto& b : m.cnn.blocks) {
      ls.blocks.push_back(CnnBlockCost(c, b));
      ls.total_s += ls.blocks.back().Time();
    }
  }
  return ls;
}

}  // namespace tessel::layer_costs
