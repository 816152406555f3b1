#include "cluster/framework_args.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

// Where each name comes from (docs/frameworks.md has the same as a table):
//
// Megatron-LM, github.com/NVIDIA/Megatron-LM at d98e8a6 (2026-08): arguments
//   are generated from config dataclass fields, `foo_bar` -> `--foo-bar`
//   (megatron/training/argument_utils.py, ArgumentGroupFactory), unless a
//   field's argparse_meta names it:
//   --tensor-model-parallel-size, --pipeline-model-parallel-size,
//   --expert-model-parallel-size, --fp16, --bf16
//       megatron/core/model_parallel_config.py
//   --recompute-granularity, --recompute-method, --recompute-num-layers,
//   --fp8-format (field `fp8`, argparse_meta)
//       megatron/core/transformer/transformer_config.py; __post_init__
//       rejects full granularity without a method and a layer count
//   --micro-batch-size, --global-batch-size, --train-iters, --save, --load
//       megatron/training/config/training_config.py (TrainingConfig,
//       CheckpointConfig)
//   --num-layers-per-virtual-pipeline-stage, --use-distributed-optimizer
//       megatron/training/arguments.py (validate_args: layers per stage must
//       be a multiple of it; layers a multiple of the pipeline size)
//
// torchtitan v0.2.2 (2026-02-20), the last release reading a TOML job config
//   through --job.config_file (torchtitan/config/manager.py,
//   _maybe_load_toml: the first such flag only; later releases configure
//   runs in Python, commit 9810191). Sections and keys:
//   torchtitan/config/job_config.py (Training, Parallelism, Checkpoint,
//   ActivationCheckpoint, Model). Further constraints:
//   torchtitan/models/llama3/infra/parallelize.py (DDP only as the sole
//   parallelism; fsdp_reshard_after_forward "always"/"never"),
//   torchtitan/distributed/parallel_dims.py (ep borrows from dp_shard; etp
//   1 or tp), torchtitan/distributed/pipeline_parallel.py (virtual stages =
//   ceil((layers + first and last stages' weights) /
//   pipeline_parallel_layers_per_stage); generate_llm_fqn_per_model_part
//   splits layers evenly when both weights are 0), torchtitan/train.py (gradient
//   accumulation = global / (local x dp)), torchtitan/components/
//   checkpoint.py (folder joined to dump_folder: an absolute one stays).
//   Converter name "quantize.linear.float8":
//   torchtitan/components/quantization/float8.py.
//
// DeepSpeed, github.com/microsoft/DeepSpeed at 38327e0 (2025-02):
//   --deepspeed, --deepspeed_config: deepspeed/__init__.py
//   (_add_core_arguments, added by deepspeed.add_config_arguments);
//   train_batch_size, train_micro_batch_size_per_gpu,
//   gradient_accumulation_steps, bf16.enabled, fp16.enabled:
//   deepspeed/runtime/constants.py; zero_optimization.stage:
//   deepspeed/runtime/zero/config.py; activation_checkpointing.*:
//   deepspeed/runtime/activation_checkpointing/config.py and
//   docs/_pages/config-json.md. Pipeline + ZeRO-2/3 refused by
//   deepspeed/runtime/pipe/engine.py; its schedule (pipe/schedule.py
//   TrainSchedule) is plain 1F1B.

