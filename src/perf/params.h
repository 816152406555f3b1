// The estimator's parameters: per-GPU-architecture kernel efficiency (GEMM
// fitted within published bounds; attention and memory from published
// kernel benchmarks), training frameworks as mechanisms, per-link collective
// efficiency and latency, and the few global constants of the model. Every number has a name and a comment; the
// defaults are embedded (params.cc) and were produced by `tessel calibrate`
// from ../shared/data (see comm_fit.h and accuracy.h); a JSON file of the
// same shape can replace them at run time (--params).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/gpu.h"

namespace tessel {

// How close one GPU *architecture*'s kernels get to the datasheet. GPUs of
// one architecture share these (an A100 40GB and 80GB are the same silicon);
// each part keeps its own peak FLOP/s and memory bandwidth from the catalog.
// `gemm` is fitted by `tessel calibrate` but only inside [gemm_floor,
// gemm_ceiling]; the ceiling is the best large-GEMM fraction of dense peak
// published for the architecture (see `source`). The attention and memory
// fractions are not fitted: they are published kernel figures.
struct ArchEfficiency {
  std::string arch;           // "volta", "turing", "ampere", "ada", "hopper"
  double gemm = 0.6;          // sustained fraction of dense peak on large GEMMs in a step
  double gemm_floor = 0.30;   // the fit's bounds
  double gemm_ceiling = 0.85;
  // Fused attention (FlashAttention-2 class) forward+backward, as a fraction
  // of dense peak at head dim 128 and long sequences.
  double attention_fa2 = 0.5;
  // The best fused attention kernel of the architecture (FlashAttention-3 /
  // cuDNN on Hopper; the same as FlashAttention-2 elsewhere).
  double attention_best = 0.5;
  double memory = 0.8;        // fraction of memory bandwidth elementwise kernels reach
  // Fused attention's throughput grows with the sequence as s / (s + half):
  // each head's tiles pay a fixed cost (loading Q, rescaling, writing O) per
  // row of s x d work, and causal masking leaves the diagonal tiles half
  // used and the rows unevenly long. The attention fractions above are the
  // long-sequence asymptotes. Measured where a kernel sweep exists
  // (data/measured/h100-kernels.csv); elsewhere gemm_dim_half's 48.
  double attention_seq_half = 48;
  double attention_seq_half_causal = 48;
  // A 16-bit GEMM with a dimension that is not a multiple of 8 elements (16
  // bytes: GPT-2's vocabulary of 50,257 unpadded) cannot use the aligned
  // tensor-core path and runs at this fraction of the aligned efficiency.
  // Hopper: 0.20 measured (TMA and wgmma need 16-byte-aligned strides; the
  // fallback kernels ran 95-160 of about 700 TFLOP/s, h100-kernels.csv,
  // "vocab" rows). 1 where not measured.
  double unaligned_gemm = 1.0;
  // GEMMs of code generated for the previous architecture (sm_80 kernels:
  // mma.sync without Hopper's wgmma and TMA) run at this fraction of the
  // native efficiency. Hopper: 0.636, FlashAttention-2's published H100
  // forward+backward fraction of peak over FlashAttention-3's (0.35 over
  // 0.55; Dao 2023, Shah et al. 2024), the one published comparison of the
  // two code paths on the same work. (The attention kernels measured
  // here give 0.58, FlashAttention-2's 0.325 over cuDNN's 0.56; attention
  // carries softmax work a GEMM does not, so that ratio is not taken.)
  // GEMMs measured here agree (data/measured/h100-legacy-gemm.csv: one
  // Triton source built for mma.sync runs at 0.655 of its wgmma build and
  // 0.60 of cuBLAS, medians over 14 fp16 shapes on one H100 SXM). Tensor-core
  // math only: FP32 GEMMs and convolutions run FFMA on the CUDA cores, which
  // have no newer path. 1 elsewhere.
  double legacy_gemm = 1.0;
  // FP8 GEMMs reach this fraction of the efficiency 16-bit GEMMs reach (each
  // against its own dense peak): the ratio of the best published FP8 and
  // BF16 large-GEMM fractions (Bekman's maximum achievable matmul on H100
  // SXM: FP8 1,403 of 1,979 TFLOP/s = 70.9%, BF16 794 of 989 = 80.3%;
  // data/measured/kernel-ceilings.csv). Not fitted.
  double fp8_gemm_ratio = 0.883;
  // FP32 convolutions on the CUDA cores where they differ from the
  // architecture's tensor-core GEMMs (an architecture without TF32: FP32
  // runs FFMA): the implicit GEMM's fraction of the FP32 peak, its
  // dimension half-point (gemm_dim_half's rule; CUDA-core tiles idle less on
  // narrow channels), and the multiplies a 3x3 stride-1 convolution saves by
  // the Winograd algorithm cuDNN picks for it (F(2x2, 3x3): 2.25 times
  // fewer). 0 (and 1) = as its GEMMs. Volta: fitted on DeepBench's V100 FP32
  // convolutions (data/measured/deepbench-v100-fp32-convs.csv, cuDNN 7.6;
  // calib/conv_timings.h), whose forward algorithm is WINOGRAD or
  // WINOGRAD_NONFUSED for 28 of 32 such shapes. Not fitted on training steps.
  double fp32_conv = 0;
  double fp32_conv_dim_half = 0;
  double fp32_winograd = 1;
  bool fitted = false;        // set by calibration: rows of this architecture existed
  std::string source;
};

// Which fused attention kernel a framework uses.
enum class AttentionKernel { kNone, kFlash2, kBest };

// What a training framework does, as mechanisms the estimator models (not
// as a speed factor). Sources for each default are in params.cc.
struct FrameworkProfile {
  std::string name;
  std::string note;
  AttentionKernel attention = AttentionKernel::kBest;  // where the GPU supports it (sm_80+)
  // Fused bias+GeLU/SwiGLU, bias+dropout+residual and LayerNorm kernels:
  // fewer launches and memory passes per layer.
  bool fused_elementwise = true;
  // Without fused kernels, memory traffic of the elementwise work relative
  // to the fused minimum: eager RMSNorm upcast to fp32 and run as a chain of
  // ops, rotary embeddings and SwiGLU as separate kernels. Applied to models
  // with a gated FFN (the Llama family: RMSNorm, rotary, SwiGLU); LayerNorm
  // and GeLU models' eager kernels (nn.LayerNorm, F.gelu) are single passes.
  double eager_elementwise_traffic = 1.0;
  // The default recipe trains with dropout (masks stored for backward).
  bool dropout = true;
  // Cross-entropy computed in chunks / fused with its gradient: no fp32
  // copy of the logits is kept for backward.
  bool chunked_loss = false;
  // Cross-entropy over the fp32 logits, per logit of the vocabulary shard:
  // bytes its kernels move forward and backward together, and bytes its
  // backward allocates beside the kept softmax (not chunked). Megatron's
  // fused vocabulary-parallel cross-entropy: upcast, softmax and gradient in
  // three fp32 passes each way (24), the gradient computed in place and cast
  // to 16 bits (2); the FSDP profiles keep these (their stacks' model code
  // computes the loss fused or in 16 bits: llm-foundry's fused
  // cross-entropy, fms-fsdp's bf16 logits). Eager F.cross_entropy over
  // upcast logits (the `pytorch` profile): forward cast (2 + 4) and
  // log_softmax (two fp32 reads and a write, 12); backward nll_loss's dense
  // fp32 gradient (4), log_softmax's backward (reads 8, writes 4) and the
  // cast back (4 + 2): 40 moved, and nll_loss's gradient with
  // log_softmax's input gradient (8) held beside the kept output. Measured
  // on an H100 (data/measured/published.csv, source tessel-h100-eager: a
  // 125M model at micro-batch 16 peaks at 30.4 GiB; estimated 30.8 GiB with
  // these 8 bytes, 21.6 with 2).
  double loss_traffic_bytes = 24;
  double loss_backward_bytes = 2;
  // Selective recompute: `core-attention` (Megatron: the attention scores
  // and softmax are recomputed) or op-level (PyTorch selective activation
  // checkpointing: elementwise ops and every other matmul are recomputed,
  // matmul outputs in between and the attention output are kept).
  bool op_level_selective = false;
  // ZeRO-3/FSDP: parameter all-gathers issued this many layers ahead
  // (forward and backward prefetch), so a layer's gather hides behind the
  // compute of the layers before it.
  int zero3_prefetch = 1;
  // Tensor-parallel all-gathers/reduce-scatters run in chunks pipelined with
  // the neighbouring GEMMs (Transformer Engine userbuffers,
  // --tp-comm-overlap): PerfParams::tp_overlap_fraction of it hidden, at
  // most the GEMMs' time.
  bool tp_comm_overlap = false;
  // ZeRO-3: collectives per transformer layer and pass that gather its
  // weights (and reduce-scatter their gradients). FSDP and Megatron FSDP
  // flatten a layer into one buffer (1: priced as the stage's weights in
  // one collective, the per-layer latency hidden by prefetching);
  // DeepSpeed's stage 3 gathers each partitioned parameter by itself and
  // keeps those under stage3_param_persistence_threshold (1e5 elements:
  // biases, norms) whole, so a GPT layer's four weight matrices are four
  // collectives, each paying the ring's latency over the whole
  // data-parallel group (4).
  int zero3_collectives_per_layer = 1;
  // ZeRO-3: parameters gathered at once are capped at this many (DeepSpeed's
  // stage3_max_live_parameters, 1e9 by default); 0 = the current layer and
  // the prefetched ones (FSDP).
  double zero3_max_live_params = 0;
  // ZeRO-3 under pipeline parallelism gathers a stage's parameters once per
  // step, not once per micro-batch: the first micro-batch's forward
  // all-gathers each unit and keeps it unsharded through every later
  // micro-batch; gradients accumulate unsharded in the reduce dtype (fp32)
  // and are reduce-scattered once, after the stage's last backward, not
  // overlapped with it. torchtitan composes FSDP2 with pipelining this way:
  // its apply_fsdp sets reshard_after_forward=False when pipelining is on
  // ("to avoid per-microbatch all-gathers", reshard_after_forward_policy
  // "default"; mixed_precision_reduce "float32"), and PyTorch's
  // torch/distributed/pipelining/stage.py (backward_maybe_with_nosync)
  // turns off gradient sync and reshard-after-backward for an FSDP stage
  // until its last backward, then runs every unit's post-backward (the
  // reduce-scatter) at once. Memory: the stage's weights whole (16 bits)
  // and its gradients whole (fp32) for the whole step. Without it, each
  // micro-batch gathers and reduce-scatters as without pipelining.
  bool zero3_gather_once_under_pipeline = false;
  // The allocator's fragmentation, reserved / allocated - 1: PyTorch's
  // caching allocator (a few percent on steady training steps); XLA plans
  // its buffers statically (none).
  double fragmentation = 0.05;
  // MoE token dispatch as GShard's dense one-hot einsums over groups of
  // this many tokens (extra GEMM work per token proportional to the group);
  // 0 = sparse permutation (Megatron, DeepSpeed-MoE).
  int moe_dense_dispatch_group = 0;
  // The deepest ZeRO stage the framework implements (Megatron: 1, the
  // distributed optimizer; FSDP and DeepSpeed: 3).
  int max_zero = 3;
  // The lowest ZeRO stage its configuration runs with data parallelism
  // (d > 1): the planner searches no lower (an explicit --zero is estimated
  // as asked). The Arena workers set Alpa's prefer_reduce_scatter, so its
  // gradients are reduce-scattered and each replica updates its shard of
  // the optimizer state (ZeRO-1 or deeper) whenever it runs data parallel.
  int min_zero_data_parallel = 0;
  // The pipeline schedule can interleave virtual stages (Megatron's
  // interleaved 1F1B, Narayanan et al. 2021). DeepSpeed's pipeline engine
  // and Alpa run one stage per device (1F1B / GPipe).
  bool interleaved_pipeline = true;
  // Interleaved virtual stages may hold different numbers of layers when the
  // layers do not divide evenly by p*v (Megatron-Core's pipeline layouts,
  // --decoder-first/last-pipeline-num-layers; Llama 3's training removed one
  // layer each from the first and last stages, Dubey et al. 2024, 3.3.2).
  // Without it the layers must divide by p*v.
  bool uneven_pipeline_stages = false;
  // The framework builds its pipeline stages to equal cost, the embedding
  // and the output layer included: Alpa's AutoLayerOption clusters the whole
  // program into layers of equal FLOPs and its AutoStageOption assigns them
  // to stages by profiled cost (Zheng et al. 2022, section 5), so a stage
  // that holds the output layer holds fewer transformer layers. Modelled as
  // a continuous split of the layers (a stage boundary may fall inside a
  // layer's operators). Without it every stage holds the same number of
  // transformer layers and the first and last add the embedding and head.
  bool balanced_pipeline_stages = false;
  // Pipeline sends split the activation across the tensor-parallel ranks
  // and all-gather it on arrival (Megatron's scatter/gather optimization,
  // Narayanan et al. 2021, section 4.1), so each rank sends 1/t of it;
  // without it (DeepSpeed's pipeline engine) every tensor-parallel rank
  // sends the whole replicated activation.
  bool p2p_scatter_gather = true;
  // Gradient reduction overlaps the backward pass (bucketed); with
  // pipelining, only the last micro-batch's backward hides it.
  bool dp_overlap = true;
  // Sharded optimizer states (ZeRO-1/2-like) with gradient accumulation:
  // gradients are all-reduced after the last micro-batch, not
  // reduce-scattered, and the updated weights all-gathered (Alpa: a
  // reduce-scatter cannot be accumulated across micro-batches, so with more
  // than one it falls back to all-reduce + all-gather).
  bool zero_allreduce_with_accumulation = false;
  // BatchNorm statistics over the whole data-parallel batch (SPMD
  // semantics): each BatchNorm all-reduces its per-channel sums across the
  // data-parallel group, twice forward and twice backward, every
  // micro-batch. PyTorch DDP normalises per GPU (no collective).
  bool global_batch_norm = false;
  // Host-side cost per launched kernel (eager PyTorch dispatch + CUDA
  // launch), microseconds: the GPU idles when its kernels are shorter.
  double launch_us = 6;
  // Fixed host/synchronisation cost per layer per micro-batch (module hooks,
  // FSDP unit pre/post hooks, pipeline instructions), microseconds.
  double layer_overhead_us = 0;
  // Its kernels use the newest architecture's native tensor-core path
  // (Hopper's wgmma/TMA). Code generated for sm_80 runs its GEMMs at the
  // architecture's legacy_gemm.
  bool native_kernels = true;
  // FP8 training of the linear layers (Transformer Engine in Megatron-Core
  // and NeMo; torchao float8 under FSDP2): their GEMMs run in FP8 with their
  // inputs and output gradients quantized first; attention, the output
  // layer, norms and communication stay in 16 bits. Frameworks without it
  // refuse --precision fp8.
  bool fp8 = true;
  // The framework chooses the plan itself, by its own search, and that
  // search prices the data-parallel gradient synchronisation once per
  // micro-batch while the run does it once per iteration. Alpa under
  // pipeshard solves its intra-operator ILP with grad_acc_num_micro_batches
  // unset (alpa/pipeline_parallel/compile_executable.py), so the ILP weighs
  // a stage's gradient all-reduce as if every micro-batch paid it, and its
  // stage profiler times stages with the sync included (skip_grad_sync=
  // False); the runtime skips it on all but the last micro-batch. The
  // planner then predicts the plan such a search picks, not the fastest: it
  // ranks plans by iteration time + (M - 1) x the data-parallel
  // communication (an approximation: Alpa's HLO cost model, when used for
  // stage construction, amortizes the all-reduce; its ILP does not).
  bool search_prices_grad_sync_per_micro_batch = false;
  // The framework's search prices a CNN by its communication alone. The
  // Arena's trainers run Alpa's stage construction on its HLO cost model
  // (AutoStageOption(use_hlo_cost_model=True) with their profiling
  // database), which prices GEMM calls and collectives only
  // (EstimateHloModuleCost in Alpa's XLA fork, gpu_cost_model.cc): a cuDNN
  // convolution costs it nothing, so for a CNN the search sees the
  // communication of each plan and no compute. The planner then ranks a
  // CNN's plans by their communication (tensor-parallel, data-parallel,
  // expert) and, among equals, by the estimate: the plan such a search
  // picks, not the fastest.
  bool search_sees_no_convolutions = false;
  // Its FP32 convolutions are cuDNN's as PyTorch calls them (its heuristics
  // or benchmark mode): on an architecture with ArchEfficiency::fp32_conv
  // figures (Volta) they run at those, 3x3 stride-1 ones by Winograd. Plain
  // PyTorch (pytorch) and NVIDIA's PyTorch examples (megatron-legacy:
  // DeepLearningExamples' ConvNets, whose FP32 ResNet-50 on V100s shows it).
  // Not the frameworks the planner picks by plan (megatron, fsdp, deepspeed:
  // no CNN is trained with them, and a simulated CNN job without a framework
  // is priced as theirs). Alpa's XLA runs on the Arena V100s do not show it:
  // their one- and two-GPU FP32 Wide-ResNet steps take 1.20-1.28 times the
  // time these figures give them, and 0.91-1.01 of it without Winograd
  // (leave-one-source-out; docs/estimator.md has the command).
  bool cudnn_fp32_convs = false;
  // BF16 runs with ZeRO 0 or 1: gradients accumulated into an fp32 copy
  // outside the backward kernels after every micro-batch, in bytes moved per
  // parameter this GPU holds. DeepSpeed's BF16_Optimizer: its pipeline engine calls
  // update_hp_grads after each micro-batch's backward, which runs
  // hp_grad.add_(lp.grad.to(fp32)) per parameter tensor: read the bf16
  // gradient (2), write and read its fp32 copy (4 + 4), read and write the
  // fp32 accumulator (4 + 4) = 18, two kernels per tensor. 0 where the
  // accumulation is fused into the weight-gradient GEMM (Megatron's
  // gradient_accumulation_fusion) or compiled (XLA), or left to autograd's
  // in-place add of 16-bit gradients (a few bytes, not modelled).
  double bf16_grad_accum_bytes = 0;
  // The vocabulary is padded to a multiple of this times t before the
  // embedding and output layer are built (Megatron-LM's and
  // Megatron-DeepSpeed's --make-vocab-size-divisible-by 128); 1 = used as
  // the tokenizer gives it (Hugging Face models under FSDP, Alpa).
  int vocab_pad_multiple = 1;
  // With one replica and one micro-batch, gradients exist only from their
  // layer's backward to the optimizer step (autograd allocates .grad at its
  // first accumulation and zero_grad(set_to_none=True) frees it), so they
  // never coexist with the whole set of activations: memory holds the
  // larger of the two. Plain PyTorch; DDP's buckets, Megatron's and
  // DeepSpeed's gradient buffers and FSDP's reduce-scatter inputs are there
  // for the whole step. Measured on an H100 (tessel-h100-eager): without it
  // one-sequence and full-recompute steps are over-counted by up to 10%.
  bool gradients_freed_each_step = false;
  // torch.autocast over fp32 weights: an fp32 residual stream, whose
  // LayerNorm inputs are kept in fp32 (ActivationOptions::fp32_residual).
  bool autocast_fp32_residual = false;
  // The attention output is kept in the kernel's layout and copied for the
  // projection (ActivationOptions::attention_output_copy).
  bool attention_output_copy = false;
  // Only for compiler-generated kernels (Alpa/XLA): achieved GEMM
  // efficiency relative to cuBLAS/cuDNN. 1 for frameworks calling the
  // vendor libraries. Fitted within [0.2, 1].
  double kernel_efficiency = 1.0;
  // An MoE layer's routed GEMMs (the experts' batched GEMMs, the router,
  // GShard's dispatch and combine einsums) against the framework's dense
  // GEMMs: their time is divided by this. 1 where the experts run as the
  // dense layers' GEMMs do; fitted for Alpa (within [0.3, 1]): both Arena
  // databases' one-GPU runs price them below its dense GEMMs (plausibly
  // XLA's batched dots over the GShard einsums' [E, G, C, M] operands and
  // the transposes between their layouts; not measured kernel by kernel).
  double moe_gemm_efficiency = 1.0;

