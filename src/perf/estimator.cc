#include "perf/estimator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <tuple>
#include <vector>

#include "model/flops.h"
#include "perf/collective.h"
#include "perf/compute.h"
#include "perf/layer_costs.h"
#include "perf/memory.h"
#include "perf/pipeline_schedule.h"

namespace tessel {

namespace {

using layer_costs::ComputeLayers;
using layer_costs::Ctx;
using layer_costs::LayerCost;
using layer_costs::LayerSet;
using layer_costs::StridedGroup;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A pipeline stage's per-micro-batch cost; `copies` stages cost the same.
struct Stage {
  LayerCost cost;
  int index = 0;  // position in the pipeline, 0 = first
  int copies = 1;
};

// The framework a request names, else the one its plan implies.
const FrameworkProfile& FrameworkOf(const EstimateRequest& req, const PerfParams& params) {
  const ParallelPlan& p = req.plan;
  return req.framework ? *req.framework : DefaultFrameworkFor(params, p.tp, p.pp, p.zero, p.virtual_stages);
}

// Memory of the busiest stage (the one holding the most state +
// activations): every stage's state, sharded by ZeRO, and activations.
MemoryBreakdown BusiestStageMemory(const EstimateRequest& req, const FrameworkProfile& fw, const PerfParams& params,
                                   const std::vector<Stage>& stages, const StateBytesPerParam& sb,
                                   double expert_params, bool gather_once) {
  const ParallelPlan& p = req.plan;
  const ModelSpec& m = *req.model;
  MemoryBreakdown best;
  for (size_t i = 0; i < stages.size(); ++i) {
    const LayerCost& st = stages[i].cost;
    double st_expert = expert_params;
    double st_dense = std::max(0.0, st.params - st_expert);
    double d_shard = p.dp, e_shard = std::max(1, p.dp / p.ep);
    MemoryBreakdown mem;
    // FP8 runs are taken to keep their weights in FP8 (Transformer
    // Engine's fp8_model_init, as NeMo's FP8 recipes with fp8_param_gather:
    // the FP8 weight and its transpose, 2 bytes per parameter as a 16-bit
    // copy would take, beside the optimizer's fp32 master weights).
    mem.weights_gib = (p.zero == 3 ? st_dense / d_shard + st_expert / e_shard : st.params) * sb.weights / kGiB;
    if (gather_once) {  // the whole stage gathered for the step
      mem.weights_gib += st.params * sb.weights / kGiB;
    } else if (p.zero == 3) {  // the current layer and the prefetched ones, gathered
      double per_layer = st.params / std::max(1, m.NumLayers() / p.pp);
      double live = (1 + std::max(1, fw.zero3_prefetch)) * per_layer;
      if (fw.zero3_max_live_params > 0) live = std::min(live, fw.zero3_max_live_params);
      mem.weights_gib += live * sb.weights / kGiB;
    }
    mem.gradients_gib = (p.zero >= 2 ? st_dense / d_shard + st_expert / e_shard : st.params) * sb.gradients / kGiB;
    // ... and its gradients accumulated whole, in fp32, until the last
    // backward's reduce-scatter.
    if (gather_once) mem.gradients_gib += st.params * 4.0 / kGiB;
    mem.optimizer_gib = (p.zero >= 1 ? st_dense / d_shard + st_expert / e_shard : st.params) * sb.optimizer / kGiB;
    // The first stage holds the most micro-batches in flight; later stages
    // fewer (p - i under 1F1B).
    double in_flight = InFlightMicroBatches(p.pp - stages[i].index, p.num_micro_batches, p.virtual_stages);
    mem.in_flight_micro_batches = in_flight;
    mem.activations_gib = (st.act_bytes * in_flight + st.work_bytes) / kGiB;
    mem.gradients_beside_activations = !(fw.gradients_freed_each_step && p.dp == 1 && p.num_micro_batches == 1);
    double allocated = mem.weights_gib + mem.optimizer_gib +
                       (mem.gradients_beside_activations ? mem.gradients_gib + mem.activations_gib
                                                         : std::max(mem.gradients_gib, mem.activations_gib));
    mem.overhead_gib = params.memory_overhead_gib + fw.fragmentation * allocated;
    mem.total_gib = allocated + mem.overhead_gib;
    if (mem.total_gib > best.total_gib) best = mem;
  }
  best.capacity_gib = req.topology.gpu->memory_gib;
  return best;
}

// The estimate's memory, whether it fits, and (explain) why not.
void SetMemory(Estimate& est, const MemoryBreakdown& memory, const Topology& topo, bool explain) {
  est.memory = memory;
  est.memory_gib_per_gpu = memory.total_gib;
  est.fits = memory.total_gib <= topo.gpu->memory_gib;
  if (!est.fits && explain) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "needs %.1f GiB per GPU (weights %.1f, gradients %.1f, optimizer %.1f, "
                  "activations %.1f, overhead %.1f) but %s has %.0f GiB",
                  memory.total_gib, memory.weights_gib, memory.gradients_gib, memory.optimizer_gib,
                  memory.activations_gib, memory.overhead_gib, topo.gpu->name.c_str(), topo.gpu->memory_gib);
    est.reason = buf;
  }
}

}  // namespace

