#include "perf/params.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/strings.h"

namespace tessel {

const ArchEfficiency& PerfParams::ForArch(const std::string& arch) const {
  for (const auto& a : archs)
    if (a.arch == arch) return a;
  return fallback;
}

const FrameworkProfile& DefaultFrameworkFor(const PerfParams& params, int tp, int pp, int zero,
                                            int virtual_stages) {
  auto named = [&](const char* name) -> const FrameworkProfile& {
    auto f = params.FindFramework(name);
    return f.ok() ? **f : params.frameworks.front();
  };
  // ZeRO-3 is PyTorch FSDP (composed with tensor and pipeline parallelism as
  // torchtitan does; Megatron-Core's own FSDP must be named), ZeRO-2 without
  // pipelining FSDP's SHARD_GRAD_OP (DeepSpeed's ZeRO-2 beside Megatron's
  // tensor parallelism); ZeRO-1/2 with a pipeline DeepSpeed cannot
  // interleave is Megatron-DeepSpeed.
  if (zero == 3) return named("fsdp");
  if (zero == 2 && pp == 1) return named(tp == 1 ? "fsdp" : "deepspeed");
  if ((zero == 1 || zero == 2) && pp > 1 && virtual_stages <= 1) return named("deepspeed");
  return params.frameworks.front();
}

const LinkFit& PerfParams::ForLink(LinkKind k) const {
  switch (k) {
    case LinkKind::kPcie: return pcie;
    case LinkKind::kNvlinkBridge: return nvlink_bridge;
    case LinkKind::kNvlinkMesh: return nvlink_mesh;
    case LinkKind::kNvswitch: return nvswitch;
  }
  return pcie;
}

Result<const FrameworkProfile*> PerfParams::FindFramework(std::string_view name) const {
  for (const auto& f : frameworks)
    if (f.name == name) return &f;
  std::string known;
  for (const auto& f : frameworks) known += (known.empty() ? "" : ", ") + f.name;
  return NotFound("unknown framework '" + std::string(name) + "'; known: " + known);
}

ArchEfficiency* PerfParams::MutableArch(std::string_view arch) {
  for (auto& a : archs)
    if (a.arch == arch) return &a;
  return nullptr;
}

FrameworkProfile* PerfParams::MutableFramework(std::string_view name) {
  for (auto& f : frameworks)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {

// Published kernel figures per architecture. The GEMM ceiling is the best
// sustained large-GEMM fraction of dense peak reported for the
// architecture; the fit of `gemm` may only move below it. Attention: the
// FlashAttention papers' forward+backward throughput at head dim 128 and
// sequence >= 2k, as a fraction of dense peak.
std::vector<ArchEfficiency> ArchDefaults() {
  std::vector<ArchEfficiency> v;
  auto add = [&](const char* arch, double ceiling, double fa2, double best, const char* source) {
    ArchEfficiency a;
    a.arch = arch;
    a.gemm_ceiling = ceiling;
    a.gemm_floor = 0.30;
    a.gemm = 0.75 * ceiling;  // prior before calibration
    a.attention_fa2 = fa2;
    a.attention_best = best;
    a.memory = 0.85;
    a.source = source;
    v.push_back(a);
  };
  add("pascal", 0.85, 0, 0, "no tensor cores; SGEMM/HGEMM reach about 85-90% of peak (cuBLAS)");
  add("volta", 0.88, 0, 0,
      "cuBLAS HGEMM on V100 SXM2 about 110 of 125 TFLOP/s for large square problems; no "
      "FlashAttention (sm_70)");
  // DeepBench's V100 FP32 convolutions (params.h; the fit in
  // calib/conv_timings.h, which conv_timings_test.cc checks against the file).
  v.back().fp32_conv = 0.72;
  v.back().fp32_conv_dim_half = 16;
  v.back().fp32_winograd = 2.25;
  add("turing", 0.80, 0, 0,
      "T4/RTX: power-limited parts; cuBLAS HGEMM sustains about 70-80% of the boost-clock peak; "
      "no FlashAttention-2 (sm_75)");
  add("ampere", 0.90, 0.62, 0.62,
      "A100 SXM: large bf16 GEMMs about 270-280 of 312 TFLOP/s (cuBLAS; Bekman's MAMF finder "
      "271 TFLOP/s); FlashAttention-2 (Dao 2023) forward+backward up to 225 TFLOP/s (72%) at "
      "head dim 128, about 60% at sequence 2k");
  add("ada", 0.96, 0.55, 0.55,
      "L20: cuBLAS HGEMM up to 114.7 of 119.5 TFLOP/s at sizes 12,544-16,384 (fp32 accumulate; "
      "CUDA-Learn-Notes' hgemm benchmark, data/measured/kernel-ceilings.csv); FlashAttention-2 "
      "on sm_89 at about Ampere's fraction");
  add("hopper", 0.82, 0.325, 0.56,
      "H100 SXM: large bf16 GEMMs about 750-800 of 989 TFLOP/s (power-limited; Bekman's MAMF "
      "finder about 80%); FlashAttention-2 (Dao 2023) up to 335 TFLOP/s forward+backward; "
      "FlashAttention-3 (Shah et al. 2024) 740 TFLOP/s forward (75%), about 55% "
      "forward+backward; cuDNN fused attention (Transformer Engine) alike. Measured on one "
      "H100 SXM (data/measured/h100-kernels.csv, `tessel kernels`): isolated bf16 GEMMs 0.69 "
      "median, 0.74 best; SDPA FlashAttention-2 forward+backward asymptote 0.325, cuDNN 0.56, "
      "half-points 590 (full) and 1,260 (causal) tokens; copy/add/GeLU 0.89 of 3.35 TB/s; "
      "unaligned GEMMs 0.20 of aligned");
  // From the H100 kernel sweep (FitKernels; kernel_timings_test.cc checks
  // these against the file).
  ArchEfficiency& h = v.back();
  h.attention_seq_half = 590;
  h.attention_seq_half_causal = 1260;
  h.memory = 0.89;
  h.unaligned_gemm = 0.20;
  h.legacy_gemm = 0.636;  // FlashAttention-2 / FlashAttention-3, published (params.h)
  return v;
}

// Fields not set here keep FrameworkProfile's defaults (params.h): fused
// kernels, dropout, 6 us launches, overlapped gradient reduction, ZeRO-3.
std::vector<FrameworkProfile> FrameworkDefaults() {
  std::vector<FrameworkProfile> v;
  FrameworkProfile m;
  m.name = "megatron";
  m.note =
      "Megatron-Core / NeMo (2023-): Transformer Engine with cuDNN/FlashAttention fused "
      "attention, fused LayerNorm/bias+activation/bias+dropout+add kernels, tensor-parallel "
      "communication pipelined with the GEMMs (--tp-comm-overlap), gradient reduce-scatter and "
      "parameter all-gather overlapped (--overlap-grad-reduce, --overlap-param-gather), "
      "vocabulary-parallel cross-entropy in fp32 (its softmax kept); selective recompute = core "
      "attention; dropout 0.1 (the GPT arguments' default); ZeRO-1 as its distributed optimizer, "
      "ZeRO-3 as Megatron FSDP (--use-megatron-fsdp, 2025; the FSDP column of Megatron-Bridge's "
      "performance tables); FP8 linear layers through Transformer Engine";
  m.attention = AttentionKernel::kBest;
  m.tp_comm_overlap = true;
  m.max_zero = 3;
  m.uneven_pipeline_stages = true;
  m.vocab_pad_multiple = 128;  // --make-vocab-size-divisible-by (default 128), times t
  v.push_back(m);

  FrameworkProfile l = m;
  l.name = "megatron-legacy";
  l.cudnn_fp32_convs = true;  // NVIDIA's PyTorch examples: DeepLearningExamples' ConvNets (params.h)
  l.uneven_pipeline_stages = false;
  l.fp8 = false;
  l.note =
      "Megatron-LM 2020-2022 as in its papers (Narayanan et al. 2021, Korthikanti et al. 2022) and "
      "NVIDIA's DeepLearningExamples: apex fused LayerNorm, fused bias+GeLU and bias+dropout+add, "
      "fused scale+mask+softmax with the attention scores materialised (no FlashAttention), "
      "tensor-parallel collectives not overlapped; gradient all-reduce overlapped with backward";
  l.attention = AttentionKernel::kNone;
  l.tp_comm_overlap = false;
  l.max_zero = 1;
  v.push_back(l);

  FrameworkProfile f;
  f.name = "fsdp";
  f.note =
      "PyTorch FSDP / ZeRO-3 data parallelism (Zhao et al. 2023, 'PyTorch FSDP', VLDB): one unit "
      "per transformer block; parameter all-gathers prefetched one unit ahead in forward and "
      "backward (backward prefetch BACKWARD_PRE; the rate limiter allows two in flight); "
      "gradients reduce-scattered per unit, overlapped with the next unit's backward. Eager "
      "PyTorch kernels (LayerNorm, activation, residual adds unfused), FlashAttention-2 (flash-attn "
      "or SDPA), no dropout in current LLM recipes, cross-entropy over upcast fp32 logits; "
      "selective recompute = PyTorch selective activation checkpointing (op level: matmul "
      "outputs every other one and the attention output kept, the rest recomputed)";
  f.attention = AttentionKernel::kFlash2;
  f.fused_elementwise = false;
  // Counted from eager implementations (Hugging Face LlamaRMSNorm: upcast,
  // pow, mean, rsqrt, two multiplies and a downcast, each a pass over the
  // tensor in fp32, against one fused read + write; rotary embedding as
  // slice/neg/cat/multiply/add; SiLU and the product apart): about 3x the
  // bytes of the fused kernels.
  f.eager_elementwise_traffic = 3.0;
  f.dropout = false;
  f.op_level_selective = true;
  f.zero3_prefetch = 1;
  f.zero3_gather_once_under_pipeline = true;  // torchtitan's FSDP + PP (params.h)
  f.launch_us = 8;
  // Host time of one unit's hooks per pass (pre/post forward: unshard,
  // reshard; pre/post backward: unshard, reduce-scatter), read off our
  // one-rank FSDP2 steps at micro-batch 1 (tessel-h100/h200-fsdp2 in
  // published.csv): the host, not the GPU, set their pace there, 4.8-7.4 ms
  // of step per layer (embedding, loss and optimizer included), of which
  // the eager Llama layer's launches (scripts/count-eager-ops.py) take
  // under 1 ms.
  f.layer_overhead_us = 1500;
  v.push_back(f);

  // The same sharding, hooks and recompute with the model's elementwise work
  // in fused kernels: flash-attn's fused RMSNorm/LayerNorm, rotary, SwiGLU
  // and cross-entropy (lit-gpt/TinyLlama's README: "flash attention 2, fused
  // layernorm, fused swiglu, fused cross entropy loss, fused rotary
  // positional embedding"), or blocks under torch.compile. Fusion belongs
  // to the model code, not to FSDP; the two profiles name the two common
  // stacks (IBM's FSDP runs, the `fsdp` rows, are eager without compile).
  FrameworkProfile ff = f;
  ff.name = "fsdp-fused";
  ff.note =
      "PyTorch FSDP as `fsdp` (one unit per block, prefetch one ahead, 1.5 ms hooks per unit and pass, "
      "op-level selective recompute, no dropout) with fused elementwise kernels: flash-attn's "
      "fused norm, rotary, SwiGLU and cross-entropy (no fp32 copy of the logits kept), or "
      "torch.compile'd blocks; FlashAttention-2";
  ff.fused_elementwise = true;
  ff.eager_elementwise_traffic = 1.0;
  ff.chunked_loss = true;
  ff.loss_backward_bytes = 0;  // chunked: nothing held
  v.push_back(ff);

  // Plain PyTorch without a sharding wrapper (one GPU, or DDP's bucketed
  // all-reduce; ZeroRedundancyOptimizer for ZeRO-1): the eager modules and
  // loss of `fsdp`, no FSDP unit hooks, and scaled_dot_product_attention
  // choosing its backend. On an H100 with PyTorch 2.11 the default backend
  // ran at the best fused kernel's speed (h100-kernels.csv: asymptote 0.61
  // of peak against cuDNN's 0.56 and FlashAttention-2's 0.325); on Ampere
  // the best is FlashAttention-2.
  FrameworkProfile pt = f;
  pt.name = "pytorch";
  pt.cudnn_fp32_convs = true;  // params.h
  pt.note =
      "Plain PyTorch training (a single GPU or DDP): eager modules (nn.LayerNorm, F.gelu, "
      "residual adds as separate kernels), scaled_dot_product_attention with its default "
      "backend (the architecture's best fused kernel), cross-entropy over upcast fp32 logits, "
      "bucketed gradient all-reduce overlapped with backward, no per-module hooks; ZeRO-1 as "
      "ZeroRedundancyOptimizer";
  pt.attention = AttentionKernel::kBest;
  pt.layer_overhead_us = 0;
  pt.loss_traffic_bytes = 40;  // F.cross_entropy(logits.float()) (params.h)
  pt.loss_backward_bytes = 8;
  pt.gradients_freed_each_step = true;
  pt.autocast_fp32_residual = true;  // AMP: torch.autocast over fp32 weights
  pt.attention_output_copy = true;   // SDPA's [b, heads, s, d] output, transposed for the projection
  pt.max_zero = 1;
  v.push_back(pt);

  FrameworkProfile d;
  d.name = "deepspeed";
  d.note =
      "Megatron-DeepSpeed (DeepSpeed pipeline engine + ZeRO-1/2; Smith et al. 2022, MT-NLG): "
      "Megatron's fused kernels and fused masked softmax but attention scores materialised (no "
      "FlashAttention in the pipeline-engine releases); dropout 0.1; the pipeline engine runs "
      "blocking send/recv instructions (p2p not overlapped; every tensor-parallel rank sends the "
      "whole activation, no scatter/gather) and reduces gradients only after "
      "the last micro-batch (no overlap with backward); ZeRO-1/2 all-gather after the step";
  d.attention = AttentionKernel::kNone;
  d.fp8 = false;
  d.p2p_scatter_gather = false;
  d.dp_overlap = false;
  d.interleaved_pipeline = false;
  d.zero3_max_live_params = 1e9;
  d.zero3_collectives_per_layer = 4;  // QKV, projection, FC1, FC2 (DeepSpeed stage3 partition_parameters)
  d.layer_overhead_us = 20;
  d.bf16_grad_accum_bytes = 18;  // BF16_Optimizer.update_hp_grads after every micro-batch
  d.vocab_pad_multiple = 128;  // Megatron-DeepSpeed keeps Megatron's vocabulary padding
  v.push_back(d);

  FrameworkProfile a;
  a.name = "alpa";
  a.note =
      "Alpa on JAX/XLA (Zheng et al. 2022), as measured by the Arena artifact: compiler-"
      "generated kernels (XLA fuses elementwise chains), no fused attention, cross-mesh "
      "resharding not overlapped with compute; jaxlib 0.3 generates sm_80 kernels (no Hopper "
      "wgmma/TMA path); its GEMM efficiency relative to cuBLAS is the one fitted framework "
      "parameter";
  a.attention = AttentionKernel::kNone;
  a.fp8 = false;
  // jaxlib 0.3 (Alpa's) generates sm_80 code: no wgmma/TMA on Hopper.
  a.native_kernels = false;
  // XLA's GPU runtime (jaxlib 0.3) ran collectives synchronously on the
  // compute stream (asynchronous collectives came with jaxlib 0.4), and Alpa
  // does not schedule communication to overlap compute (Zheng et al. 2022,
  // section 8): gradient reductions and sharded-weight gathers are exposed.
  a.dp_overlap = false;
  // With more than one micro-batch Alpa sets reduce_scatter_grad_acc_friendly
  // (alpa/shard_parallel/auto_sharding.py), and its XLA pass then emits
  // all-reduce + all-gather where prefer_reduce_scatter (the Arena workers
  // set it) would reduce-scatter: "50% communication overhead" (its
  // auto_sharding.cc, GenerateReduceScatter).
  a.zero_allreduce_with_accumulation = true;
  // Flax BatchNorm under Alpa's SPMD sharding of the batch: the partitioner
  // all-reduces the reductions over the sharded batch dimension.
  a.global_batch_norm = true;
  a.zero3_prefetch = 0;
  // Alpa's pipeshard runtime runs one stage per submesh (1F1B), no
  // interleaved virtual stages.
  a.interleaved_pipeline = false;
  // Its stage construction balances stages by cost, the head included
  // (AutoLayerOption + AutoStageOption, as the Arena workers configure it).
  a.balanced_pipeline_stages = true;
  a.fragmentation = 0.0;
  // Alpa's MoE layer (alpa/model/moe.py) is GShard's: dense dispatch and
  // combine einsums; the Arena artifact's MoE configurations use expert
  // groups of 2,048 tokens (crius_worker/jax/configs).
  a.moe_dense_dispatch_group = 2048;
  // Alpa's intra-operator ILP (and its stage profiler) price the gradient
  // sync in every micro-batch (params.h): it leans to operator parallelism
  // over data parallelism on fast links.
  a.search_prices_grad_sync_per_micro_batch = true;
  // ... and with the HLO cost model (the Arena's trainers) it prices no
  // convolution (params.h).
  a.search_sees_no_convolutions = true;
  // crius_worker/jax/trainer: AutoShardingOption(prefer_reduce_scatter=True).
  a.min_zero_data_parallel = 1;
  a.kernel_efficiency = 0.6;  // prior; calibrated below
  v.push_back(a);
  return v;
}

void SetArch(PerfParams& p, const char* arch, double gemm, bool fitted) {
  ArchEfficiency* a = p.MutableArch(arch);
  assert(a != nullptr && "generated block names an architecture ArchDefaults() lacks");
  a->gemm = gemm;
  a->fitted = fitted;
}
void FittedArch(PerfParams& p, const char* arch, double gemm) { SetArch(p, arch, gemm, true); }
void UnfittedArch(PerfParams& p, const char* arch, double gemm) { SetArch(p, arch, gemm, false); }

void FittedFramework(PerfParams& p, const char* name, double kernel_efficiency, double moe_gemm_efficiency) {
  FrameworkProfile* f = p.MutableFramework(name);
  assert(f != nullptr && "generated block names a framework FrameworkDefaults() lacks");
  f->kernel_efficiency = kernel_efficiency;
  f->moe_gemm_efficiency = moe_gemm_efficiency;
}

PerfParams BuildDefaults() {
  PerfParams p;
  p.archs = ArchDefaults();
  p.fallback = p.archs.front();
  p.fallback.arch = "other";
  p.frameworks = FrameworkDefaults();
  // BEGIN GENERATED BY `tessel calibrate` (do not edit by hand)
  p.pcie = {0.4046, 56.55};
  p.nvlink_mesh = {0.602, 22.16};
  p.nvswitch = {0.7681, 22.16};
  // Arena testbed network, per node: 28.49 Gb/s effective
  p.network.step_latency_us = 56.25;
  UnfittedArch(p, "pascal", 0.6714);
  FittedArch(p, "volta", 0.7564);
  UnfittedArch(p, "turing", 0.6319);
  FittedArch(p, "ampere", 0.6626);
  UnfittedArch(p, "ada", 0.7583);
  FittedArch(p, "hopper", 0.6477);
  FittedFramework(p, "alpa", 0.861, 0.8038);
  // END GENERATED
  return p;
}

nlohmann::json LinkJson(const LinkFit& l) {
  return {{"efficiency", l.efficiency}, {"step_latency_us", l.step_latency_us}};
}

}  // namespace

const PerfParams& DefaultPerfParams() {
  static const PerfParams p = BuildDefaults();
  return p;
}

namespace {

nlohmann::json ArchJson(const ArchEfficiency& a) {
  return {{"arch", a.arch}, {"gemm", a.gemm}, {"gemm_floor", a.gemm_floor}, {"gemm_ceiling", a.gemm_ceiling},
          {"attention_fa2", a.attention_fa2}, {"attention_best", a.attention_best}, {"memory", a.memory},
          {"fp8_gemm_ratio", a.fp8_gemm_ratio}, {"attention_seq_half", a.attention_seq_half},
          {"attention_seq_half_causal", a.attention_seq_half_causal}, {"unaligned_gemm", a.unaligned_gemm},
          {"legacy_gemm", a.legacy_gemm}, {"fp32_conv", a.fp32_conv}, {"fp32_conv_dim_half", a.fp32_conv_dim_half},
          {"fp32_winograd", a.fp32_winograd}, {"fitted", a.fitted}, {"source", a.source}};
}

const char* AttentionKernelKey(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kNone: return "none";
    case AttentionKernel::kFlash2: return "fa2";
    case AttentionKernel::kBest: return "best";
  }
  return "none";
}

// The framework flags, whole-number and real fields the JSON carries,
// written and read from these lists so that neither side can leave one out
// (the ranges are checked after reading).
constexpr std::pair<const char*, bool FrameworkProfile::*> kFrameworkFlags[] = {
    {"fused_elementwise", &FrameworkProfile::fused_elementwise},
    {"dropout", &FrameworkProfile::dropout},
    {"chunked_loss", &FrameworkProfile::chunked_loss},
    {"gradients_freed_each_step", &FrameworkProfile::gradients_freed_each_step},
    {"autocast_fp32_residual", &FrameworkProfile::autocast_fp32_residual},
    {"attention_output_copy", &FrameworkProfile::attention_output_copy},
    {"op_level_selective", &FrameworkProfile::op_level_selective},
    {"dp_overlap", &FrameworkProfile::dp_overlap},
    {"tp_comm_overlap", &FrameworkProfile::tp_comm_overlap},
    {"native_kernels", &FrameworkProfile::native_kernels},
    {"search_prices_grad_sync_per_micro_batch", &FrameworkProfile::search_prices_grad_sync_per_micro_batch},
    {"search_sees_no_convolutions", &FrameworkProfile::search_sees_no_convolutions},
    {"cudnn_fp32_convs", &FrameworkProfile::cudnn_fp32_convs},
    {"interleaved_pipeline", &FrameworkProfile::interleaved_pipeline},
    {"uneven_pipeline_stages", &FrameworkProfile::uneven_pipeline_stages},
    {"balanced_pipeline_stages", &FrameworkProfile::balanced_pipeline_stages},
    {"fp8", &FrameworkProfile::fp8},
    {"p2p_scatter_gather", &FrameworkProfile::p2p_scatter_gather},
    {"zero_allreduce_with_accumulation", &FrameworkProfile::zero_allreduce_with_accumulation},
    {"global_batch_norm", &FrameworkProfile::global_batch_norm},
    {"zero3_gather_once_under_pipeline", &FrameworkProfile::zero3_gather_once_under_pipeline},
};
constexpr std::pair<const char*, int FrameworkProfile::*> kFrameworkInts[] = {
    {"zero3_prefetch", &FrameworkProfile::zero3_prefetch},
    {"zero3_collectives_per_layer", &FrameworkProfile::zero3_collectives_per_layer},
    {"max_zero", &FrameworkProfile::max_zero},
    {"min_zero_data_parallel", &FrameworkProfile::min_zero_data_parallel},
    {"moe_dense_dispatch_group", &FrameworkProfile::moe_dense_dispatch_group},
    {"vocab_pad_multiple", &FrameworkProfile::vocab_pad_multiple},
};
constexpr std::pair<const char*, double FrameworkProfile::*> kFrameworkNumbers[] = {
    {"eager_elementwise_traffic", &FrameworkProfile::eager_elementwise_traffic},
    {"zero3_max_live_params", &FrameworkProfile::zero3_max_live_params},
    {"fragmentation", &FrameworkProfile::fragmentation},
    {"launch_us", &FrameworkProfile::launch_us},
    {"layer_overhead_us", &FrameworkProfile::layer_overhead_us},
    {"bf16_grad_accum_bytes", &FrameworkProfile::bf16_grad_accum_bytes},
    {"loss_traffic_bytes", &FrameworkProfile::loss_traffic_bytes},
    {"loss_backward_bytes", &FrameworkProfile::loss_backward_bytes},
    {"kernel_efficiency", &FrameworkProfile::kernel_efficiency},
    {"moe_gemm_efficiency", &FrameworkProfile::moe_gemm_efficiency},
};

}  // namespace

std::string PerfParamsToJson(const PerfParams& p) {
  nlohmann::json j;
  j["gemm_dim_half"] = p.gemm_dim_half;
  j["gemm_tile"] = p.gemm_tile;
  j["kernel_overhead_s"] = p.kernel_overhead_s;
  j["archs"] = nlohmann::json::array();
  for (const auto& a : p.archs) j["archs"].push_back(ArchJson(a));
  j["fallback"] = ArchJson(p.fallback);
  j["frameworks"] = nlohmann::json::array();
  for (const auto& f : p.frameworks) {
    nlohmann::json fj = {{"name", f.name}, {"note", f.note}, {"attention", AttentionKernelKey(f.attention)}};
    for (const auto& [key, member] : kFrameworkFlags) fj[key] = f.*member;
    for (const auto& [key, member] : kFrameworkInts) fj[key] = f.*member;
    for (const auto& [key, member] : kFrameworkNumbers) fj[key] = f.*member;
    j["frameworks"].push_back(std::move(fj));
  }
  j["links"] = {{"pcie", LinkJson(p.pcie)},
                {"nvlink-bridge", LinkJson(p.nvlink_bridge)},
                {"nvlink-mesh", LinkJson(p.nvlink_mesh)},
                {"nvswitch", LinkJson(p.nvswitch)},
                {"network", LinkJson(p.network)}};
  j["dp_overlap_fraction"] = p.dp_overlap_fraction;
  j["tp_overlap_fraction"] = p.tp_overlap_fraction;
  j["overlap_interference"] = p.overlap_interference;
  j["memory_overhead_gib"] = p.memory_overhead_gib;
  j["iteration_overhead_s"] = p.iteration_overhead_s;
  return JsonText(j, 2);
}

Result<PerfParams> PerfParamsFromJson(const std::string& text, const std::string& source) {
  PerfParams p = DefaultPerfParams();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(source + ": JSON syntax error at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // A number beyond double's range (1e400: out_of_range.406) and the like.
    return InvalidArgument(source + ": " + e.what() + " (numbers must be finite doubles)");
  }
  if (!j.is_object()) return InvalidArgument(source + ": expected a JSON object of parameters");
  // A misspelt field would silently keep its default: every top-level key
  // must be one PerfParamsToJson writes ("gpus" has its own message below).
  {
    static const std::vector<std::string> kKnown = [] {
      std::vector<std::string> keys;
      const nlohmann::json defaults = nlohmann::json::parse(PerfParamsToJson(DefaultPerfParams()));
      for (const auto& [k, v] : defaults.items()) keys.push_back(k);
      return keys;
    }();
    for (const auto& [k, v] : j.items()) {
      if (k != "gpus" && std::find(kKnown.begin(), kKnown.end(), k) == kKnown.end())
        return InvalidArgument(source + ": " + JsonText(nlohmann::json(k)) + ": unknown field; known: " + Join(kKnown, ", "));
    }
  }
  std::string field;
  auto fraction = [&](double v, const std::string& what) -> Status {
    if (!(v > 0 && v <= 1)) return InvalidArgument(source + ": " + what + ": expected a fraction in (0, 1], got " + std::to_string(v));
    return Status::Ok();
  };
  try {
    if (j.contains("gpus"))
      return InvalidArgument(source + ": gpus: per-GPU efficiencies were replaced by per-architecture ones "
                                      "('archs'); regenerate the file with `tessel calibrate --out`");
    auto num = [&](const char* key, double* out) {
      field = key;
      if (j.contains(key)) *out = j.at(key).get<double>();
    };
    num("gemm_dim_half", &p.gemm_dim_half);
    num("gemm_tile", &p.gemm_tile);
    num("kernel_overhead_s", &p.kernel_overhead_s);
    num("dp_overlap_fraction", &p.dp_overlap_fraction);
    num("tp_overlap_fraction", &p.tp_overlap_fraction);
    num("overlap_interference", &p.overlap_interference);
    num("memory_overhead_gib", &p.memory_overhead_gib);
    num("iteration_overhead_s", &p.iteration_overhead_s);
    auto read_arch = [&](const nlohmann::json& a, ArchEfficiency* e) -> Status {
      e->arch = a.at("arch").get<std::string>();
      e->gemm = a.at("gemm").get<double>();
      e->gemm_floor = a.value("gemm_floor", e->gemm_floor);
      e->gemm_ceiling = a.value("gemm_ceiling", e->gemm_ceiling);
      e->attention_fa2 = a.value("attention_fa2", e->attention_fa2);
      e->attention_best = a.value("attention_best", e->attention_best);
      e->memory = a.value("memory", e->memory);
      e->fp8_gemm_ratio = a.value("fp8_gemm_ratio", e->fp8_gemm_ratio);
      e->attention_seq_half = a.value("attention_seq_half", e->attention_seq_half);
      e->attention_seq_half_causal = a.value("attention_seq_half_causal", e->attention_seq_half_causal);
      e->unaligned_gemm = a.value("unaligned_gemm", e->unaligned_gemm);
      e->legacy_gemm = a.value("legacy_gemm", e->legacy_gemm);
      e->fp32_conv = a.value("fp32_conv", e->fp32_conv);
      e->fp32_conv_dim_half = a.value("fp32_conv_dim_half", e->fp32_conv_dim_half);
      e->fp32_winograd = a.value("fp32_winograd", e->fp32_winograd);
      e->fitted = a.value("fitted", false);
      e->source = a.value("source", "");
      TESSEL_RETURN_IF_ERROR(fraction(e->gemm, field + ": " + e->arch + ": gemm"));
      TESSEL_RETURN_IF_ERROR(fraction(e->memory, field + ": " + e->arch + ": memory"));
      TESSEL_RETURN_IF_ERROR(fraction(e->fp8_gemm_ratio, field + ": " + e->arch + ": fp8_gemm_ratio"));
      TESSEL_RETURN_IF_ERROR(fraction(e->unaligned_gemm, field + ": " + e->arch + ": unaligned_gemm"));
      TESSEL_RETURN_IF_ERROR(fraction(e->legacy_gemm, field + ": " + e->arch + ": legacy_gemm"));
      if (!(e->fp32_conv >= 0 && e->fp32_conv <= 1) || !(e->fp32_conv_dim_half >= 0 && e->fp32_conv_dim_half <= 1e6) ||
          !(e->fp32_winograd >= 1 && e->fp32_winograd <= 4))
        return InvalidArgument(source + ": " + field + ": " + e->arch +
                               ": expected fp32_conv in [0, 1] (0 = as the GEMMs), fp32_conv_dim_half in [0, 1e6] "
                               "(0 = gemm_dim_half), fp32_winograd in [1, 4] (F(2x2, 3x3) saves 2.25x)");
      if (!(e->attention_seq_half >= 0 && e->attention_seq_half <= 1e6 && e->attention_seq_half_causal >= 0 &&
            e->attention_seq_half_causal <= 1e6))
        return InvalidArgument(source + ": " + field + ": " + e->arch +
                               ": attention_seq_half and attention_seq_half_causal must be in [0, 1e6] tokens");
      if (e->attention_fa2 < 0 || e->attention_fa2 > 1 || e->attention_best < 0 || e->attention_best > 1)
        return InvalidArgument(source + ": " + field + ": " + e->arch + ": attention fractions must be in [0, 1]");
      if (!(e->gemm_floor > 0 && e->gemm_floor < e->gemm_ceiling && e->gemm_ceiling <= 1))
        return InvalidArgument(source + ": " + field + ": " + e->arch + ": expected 0 < gemm_floor < gemm_ceiling <= 1");
      return Status::Ok();
    };
    if (j.contains("archs")) {
      field = "archs";
      p.archs.clear();
      for (const auto& a : j["archs"]) {
        ArchEfficiency e;
        TESSEL_RETURN_IF_ERROR(read_arch(a, &e));
        p.archs.push_back(e);
      }
    }
    if (j.contains("fallback")) {
      field = "fallback";
      TESSEL_RETURN_IF_ERROR(read_arch(j["fallback"], &p.fallback));
    }
    if (j.contains("frameworks")) {
      field = "frameworks";
      p.frameworks.clear();
      for (const auto& f : j["frameworks"]) {
        FrameworkProfile fp;
        fp.name = f.at("name").get<std::string>();
        fp.note = f.value("note", "");
        std::string att = f.value("attention", AttentionKernelKey(fp.attention));
        bool known = false;
        for (AttentionKernel k : {AttentionKernel::kNone, AttentionKernel::kFlash2, AttentionKernel::kBest})
          if (att == AttentionKernelKey(k)) fp.attention = k, known = true;
        if (!known)
          return InvalidArgument(source + ": frameworks: " + fp.name + ": attention: expected none, fa2 or best, got '" + att + "'");
        for (const auto& [key, member] : kFrameworkNumbers) fp.*member = f.value(key, fp.*member);
        if (!(fp.eager_elementwise_traffic >= 1 && fp.eager_elementwise_traffic <= 20))
          return InvalidArgument(source + ": frameworks: " + fp.name + ": eager_elementwise_traffic must be in [1, 20]");
        for (const auto& [key, member] : kFrameworkFlags) fp.*member = f.value(key, fp.*member);
        // Integer fields: a JSON number that is not a whole number in
        // [0, 1e6] is refused here (2e87 converted to int is undefined).
        for (const auto& [key, member] : kFrameworkInts) {
          int* out = &(fp.*member);
          auto it = f.find(key);
          if (it == f.end()) continue;
          double v = it->is_number() ? it->get<double>() : -1;
          if (!(v >= 0 && v <= 1e6 && v == std::floor(v)))
            return InvalidArgument(source + ": frameworks: " + fp.name + ": " + key +
                                   ": expected a whole number from 0 to 1000000, got " + JsonText(*it));
          *out = static_cast<int>(v);
        }
        if (fp.zero3_max_live_params < 0 || fp.fragmentation < 0 || fp.fragmentation > 1)
          return InvalidArgument(source + ": frameworks: " + fp.name + ": zero3_max_live_params must be >= 0 and fragmentation in [0, 1]");
        if (fp.max_zero < 0 || fp.max_zero > 3)
          return InvalidArgument(source + ": frameworks: " + fp.name + ": max_zero must be 0, 1, 2 or 3");
        if (!(fp.kernel_efficiency > 0 && fp.kernel_efficiency <= 1))
          return InvalidArgument(source + ": frameworks: " + fp.name + ": kernel_efficiency must be in (0, 1]");
        if (!(fp.moe_gemm_efficiency > 0 && fp.moe_gemm_efficiency <= 1))
          return InvalidArgument(source + ": frameworks: " + fp.name + ": moe_gemm_efficiency must be in (0, 1]");
        if (fp.launch_us < 0 || fp.layer_overhead_us < 0)
          return InvalidArgument(source + ": frameworks: " + fp.name + ": launch_us and layer_overhead_us must be >= 0");
        p.frameworks.push_back(fp);
      }
      if (p.frameworks.empty()) return InvalidArgument(source + ": frameworks: at least one is needed");
    }
    if (j.contains("links")) {
      const auto& l = j["links"];
      auto link = [&](const char* key, LinkFit* out) {
        field = std::string("links.") + key;
        if (!l.contains(key)) return;
        out->efficiency = l[key].at("efficiency").get<double>();
        out->step_latency_us = l[key].at("step_latency_us").get<double>();
      };
      link("pcie", &p.pcie);
      link("nvlink-bridge", &p.nvlink_bridge);
      link("nvlink-mesh", &p.nvlink_mesh);
      link("nvswitch", &p.nvswitch);
      link("network", &p.network);
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(source + ": field '" + field + "': " + e.what());
  }
  // Every number in range (NaN fails every comparison here): a negative
  // overhead, a zero link efficiency or a negative memory figure would
  // print negative or infinite iteration times as results.
  auto in = [](double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; };
  if (!in(p.memory_overhead_gib, 0, 1e4) || !in(p.iteration_overhead_s, 0, 1e4) || !in(p.kernel_overhead_s, 0, 1) ||
      !in(p.gemm_dim_half, 0, 1e9) || !in(p.dp_overlap_fraction, 0, 1) || !in(p.tp_overlap_fraction, 0, 1) ||
      !in(p.overlap_interference, 0, 1) || !in(p.gemm_tile, 1, 4096))
    return InvalidArgument(source + ": memory_overhead_gib (0 to 1e4), iteration_overhead_s (0 to 1e4 s), "
                                    "kernel_overhead_s (0 to 1 s), gemm_dim_half (0 to 1e9) and gemm_tile (1 to 4096) "
                                    "must be finite and in range; dp_overlap_fraction, tp_overlap_fraction and "
                                    "overlap_interference in [0, 1]");
  for (const auto& [name, link] : {std::pair<const char*, const LinkFit*>{"pcie", &p.pcie},
                                   {"nvlink-bridge", &p.nvlink_bridge},
                                   {"nvlink-mesh", &p.nvlink_mesh},
                                   {"nvswitch", &p.nvswitch},
                                   {"network", &p.network}}) {
    if (!(link->efficiency > 0 && link->efficiency <= 1) || !in(link->step_latency_us, 0, 1e6)) {
      return InvalidArgument(source + ": links." + name + ": efficiency must be in (0, 1] and step_latency_us in [0, 1e6]");
    }
  }
  for (const FrameworkProfile& f : p.frameworks) {
    if (!in(f.launch_us, 0, 1e6) || !in(f.layer_overhead_us, 0, 1e6) || !(f.kernel_efficiency > 0 && f.kernel_efficiency <= 2) ||
        !in(f.fragmentation, 0, 0.99) || !in(f.eager_elementwise_traffic, 0, 100) || !in(f.zero3_max_live_params, 0, 1e15) ||
        f.zero3_prefetch < 0 || f.zero3_prefetch > 1000 || f.max_zero < 0 || f.max_zero > 3 ||
        f.moe_dense_dispatch_group < 0 || f.zero3_collectives_per_layer < 1 || f.zero3_collectives_per_layer > 1000 ||
        f.min_zero_data_parallel < 0 || f.min_zero_data_parallel > f.max_zero ||
        !in(f.bf16_grad_accum_bytes, 0, 1000) || f.vocab_pad_multiple < 1 || !in(f.loss_traffic_bytes, 0, 1000) ||
        !in(f.loss_backward_bytes, 0, 1000)) {
      return InvalidArgument(source + ": frameworks: " + f.name +
                             ": launch_us and layer_overhead_us must be in [0, 1e6], kernel_efficiency in (0, 2], "
                             "fragmentation in [0, 0.99], eager_elementwise_traffic in [0, 100], zero3_prefetch in "
                             "[0, 1000], max_zero in [0, 3], moe_dense_dispatch_group >= 0, "
                             "zero3_collectives_per_layer in [1, 1000], min_zero_data_parallel in [0, max_zero], "
                             "bf16_grad_accum_bytes, loss_traffic_bytes and loss_backward_bytes in [0, 1000], "
                             "vocab_pad_multiple >= 1");
    }
  }
  return p;
}

}  // namespace tessel