  // Whether its pipeline schedule can put `layers` layers on p*v virtual
  // stages (evenly, or unevenly where uneven_pipeline_stages).
  bool SplitsLayers(int layers, int pp, int virtual_stages) const {
    return layers % (pp * virtual_stages) == 0 || uneven_pipeline_stages;
  }
};

// One class of link as collectives see it.
struct LinkFit {
  double efficiency = 0.8;  // achieved bus bandwidth / nominal per-direction bandwidth
  double step_latency_us = 10;  // per ring step (alpha), microseconds
};

struct PerfParams {
  // --- compute ---
  // A GEMM dimension x contributes x / (x + gemm_dim_half) to efficiency:
  // small hidden sizes, head dims and micro-batches leave tensor cores idle.
  double gemm_dim_half = 48;
  // A GEMM's output is computed in tiles of gemm_tile x gemm_tile, one per
  // SM at a time: tiles / (waves x SMs) of the GPU works in the last,
  // partly filled wave (NVIDIA's "Matrix Multiplication Background" guide:
  // wave quantization). cuBLAS picks tiles of 64 to 256 per side to fill the
  // SMs; 128 is the middle of that range (not fitted).
  double gemm_tile = 128;
  // GPU-side launch + tail cost per kernel, seconds.
  double kernel_overhead_s = 4e-6;
  std::vector<ArchEfficiency> archs;
  ArchEfficiency fallback;  // architectures without an entry
  // frameworks[0] is megatron; see DefaultFrameworkFor() for the default.
  std::vector<FrameworkProfile> frameworks;