struct EstimateMemo::Impl {
  // What the layer costs depend on beside the plan (ComputeLayers): the
  // estimator's parameters, the model and the GPU.
  using ScopeKey = std::tuple<const PerfParams*, const ModelSpec*, const GpuSpec*>;
  // ... and of the plan: framework, t, micro-batch, expert parallelism,
  // recompute (a CNN's selective as none), precision, d where the framework synchronises a CNN's
  // BatchNorm (else 0), and, where a layer has collectives (t > 1, experts
  // spread, BatchNorm synchronised), the node (GPUs, link), the network and
  // the GPUs per node the job uses (else 0): not the GPU count otherwise.
  using Key = std::tuple<const FrameworkProfile*, int, int, int, int, int, int, int, int, int, double>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = std::hash<const void*>()(std::get<0>(k));
      auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
      std::apply([&](const FrameworkProfile*, auto... rest) { (mix(std::hash<decltype(rest)>()(rest)), ...); }, k);
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  struct Scope {
    double model_flops_per_sample = 0;
    std::unordered_map<Key, LayerSet, KeyHash> layers;
  };
  std::map<ScopeKey, Scope> scopes;
  Scope* scope = nullptr;
  ScopeKey scope_key{};
  size_t entries = 0;
  // Layer sets kept before the memo forgets them all. Small on purpose: a
  // memo that keeps growing costs a page fault per 4 KiB of new heap, and
  // reusing freed memory is cheaper than keeping rarely asked layer sets
  // (the sizes tried: docs/development-notes.md, issue 40).
  static constexpr size_t kMaxEntries = 1 << 11;

  void Bind(const EstimateRequest& req, const PerfParams& estimator_params) {
    const Topology& t = req.topology;
    ScopeKey key{&estimator_params, req.model, t.gpu};
    if (scope != nullptr && key == scope_key) return;
    auto [it, added] = scopes.try_emplace(key);
    if (added) it->second.model_flops_per_sample = ModelFlopsPerSample(*req.model);
    scope = &it->second;
    scope_key = key;
  }

  // The first of `params`' frameworks whose CNN layer costs equal `fw`'s
  // (CnnBlockCost and ComputeModel read of a framework, for a CNN, only
  // kernel_efficiency, native_kernels and global_batch_norm), else `fw`.
  std::unordered_map<const FrameworkProfile*, const FrameworkProfile*> cnn_alike;
  std::pair<const FrameworkProfile*, const FrameworkProfile*> last_alike{nullptr, nullptr};
  const FrameworkProfile* CnnAlike(const FrameworkProfile& fw, const PerfParams& params) {
    if (last_alike.first == &fw) return last_alike.second;
    auto [it, added] = cnn_alike.try_emplace(&fw, &fw);
    if (added) {
      for (const FrameworkProfile& f : params.frameworks) {
        if (f.kernel_efficiency == fw.kernel_efficiency && f.native_kernels == fw.native_kernels &&
            f.global_batch_norm == fw.global_batch_norm) {
          it->second = &f;
          break;
        }
      }
    }
    last_alike = {&fw, it->second};
    return it->second;
  }