namespace tessel {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// What each framework refuses; "" when it can express the plan.
std::string MegatronRefusal(const ParallelPlan& p, int zero, int layers) {
  if (zero >= 2) {
    return "ZeRO stage " + Str(zero) +
           ": Megatron's distributed optimizer (--use-distributed-optimizer) shards optimizer state "
           "only (ZeRO-1), and tessel does not render Megatron FSDP; use deepspeed or torchtitan, or a "
           "plan with ZeRO 0 or 1";
  }
  if (p.virtual_stages > 1) {
    int chunks = p.pp * p.virtual_stages;
    if (layers <= 0) {
      return "interleaving (v" + Str(p.virtual_stages) +
             ") needs the model's layer count for --num-layers-per-virtual-pipeline-stage, and it is unknown";
    }
    if (layers % chunks != 0) {
      return "interleaving v" + Str(p.virtual_stages) + " over p" + Str(p.pp) + " needs the model's " +
             Str(layers) + " layers in " + Str(chunks) +
             " equal virtual stages (--num-layers-per-virtual-pipeline-stage); uneven splits are not rendered";
    }
  }
  if (p.pp > 1 && layers > 0 && layers % p.pp != 0) {
    return "p" + Str(p.pp) + " needs the model's " + Str(layers) +
           " layers split evenly over the pipeline (Megatron requires num_layers to be a multiple of "
           "--pipeline-model-parallel-size); uneven splits are not rendered";
  }
  return "";
}

// torchtitan's pipeline_parallel_layers_per_stage giving p x v stages of
// `layers` (stages = ceil(layers / it), embedding and output weighing 0 as
// rendered): layers / (p x v) when it divides, else the smallest that
// works; 0 when none does.
int TorchtitanLayersPerStage(const ParallelPlan& p, int layers) {
  const int stages = p.pp * p.virtual_stages;
  if (layers % stages == 0) return layers / stages;
  for (int per = 1; per <= layers; ++per) {
    if ((layers + per - 1) / per == stages) return per;
  }
  return 0;
}

std::string TorchtitanRefusal(const ParallelPlan& p, int zero, int layers) {
  if (zero == 1) {
    return "ZeRO stage 1: FSDP2 (fully_shard) shards parameters together with gradients and optimizer "
           "state, never optimizer state alone; use ZeRO 2 or 3 (data_parallel_shard_degree), or "
           "megatron or deepspeed";
  }
  if (zero == 0 && p.dp > 1 && (p.tp > 1 || p.pp > 1)) {
    return "ZeRO stage 0 beside tensor or pipeline parallelism: torchtitan's unsharded data "
           "parallelism (DDP, data_parallel_replicate_degree) runs only as the sole parallelism; use ZeRO 2 "
           "or 3 (FSDP)";
  }
  if (p.ep > 1 && zero < 2) {
    return "expert parallelism with ZeRO stage " + Str(zero) +
           ": torchtitan's expert_parallel_degree borrows ranks from the sharded data-parallel degree "
           "(data_parallel_shard_degree), which needs ZeRO 2 or 3";
  }
  if (p.precision == Precision::kFp16) {
    return "fp16: training.mixed_precision_param accepts bfloat16 or float32 only";
  }
  if (p.virtual_stages > 1) {
    if (layers <= 0) {
      return "interleaving (v" + Str(p.virtual_stages) +
             ") needs the model's layer count for pipeline_parallel_layers_per_stage, and it is unknown";
    }
    if (TorchtitanLayersPerStage(p, layers) == 0) {
      return "interleaving v" + Str(p.virtual_stages) + " over p" + Str(p.pp) +
             ": no pipeline_parallel_layers_per_stage cuts the model's " + Str(layers) + " layers into " +
             Str(p.pp * p.virtual_stages) + " stages";
    }
  }
  return "";
}

std::string DeepspeedRefusal(const ParallelPlan& p, int zero) {
  if (p.tp > 1) {
    return "tensor parallelism (t" + Str(p.tp) +
           ") is not DeepSpeed's own: it comes from model code such as Megatron-DeepSpeed's; use megatron, "
           "or a plan with t1";
  }
  if (p.pp > 1 && zero >= 2) {
    return "ZeRO stage " + Str(zero) +
           " with pipeline parallelism: DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (\"ZeRO-2 and "
           "ZeRO-3 are incompatible with pipeline parallelism\"); use ZeRO 0 or 1, or torchtitan";
  }
  if (p.virtual_stages > 1) {
    return "interleaving (v" + Str(p.virtual_stages) +
           "): DeepSpeed's pipeline engine runs plain 1F1B, without virtual stages; use megatron";
  }
  if (p.ep > 1) {
    return "expert parallelism (e" + Str(p.ep) +
           "): DeepSpeed sets it in model code (deepspeed.moe.layer.MoE ep_size), not in its config, and "
           "tessel's environment does not carry it";
  }
  if (p.recompute == Recompute::kSelective) {
    return "selective recompute: DeepSpeed recomputes whatever the model code wraps in "
           "deepspeed.checkpointing.checkpoint, and has no setting for recomputing attention only; use "
           "recompute none or full, or megatron";
  }
  if (p.precision == Precision::kFp8) {
    return "fp8: DeepSpeed's config has no FP8 training setting (FP8 comes from Transformer Engine in "
           "model code); use megatron or torchtitan";
  }
  return "";
}

// The ZeRO stage that takes effect: none without data parallelism.
int EffectiveZero(const ParallelPlan& p) { return p.dp > 1 ? p.zero : 0; }

std::vector<std::string> MegatronArgv(const FrameworkInputs& in) {
  const ParallelPlan& p = in.plan;
  std::vector<std::string> a = {"--tensor-model-parallel-size", Str(p.tp), "--pipeline-model-parallel-size",
                                Str(p.pp)};
  if (p.virtual_stages > 1) {
    a.insert(a.end(), {"--num-layers-per-virtual-pipeline-stage", Str(in.model_layers / (p.pp * p.virtual_stages))});
  }
  if (p.ep > 1) a.insert(a.end(), {"--expert-model-parallel-size", Str(p.ep)});
  a.insert(a.end(), {"--micro-batch-size", Str(p.micro_batch), "--global-batch-size",
                     Str(static_cast<int64_t>(p.dp) * p.micro_batch * p.num_micro_batches)});
  if (p.recompute == Recompute::kSelective) {
    a.insert(a.end(), {"--recompute-granularity", "selective"});
  } else if (p.recompute == Recompute::kFull) {
    // Full granularity needs a method and a count: every layer's input kept,
    // the layer recomputed (what tessel's estimator assumes).
    a.insert(a.end(),
             {"--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"});
  }
  if (EffectiveZero(p) == 1) a.push_back("--use-distributed-optimizer");
  switch (p.precision) {
    case Precision::kBf16: a.push_back("--bf16"); break;
    case Precision::kFp16: a.push_back("--fp16"); break;
    case Precision::kFp8: a.insert(a.end(), {"--bf16", "--fp8-format", "hybrid"}); break;
    case Precision::kFp32:
    case Precision::kTf32: break;  // Megatron's default: fp32 parameters and math
  }
  a.insert(a.end(), {"--train-iters", Str(in.total_iterations)});
  if (!in.checkpoint_dir.empty()) a.insert(a.end(), {"--save", in.checkpoint_dir, "--load", in.checkpoint_dir});
  return a;
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string TorchtitanToml(const FrameworkInputs& in) {
  const ParallelPlan& p = in.plan;
  const int zero = EffectiveZero(p);
  const bool sharded = p.dp > 1 && zero >= 2;
  std::string t = "# Written by tessel serve: plan " + p.ToString() + " as a torchtitan (v0.2) job config.\n";
  auto line = [&](const std::string& key, const std::string& value) { t += key + " = " + value + "\n"; };
  t += "\n[training]\n";
  // With a pipeline one rank's batch is all its micro-batches (pipelined);
  // without one, micro-batches are gradient-accumulation steps.
  line("local_batch_size", Str(p.pp > 1 ? static_cast<int64_t>(p.micro_batch) * p.num_micro_batches : p.micro_batch));
  line("global_batch_size", Str(static_cast<int64_t>(p.dp) * p.micro_batch * p.num_micro_batches));
  line("steps", Str(in.total_iterations));
  line("mixed_precision_param", TomlString(p.precision == Precision::kFp32 || p.precision == Precision::kTf32
                                               ? "float32"
                                               : "bfloat16"));
  t += "\n[parallelism]\n";
  line("data_parallel_replicate_degree", Str(sharded ? 1 : p.dp));
  line("data_parallel_shard_degree", Str(sharded ? p.dp : 1));
  // ZeRO-3 reshards parameters after forward; ZeRO-2 (SHARD_GRAD_OP) keeps
  // them gathered until backward is done with them.
  if (sharded) line("fsdp_reshard_after_forward", TomlString(zero == 3 ? "always" : "never"));
  line("tensor_parallel_degree", Str(p.tp));
  line("pipeline_parallel_degree", Str(p.pp));
  if (p.pp > 1) {
    line("pipeline_parallel_schedule", TomlString(p.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B"));
    line("pipeline_parallel_microbatch_size", Str(p.micro_batch));
    // Equal transformer layers per stage, as tessel estimates them (the
    // defaults of 1 count the embedding and the output as a layer each).
    line("pipeline_parallel_first_stage_less_layers", "0");
    line("pipeline_parallel_last_stage_less_layers", "0");
    if (p.virtual_stages > 1) {
      line("pipeline_parallel_layers_per_stage", Str(TorchtitanLayersPerStage(p, in.model_layers)));
    }
  }
  if (p.ep > 1) {
    line("expert_parallel_degree", Str(p.ep));
    line("expert_tensor_parallel_degree", Str(p.tp));  // experts split like the dense layers (as estimated)
  }
  t += "\n[activation_checkpoint]\n";
  line("mode", TomlString(p.recompute == Recompute::kFull        ? "full"
                          : p.recompute == Recompute::kSelective ? "selective"
                                                                 : "none"));
  // tessel's selective recompute for PyTorch is op-level selective
  // activation checkpointing (perf/params.cc, the fsdp profile).
  if (p.recompute == Recompute::kSelective) line("selective_ac_option", TomlString("op"));
  if (!in.checkpoint_dir.empty()) {
    t += "\n[checkpoint]\n";
    line("enable", "true");
    line("folder", TomlString(in.checkpoint_dir));
  }
  if (p.precision == Precision::kFp8) {
    t += "\n[model]\n";
    line("converters", "[\"quantize.linear.float8\"]");
  }
  return t;
}

std::string DeepspeedJson(const FrameworkInputs& in) {
  const ParallelPlan& p = in.plan;
  nlohmann::ordered_json j;
  j["train_batch_size"] = static_cast<int64_t>(p.dp) * p.micro_batch * p.num_micro_batches;
  j["train_micro_batch_size_per_gpu"] = p.micro_batch;
  j["gradient_accumulation_steps"] = p.num_micro_batches;
  j["zero_optimization"] = {{"stage", EffectiveZero(p)}};
  if (p.precision == Precision::kBf16) j["bf16"] = {{"enabled", true}};
  if (p.precision == Precision::kFp16) j["fp16"] = {{"enabled", true}};
  if (p.recompute == Recompute::kFull) {
    // Configures deepspeed.checkpointing; the model code decides what it
    // wraps (every layer for full recompute, TESSEL_RECOMPUTE=full).
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"cpu_checkpointing", false},
                                     {"contiguous_memory_optimization", false}};
  }
  return JsonText(j, 2) + "\n";
}

}  // namespace

Status CheckFrameworkPlan(JobFramework framework, const ParallelPlan& plan, int model_layers) {
  std::string why;
  const int zero = EffectiveZero(plan);
  switch (framework) {
    case JobFramework::kTessel: return Status::Ok();
    case JobFramework::kMegatron: why = MegatronRefusal(plan, zero, model_layers); break;
    case JobFramework::kTorchtitan: why = TorchtitanRefusal(plan, zero, model_layers); break;
    case JobFramework::kDeepspeed: why = DeepspeedRefusal(plan, zero); break;
  }
  if (why.empty()) return Status::Ok();
  return InvalidArgument(std::string(JobFrameworkName(framework)) + " cannot express plan " + plan.ToString() +
                         ": " + why);
}

Result<FrameworkArgs> RenderFrameworkArgs(JobFramework framework, const FrameworkInputs& in,
                                          const std::string& config_path) {
  TESSEL_RETURN_IF_ERROR(CheckFrameworkPlan(framework, in.plan, in.model_layers));
  FrameworkArgs out;
  switch (framework) {
    case JobFramework::kTessel: break;
    case JobFramework::kMegatron: out.argv = MegatronArgv(in); break;
    case JobFramework::kTorchtitan:
      out.config_text = TorchtitanToml(in);
      out.argv = {"--job.config_file", config_path};
      break;
    case JobFramework::kDeepspeed:
      out.config_text = DeepspeedJson(in);
      // --deepspeed: the flag user code checks (Megatron-DeepSpeed's
      // `if args.deepspeed`); DeepSpeed itself reads --deepspeed_config.
      out.argv = {"--deepspeed", "--deepspeed_config", config_path};
      break;
  }
  return out;
}

std::string FrameworkConfigPath(JobFramework framework, const std::string& launch_path) {
  const char* ext = framework == JobFramework::kTorchtitan ? ".toml"
                    : framework == JobFramework::kDeepspeed ? ".json"
                                                            : nullptr;
  if (ext == nullptr) return "";
  std::string stem = launch_path;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  return stem + "." + JobFrameworkName(framework) + ext;
}

}  // namespace tessel