  // --- communication ---
  LinkFit pcie{0.47, 8};
  LinkFit nvlink_bridge{0.7, 8};
  LinkFit nvlink_mesh{0.8, 8};
  LinkFit nvswitch{0.75, 8};
  LinkFit network{0.85, 15};
  // Fraction of one micro-batch's backward pass during which gradient
  // all-reduce/reduce-scatter can run hidden (bucketed overlap).
  double dp_overlap_fraction = 0.85;
  // Fraction of tensor-parallel communication a pipelined (chunked) GEMM
  // hides: the first and last chunks' transfers stay exposed and the
  // communication kernels take SMs from the GEMMs.
  double tp_overlap_fraction = 0.5;
  // Gradient reduction and ZeRO-3 gathers that run hidden behind compute
  // still slow it: NCCL's kernels occupy SMs (an all-gather launches 24
  // blocks on an H100's 132 SMs, NVIDIA developer forum, "Compute-
  // communication overlap causes severe GEMM performance degradation", 2025)
  // and share memory bandwidth, so the compute beside them runs about
  // 24 / (132 - 24) = 0.22 longer. This fraction of the overlapped
  // data-parallel communication time is added to the iteration. Not fitted.
  // (Tensor-parallel overlap's own cost is in tp_overlap_fraction.)
  double overlap_interference = 0.2;