  const LayerSet& Layers(const Ctx& c) {
    const ParallelPlan& p = c.plan;
    const ModelSpec& m = *c.req.model;
    const bool bn_sync = m.kind == ModelKind::kCnn && c.fw.global_batch_norm;
    const bool grouped = p.tp > 1 || (m.kind == ModelKind::kTransformer && m.tf.IsMoe() && p.ep > 1) ||
                         (bn_sync && p.dp > 1);
    // A CNN block recomputes all or nothing (CnnBlockCost): selective
    // recompute's layer costs are those of none. And its costs read of the
    // framework only its kernels' efficiency and whether it synchronises
    // BatchNorm: frameworks alike in those share layer sets.
    const bool cnn = m.kind == ModelKind::kCnn;
    const Recompute recompute = cnn && p.recompute == Recompute::kSelective ? Recompute::kNone : p.recompute;
    Key key{cnn ? CnnAlike(c.fw, c.params) : &c.fw,
            p.tp,
            p.micro_batch,
            p.ep,
            static_cast<int>(recompute),
            static_cast<int>(p.precision),
            bn_sync ? p.dp : 0,
            grouped ? c.gpn : 0,
            grouped ? c.topo.gpus_per_node : 0,
            grouped ? static_cast<int>(c.topo.intra) : 0,
            grouped ? c.topo.network_gbps : 0.0};
    auto it = scope->layers.find(key);
    if (it != scope->layers.end()) return it->second;
    if (entries >= kMaxEntries) {
      for (auto& [k, sc] : scopes) sc.layers.clear();
      entries = 0;
    }
    ++entries;
    return scope->layers.emplace(key, ComputeLayers(c)).first->second;
  }
};

EstimateMemo::EstimateMemo() : impl_(std::make_unique<Impl>()) {}
EstimateMemo::~EstimateMemo() = default;

bool UsesFusedAttention(const GpuSpec& gpu, Precision precision, const FrameworkProfile& framework) {
  return framework.attention != AttentionKernel::kNone && gpu.HasFusedAttention() &&
         ActivationBytes(precision) == 2.0;
}

Status ValidatePlan(const EstimateRequest& req) {
  const ParallelPlan& p = req.plan;
  const ModelSpec& m = *req.model;
  auto bad = [](std::string s) { return InvalidArgument(std::move(s)); };
  if (req.gpus <= 0) return bad("--gpus: expected a positive integer, got " + std::to_string(req.gpus));
  if (req.global_batch <= 0)
    return bad("--global-batch: expected a positive integer, got " + std::to_string(req.global_batch));
  if (p.dp <= 0 || p.tp <= 0 || p.pp <= 0) return bad("--dp/--tp/--pp: must be positive integers");
  if (p.dp * p.tp * p.pp != req.gpus) {
    return bad("d*t*p = " + std::to_string(p.dp) + "*" + std::to_string(p.tp) + "*" +
               std::to_string(p.pp) + " = " + std::to_string(p.dp * p.tp * p.pp) +
               " != --gpus " + std::to_string(req.gpus));
  }
  if (p.tp > req.topology.gpus_per_node) {
    return bad("--tp " + std::to_string(p.tp) + ": tensor parallelism must stay inside a node (" +
               std::to_string(req.topology.gpus_per_node) + " GPUs per node)");
  }
  if (req.global_batch % p.dp != 0) {
    return bad("--global-batch " + std::to_string(req.global_batch) + " is not divisible by d = " +
               std::to_string(p.dp));
  }
  int per_replica = req.global_batch / p.dp;
  if (p.micro_batch <= 0 || per_replica % p.micro_batch != 0) {
    return bad("--micro-batch " + std::to_string(p.micro_batch) +
               ": must divide the per-replica batch " + std::to_string(per_replica) +
               " (global batch / d)");
  }
  if (p.num_micro_batches != per_replica / p.micro_batch) {
    return bad("num_micro_batches " + std::to_string(p.num_micro_batches) +
               " != global batch / (d * micro batch) = " + std::to_string(per_replica / p.micro_batch));
  }
  // The framework named, else the one the plan implies (its mechanisms are
  // not fitted, so the embedded profiles stand for any parameters).
  const FrameworkProfile& fw = FrameworkOf(req, DefaultPerfParams());
  int layers = m.NumLayers();
  if (p.pp > layers) {
    return bad("--pp " + std::to_string(p.pp) + ": more stages than the model's " +
               std::to_string(layers) + " layers");
  }
  if (p.virtual_stages < 1) return bad("--virtual-stages: must be >= 1");
  if (p.virtual_stages > 1) {
    if (p.pp < 2) return bad("--virtual-stages > 1 needs --pp >= 2");
    const int chunks = p.pp * p.virtual_stages;
    if (chunks > layers) {
      return bad("--virtual-stages " + std::to_string(p.virtual_stages) + ": p*v = " + std::to_string(chunks) +
                 " virtual stages but the model has " + std::to_string(layers) + " layers");
    }
    if (!fw.SplitsLayers(layers, p.pp, p.virtual_stages)) {
      return bad("--virtual-stages " + std::to_string(p.virtual_stages) + ": layers (" +
                 std::to_string(layers) + ") must be divisible by p*v = " + std::to_string(chunks) + " under " +
                 fw.name + " (--framework megatron places layers unevenly)");
    }
    if (p.num_micro_batches % p.pp != 0) {
      return bad("--virtual-stages: the interleaved schedule needs the number of micro-batches (" +
                 std::to_string(p.num_micro_batches) + ") to be a multiple of p = " +
                 std::to_string(p.pp));
    }
  }
  if (p.virtual_stages > 1 && req.framework != nullptr && !req.framework->interleaved_pipeline) {
    return bad("--virtual-stages " + std::to_string(p.virtual_stages) + ": framework " + req.framework->name +
               " has no interleaved pipeline schedule; use --virtual-stages 1 or --framework megatron");
  }
  if (p.zero < 0 || p.zero > 3) return bad("--zero: expected 0, 1, 2 or 3, got " + std::to_string(p.zero));
  if (req.framework != nullptr && p.zero > req.framework->max_zero) {
    return bad("--zero " + std::to_string(p.zero) + ": framework " + req.framework->name +
               " shards at most ZeRO stage " + std::to_string(req.framework->max_zero) +
               (req.framework->max_zero == 1 ? " (its distributed optimizer)" : "") +
               "; use --framework fsdp or deepspeed for deeper sharding");
  }
  if (m.kind == ModelKind::kTransformer) {
    if (m.tf.heads % p.tp != 0) {
      return bad("--tp " + std::to_string(p.tp) + ": must divide the number of attention heads (" +
                 std::to_string(m.tf.heads) + ")");
    }
    if (m.tf.IsMoe()) {
      if (p.ep < 1 || p.dp % p.ep != 0 || m.tf.experts % p.ep != 0) {
        return bad("--ep " + std::to_string(p.ep) + ": must divide both d (" + std::to_string(p.dp) +
                   ") and the number of experts (" + std::to_string(m.tf.experts) + ")");
      }
    } else if (p.ep != 1) {
      return bad("--ep: expert parallelism needs an MoE model");
    }
  } else if (p.ep != 1) {
    return bad("--ep: expert parallelism needs an MoE model");
  }
  if (p.precision == Precision::kFp8 && !fw.fp8) {
    return bad("--precision fp8: framework " + fw.name +
               " trains in 16 bits only; use --framework megatron (Transformer Engine) or fsdp (float8)");
  }
  if (req.topology.gpu->PeakTflops(p.precision) <= 0) {
    return bad(std::string("--precision ") + PrecisionName(p.precision) + ": not supported by " +
               req.topology.gpu->name + " (" + req.topology.gpu->arch + ")");
  }
  return Status::Ok();
}

Result<Estimate> Estimator::Run(const EstimateRequest& req) const {
  if (req.model == nullptr || req.topology.gpu == nullptr) return InvalidArgument("estimate: model and gpu are required");
  TESSEL_RETURN_IF_ERROR(ValidatePlan(req));
  return RunUnchecked(req);
}

// Pipelines this deep or deeper are priced by their schedule.
constexpr int kScheduledPipelineStages = 8;

Estimate Estimator::RunUnchecked(const EstimateRequest& req) const {
  const ParallelPlan& p = req.plan;
  const ModelSpec& m = *req.model;
  const Topology& topo = req.topology;
  const FrameworkProfile& fw = FrameworkOf(req, params_);
  ComputeModel cm(*topo.gpu, p.precision, params_, fw);
  CollectiveModel coll(topo, params_);
  ActivationOptions act;
  act.precision = p.precision;
  act.fused_attention = UsesFusedAttention(*topo.gpu, p.precision, fw);
  act.dropout = fw.dropout && (m.kind != ModelKind::kTransformer || m.tf.dropout);
  act.recompute = p.recompute;
  act.op_level_selective = fw.op_level_selective;
  act.fp8_linear_inputs = cm.fp8_linear();
  act.fp32_residual = fw.autocast_fp32_residual && cm.elem_bytes() < 4;  // 16-bit activations only
  act.attention_output_copy = fw.attention_output_copy && act.fused_attention;
  Ctx c{req, p, topo, cm, coll, params_, std::min(topo.gpus_per_node, req.gpus), fw, act};

  // Stage costs. Transformers: the first, one middle (standing for the p-2
  // alike) and the last stage; CNNs: every stage of the balanced partition.
  EstimateMemo::Impl* memo = req.memo ? req.memo->impl_.get() : nullptr;
  if (memo) memo->Bind(req, params_);
  std::optional<LayerSet> own;
  const LayerSet& layer_set = memo ? memo->Layers(c) : own.emplace(ComputeLayers(c));
  // Every term beyond the slowest stage's M micro-batches is >= 0, and the
  // slowest stage takes at least the mean: a plan whose M x (all layers / p)
  // already exceeds the caller's bound cannot come within it (nor, below,
  // one whose M x slowest stage does). Nothing else is estimated then.
  auto pruned_estimate = [&] {
    Estimate est;
    est.pruned = true;
    est.fits = false;
    est.plan = p;
    return est;
  };
  if (req.prune_above > 0 &&
      p.num_micro_batches * layer_set.total_s / p.pp + params_.iteration_overhead_s > req.prune_above)
    return pruned_estimate();
  // Scratch kept between estimates (an estimate allocates nothing once warm).
  thread_local std::vector<Stage> stages;
  thread_local std::vector<PipelineStageTime> times;
  thread_local std::vector<double> slack;
  stages.clear();
  if (m.kind == ModelKind::kTransformer) {
    const TransformerShape& s = m.tf;
    const LayerCost &dense = layer_set.dense, &moe = layer_set.moe;
    double moe_frac = s.IsMoe() ? static_cast<double>(s.MoeLayers()) / s.layers : 0.0;
    const LayerCost &embedding = layer_set.embedding, &head = layer_set.head;
    int base = s.layers / p.pp, extra = s.layers % p.pp;
    stages.push_back({{}, 0, 1});
    if (p.pp > 2) stages.push_back({{}, 1, p.pp - 2});
    if (p.pp > 1) stages.push_back({{}, p.pp - 1, 1});
    // Stages of equal cost (FrameworkProfile::balanced_pipeline_stages): the
    // first and last stages take the layers their share leaves beside the
    // embedding and the head, the middle ones the rest.
    double balanced[3] = {0, 0, 0};  // first, middle, last
    const bool is_balanced = fw.balanced_pipeline_stages && p.pp > 1;
    if (is_balanced) {
      LayerCost mean;
      mean.Add(dense, 1 - moe_frac);
      if (s.IsMoe()) mean.Add(moe, moe_frac);
      const double layer_s = mean.Time(), total = s.layers * layer_s + embedding.Time() + head.Time();
      const double share = total / p.pp;
      double first = std::clamp((share - embedding.Time()) / layer_s, 0.0, static_cast<double>(s.layers));
      double last = std::clamp((share - head.Time()) / layer_s, 0.0, s.layers - first);
      if (p.pp == 2) last = s.layers - first;
      double middle = p.pp > 2 ? (s.layers - first - last) / (p.pp - 2) : 0.0;
      balanced[0] = first;
      balanced[1] = middle;
      balanced[2] = last;
    }
    for (Stage& st : stages) {
      double layers = base + (st.index < extra ? 1 : 0);
      if (is_balanced) layers = st.index == 0 ? balanced[0] : st.index == p.pp - 1 ? balanced[2] : balanced[1];
      st.cost.Add(dense, layers * (1 - moe_frac));
      if (s.IsMoe()) st.cost.Add(moe, layers * moe_frac);
      if (st.index == 0) st.cost.Add(embedding, 1);
      if (st.index == p.pp - 1) st.cost.Add(head, 1);
    }
  } else {
    const std::vector<LayerCost>& parts = layer_set.Stages(p.pp);
    for (size_t i = 0; i < parts.size(); ++i) stages.push_back({parts[i], static_cast<int>(i), 1});
  }

  // Memory first (it depends on the stages' parameters and activations,
  // not on time): a plan that does not fit is priced no further when the
  // caller wants only plans that fit.
  const StateBytesPerParam sb = StateBytes(p.precision, m.optimizer);
  double expert_params = 0;
  if (m.kind == ModelKind::kTransformer && m.tf.IsMoe()) {
    const auto& s = m.tf;
    double ffn_params = (s.gated_ffn ? 3.0 : 2.0) * s.hidden * s.ffn_hidden;
    expert_params = (static_cast<double>(s.MoeLayers()) / p.pp) * (s.experts / static_cast<double>(p.ep)) *
                    ffn_params / p.tp;
  }
  const bool gather_once = p.zero == 3 && p.pp > 1 && fw.zero3_gather_once_under_pipeline;
  const MemoryBreakdown memory = BusiestStageMemory(req, fw, params_, stages, sb, expert_params, gather_once);
  if (req.time_fitting_only && !(memory.total_gib <= topo.gpu->memory_gib)) {
    Estimate est;
    est.plan = p;
    est.framework = fw.name;
    SetMemory(est, memory, topo, req.explain);
    return est;
  }

  // BF16 gradient accumulation outside the backward kernels (DeepSpeed's
  // BF16_Optimizer after every micro-batch; it serves ZeRO 0 and 1, stages
  // 2 and 3 have their own partitioned optimizers): a memory-bound pass over
  // the stage's parameters, two launches per parameter tensor (a transformer
  // layer holds about twelve: four weight matrices, their biases, two
  // LayerNorms' scale and shift).
  if (fw.bf16_grad_accum_bytes > 0 && p.precision == Precision::kBf16 && p.zero <= 1) {
    for (Stage& st : stages) {
      double tensors = m.kind == ModelKind::kTransformer
                           ? 12.0 * std::max(1, m.tf.layers / p.pp)
                           : 4.0 * std::max<size_t>(1, m.cnn.blocks.size() / std::max(1, p.pp));
      st.cost.bwd_s += cm.Elementwise(st.cost.params * fw.bf16_grad_accum_bytes, 2 * tensors);
    }
  }

  // Pipeline transfers: one activation per micro-batch each way per stage.
  double p2p = 0;
  if (p.pp > 1) {
    double bytes = 0;
    // Each tensor-parallel rank sends its 1/t (scatter/gather) or the whole
    // replicated activation.
    const double share = fw.p2p_scatter_gather ? p.tp : 1.0;
    if (m.kind == ModelKind::kTransformer) {
      bytes = static_cast<double>(p.micro_batch) * m.tf.seq_len * m.tf.hidden * cm.elem_bytes() / share;
    } else {  // the largest activation crossing a stage boundary
      for (size_t i = 0; i + 1 < stages.size(); ++i) bytes = std::max(bytes, stages[i].cost.out_bytes / share);
    }
    int stage_width = p.tp * p.dp;
    bool cross = stage_width >= topo.gpus_per_node || req.gpus > topo.gpus_per_node;
    GroupShape g{2, cross ? 1 : 2, cross ? std::max(1, std::min(c.gpn, stage_width)) : 1};
    p2p = 2 * coll.Time(Collective::kSendRecv, bytes, g) * p.virtual_stages;
  }

  size_t worst = 0;
  double sum = 0, worst_t = -1;
  for (size_t i = 0; i < stages.size(); ++i) {
    double t = stages[i].cost.Time() + p2p;
    sum += stages[i].copies * t;
    if (t > worst_t) {
      worst_t = t;
      worst = i;
    }
  }
  const double M = p.num_micro_batches;
  const double s_max = worst_t;
  if (req.prune_above > 0 && M * s_max + params_.iteration_overhead_s > req.prune_above) return pruned_estimate();
  // Deep pipelines (p >= 8) priced step by step (pipeline_schedule.h):
  // each stage's forward and backward with their collectives and its half
  // of the sends each way. The closed form ((p - 1) / v mean stage times of
  // bubble) is what the schedule gives for equal stages; shallower
  // pipelines keep it (the schedule's placing costs about a microsecond per
  // stage and micro-batch group, which the simulator's planners pay on
  // every estimate), and it is the fallback.
  double pipe = M * s_max + (p.pp - 1) * (sum / p.pp) / p.virtual_stages;
  if (p.pp >= kScheduledPipelineStages) {
    times.clear();
    for (const Stage& st : stages) {
      const LayerCost& lc = st.cost;
      PipelineStageTime t{lc.fwd_s + lc.tp_fwd_s + lc.ep_s / 2 + p2p / 2,
                          lc.bwd_s + lc.recompute_s + lc.tp_bwd_s + lc.ep_s / 2 + p2p / 2};
      times.insert(times.end(), st.copies, t);
    }
    if (req.prune_above > 0) {
      // Stage i can start only once micro-batch 0 has gone forward through
      // the stages before it, is then busy M (forward + backward), and its
      // last backward still has to go back through them: the schedule takes
      // at least max_i [sum_{j<i} (f_j + b_j) / v + M (f_i + b_i)] (each op
      // of an interleaved chunk costs 1/v). Where the schedule cannot be
      // placed the closed form stands, so the bound is the smaller of the two.
      double before = 0, bound = 0;
      for (const PipelineStageTime& t : times) {
        bound = std::max(bound, before / p.virtual_stages + M * (t.fwd_s + t.bwd_s));
        before += t.fwd_s + t.bwd_s;
      }
      if (std::min(bound, pipe) + params_.iteration_overhead_s > req.prune_above) return pruned_estimate();
    }
    double scheduled = PipelineIterationTime(times, p.num_micro_batches, p.virtual_stages);
    if (scheduled > 0) pipe = scheduled;
  }
  const double bubble = pipe - M * s_max;
  const LayerCost& ws = stages[worst].cost;

  // Data-parallel synchronisation. Every stage's data-parallel group
  // reduces its own stage's gradients once its last backward is done, all
  // stages at once; the slowest one's exposed part (and its optimizer step)
  // lengthens the iteration. The time-worst stage need not hold the most
  // parameters: a CNN's early, high-resolution stages are slow and small.
  // Frameworks that reduce gradients only after the last micro-batch
  // (DeepSpeed's pipeline engine) hide nothing.
  const double ov = fw.dp_overlap ? params_.dp_overlap_fraction : 0.0;
  // {total, exposed} seconds of one stage's gradient sync over `group` ranks.
  auto sync = [&](const LayerCost& st, double params, int group) -> std::pair<double, double> {
    if (group <= 1 || params <= 0) return {0.0, 0.0};
    GroupShape g = StridedGroup(c, group, p.tp);
    double grad_bytes = params * sb.gradients;
    double weight_bytes = params * sb.weights;
    if (p.zero == 3) {
      // One collective per gathered unit. Where the framework gathers each
      // weight matrix by itself (zero3_collectives_per_layer > 1: DeepSpeed)
      // each pays the ring's latency; a flat per-layer buffer (FSDP) is
      // priced as the stage's weights at once, its per-layer latency hidden
      // by prefetching.
      double units = m.kind == ModelKind::kTransformer && fw.zero3_collectives_per_layer > 1
                         ? std::max(1.0, static_cast<double>(m.NumLayers()) / p.pp) *
                               fw.zero3_collectives_per_layer
                         : 1.0;
      double ag = units * coll.Time(Collective::kAllGather, weight_bytes / units, g);
      double rs = units * coll.Time(Collective::kReduceScatter, grad_bytes / units, g);
      // Under pipelining the framework may gather once per step and
      // reduce-scatter once after the last backward, every unit at once
      // (FrameworkProfile::zero3_gather_once_under_pipeline): the gather
      // hides behind the first micro-batch's forward, the reduce-scatter
      // only behind the cool-down (slack, below).
      if (gather_once) {
        double pf_once = fw.zero3_prefetch > 0 ? params_.dp_overlap_fraction : 0.0;
        return {ag + rs, std::max(0.0, ag - pf_once * st.fwd_s) + rs};
      }
      double total = M * (2 * ag + rs);
      // Gathers prefetched `zero3_prefetch` layers ahead hide behind the
      // compute of the layers before them; none hide without prefetch.
      double pf = fw.zero3_prefetch > 0 ? params_.dp_overlap_fraction : 0.0;
      double exposed = M * (std::max(0.0, ag - pf * st.fwd_s) +
                            std::max(0.0, ag + rs - pf * (st.bwd_s + st.recompute_s)));
      return {total, exposed};
    }
    double overlap_window = ov * (st.bwd_s + st.recompute_s);
    if (p.zero >= 1) {
      double rs = fw.zero_allreduce_with_accumulation && M > 1
                      ? coll.Time(Collective::kAllReduce, grad_bytes, g)
                      : coll.Time(Collective::kReduceScatter, grad_bytes, g);
      double ag = coll.Time(Collective::kAllGather, weight_bytes, g);
      return {rs + ag, std::max(0.0, rs - overlap_window) + std::max(0.0, ag - ov * st.fwd_s)};
    }
    double ar = coll.Time(Collective::kAllReduce, grad_bytes, g);
    return {ar, std::max(0.0, ar - overlap_window)};
  };
  // Optimizer: Adam reads/writes master weights, m, v, gradients (and writes
  // the low-precision copy) for the local shard.
  const double opt_bytes_per_param = (sb.optimizer + sb.gradients) * 2 + sb.weights;
  double dp_total = 0, dp_exposed = 0, dp_interference = 0, optimizer = 0, tail = -1;
  // In the pipeline's cool-down the last micro-batch's backward runs from
  // the last stage to the first: stage k finishes the backward passes of
  // stages 0..k-1 (one micro-batch each, in 1/v chunks when interleaved)
  // before the first stage does, and its sync and optimizer step run in
  // that time. (Stages stand for their kind: a middle stage is taken at
  // index 1, the least slack of the p-2 alike.)
  slack.assign(stages.size(), 0.0);
  if (m.kind == ModelKind::kTransformer) {
    for (size_t i = 0; i < slack.size(); ++i) {
      double before = 0;
      for (size_t j = 0; j < stages.size(); ++j)
        if (stages[j].index < stages[i].index)
          before += std::min(stages[j].copies, stages[i].index - stages[j].index) *
                    (stages[j].cost.bwd_s + stages[j].cost.recompute_s + p2p / 2);
      slack[i] = before / p.virtual_stages;
    }
  } else {
    // A CNN's stages are each their own, in order: the same sums, running.
    double before = 0;
    for (size_t i = 0; i < slack.size(); ++i) {
      slack[i] = before / p.virtual_stages;
      before += stages[i].cost.bwd_s + stages[i].cost.recompute_s + p2p / 2;
    }
  }
  for (size_t si = 0; si < slack.size(); ++si) {
    const Stage& st = stages[si];
    double dense_params = std::max(0.0, st.cost.params - expert_params);
    auto [d_total, d_exposed] = sync(st.cost, dense_params, p.dp);
    auto [e_total, e_exposed] = sync(st.cost, expert_params, p.dp / p.ep);
    double shard_dense = p.zero >= 1 ? dense_params / p.dp : dense_params;
    double shard_expert = p.zero >= 1 ? expert_params / std::max(1, p.dp / p.ep) : expert_params;
    double opt = cm.Elementwise((shard_dense + shard_expert) * opt_bytes_per_param, 4);
    double exposed = std::max(0.0, d_exposed + e_exposed - slack[si]);
    // Communication hidden behind this stage's own backward still takes SMs
    // and memory bandwidth from it (PerfParams::overlap_interference); what
    // the cool-down hides runs while this stage waits.
    double interference = params_.overlap_interference * (d_total + e_total - d_exposed - e_exposed);
    double opt_exposed = std::max(0.0, opt - std::max(0.0, slack[si] - (d_exposed + e_exposed)));
    if (exposed + interference + opt_exposed > tail) {
      tail = exposed + interference + opt_exposed;
      dp_total = d_total + e_total;
      dp_exposed = exposed;
      dp_interference = interference;
      optimizer = opt_exposed;
    }
  }

  Estimate est;
  est.plan = p;
  est.framework = fw.name;
  auto& b = est.breakdown;
  b.compute_s = M * (ws.fwd_s + ws.bwd_s + ws.recompute_s);
  b.recompute_s = M * ws.recompute_s;
  b.tp_comm_s = M * (ws.tp_fwd_s + ws.tp_bwd_s);
  b.ep_comm_s = M * ws.ep_s;
  b.pp_p2p_s = M * p2p;
  b.pp_bubble_s = bubble;
  b.dp_comm_s = dp_total;
  b.dp_comm_exposed_s = dp_exposed;
  b.dp_comm_overlapped_s = dp_total - dp_exposed;
  b.dp_interference_s = dp_interference;
  b.optimizer_s = optimizer;
  b.overhead_s = params_.iteration_overhead_s;
  est.iteration_time_s = pipe + dp_exposed + dp_interference + optimizer + params_.iteration_overhead_s;

  const double T = est.iteration_time_s;
  est.samples_per_s = req.global_batch / T;
  est.tokens_per_s = est.samples_per_s * m.TokensPerSample();
  est.tokens_per_s_per_gpu = est.tokens_per_s / req.gpus;
  double model_flops = (memo ? memo->scope->model_flops_per_sample : ModelFlopsPerSample(m)) * req.global_batch;
  est.model_tflops_per_gpu = model_flops / T / req.gpus / 1e12;
  double hw_flops_per_gpu = 0;
  for (const auto& st : stages) hw_flops_per_gpu = std::max(hw_flops_per_gpu, st.cost.hw_flops);
  est.hardware_tflops_per_gpu = hw_flops_per_gpu * M / T / 1e12;
  est.mfu = est.model_tflops_per_gpu * 1e12 / cm.PeakFlops();

  SetMemory(est, memory, topo, req.explain);
  return est;
}

}  // namespace tessel