  // --- memory ---
  // CUDA context, NCCL buffers, cuBLAS workspaces.
  double memory_overhead_gib = 1.0;

  // --- per-iteration ---
  double iteration_overhead_s = 0.005;  // data loading, logging, launch gaps

  // By architecture name ("ampere"); the fallback when absent.
  const ArchEfficiency& ForArch(const std::string& arch) const;
  const LinkFit& ForLink(LinkKind k) const;
  // NotFound lists the known frameworks.
  Result<const FrameworkProfile*> FindFramework(std::string_view name) const;
  // For calibration, which sets fitted values in place: nullptr when absent.
  ArchEfficiency* MutableArch(std::string_view arch);
  FrameworkProfile* MutableFramework(std::string_view name);
};

// The embedded defaults.
const PerfParams& DefaultPerfParams();

// The framework a plan implies when none is named: ZeRO-3 is FSDP (with
// tensor/pipeline parallelism as torchtitan composes them); ZeRO-2 without
// pipeline parallelism FSDP's SHARD_GRAD_OP (t = 1) or DeepSpeed (t > 1);
// ZeRO-1/2 with pipeline parallelism Megatron-DeepSpeed, unless the
// pipeline is interleaved (DeepSpeed's engine cannot: Megatron's
// distributed optimizer then); anything else Megatron (whose distributed
// optimizer is ZeRO-1).
const FrameworkProfile& DefaultFrameworkFor(const PerfParams& params, int tp, int pp, int zero,
                                            int virtual_stages = 1);

// JSON round trip (nlohmann-json lives in params.cc only).
std::string PerfParamsToJson(const PerfParams& p);
Result<PerfParams> PerfParamsFromJson(const std::string& text, const std::string& source);

}  // namespace tessel
