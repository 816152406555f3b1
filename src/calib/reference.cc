#include "calib/reference.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "calib/arena_database.h"
#include "calib/arena_mesh.h"
#include "core/csv.h"
#include "core/strings.h"
#include "model/catalog.h"
#include "model/flops.h"

namespace tessel {

namespace {

// "A100 80GB SXM (DGX A100, Selene)" -> (gpu, node type).
Result<std::pair<const GpuSpec*, const NodeType*>> ParseHardware(const std::string& text) {
  std::string l = ToLower(text);
  std::string gpu, node;
  if (Contains(l, "h200")) {
    gpu = "h200";
    node = "dgx-h200";
  } else if (Contains(l, "h100")) {
    gpu = "h100-sxm";
    node = "dgx-h100";
  } else if (Contains(l, "a100")) {
    gpu = Contains(l, "80gb") ? "a100-80g" : "a100-40g";
    node = gpu == "a100-80g" ? "dgx-a100-80g" : "dgx-a100-40g";
  } else if (Contains(l, "v100")) {
    gpu = Contains(l, "16gb") ? "v100-16g" : "v100-32g";
    node = Contains(l, "dgx-2") ? "dgx-2" : "dgx-1-v100";
  } else {
    return InvalidArgument("unrecognised gpu_type '" + text + "'");
  }
  return std::make_pair(*FindGpu(gpu), *FindNodeType(node));
}

// The inter-node bandwidth a row's `interconnect` states, per node, in
// Gb/s: "8x HDR InfiniBand 200 Gb/s" (NICs per node x rate) or "400 Gbps inter-node" /
// "800 Gb/s per node". Nothing when the text states no per-node figure (the
// node type's default then applies: DGX systems' InfiniBand).
std::optional<double> InterNodeGbps(const std::string& text) {
  static const std::regex kNics("([0-9]+) ?x ?(?:[a-z]+ ){0,2}([0-9]+) ?gb(?:ps|/s)");
  static const std::regex kPerNode("([0-9]+) ?gb(?:ps|/s) (?:inter-node|per node)");
  std::string l = ToLower(text);
  std::smatch m;
  if (std::regex_search(l, m, kNics)) return std::stod(m[1]) * std::stod(m[2]);
  if (std::regex_search(l, m, kPerNode)) return std::stod(m[1]);
  return std::nullopt;
}

// Whether a row's FLOP basis (lower case) counts recomputation ("Megatron
// formula incl. recompute"), not merely names it ("no recompute FLOPs",
// "without recompute", an MFU).
bool BasisCountsRecompute(const std::string& basis) {
  return Contains(basis, "recompute") && !Contains(basis, "mfu") && !Contains(basis, "without") &&
         !Contains(basis, "no recompute");
}

std::optional<Precision> ParsePrecisionText(const std::string& text) {
  std::string l = ToLower(text);
  if (l.empty()) return std::nullopt;
  if (Contains(l, "fp8")) return Precision::kFp8;  // "fp8", "FP8-CS": FP8 linear layers
  if (Contains(l, "bf16") || Contains(l, "bfloat")) return Precision::kBf16;
  if (Contains(l, "fp16") || Contains(l, "mixed") || Contains(l, "amp")) return Precision::kFp16;
  if (Contains(l, "tf32")) return Precision::kTf32;
  if (Contains(l, "fp32")) return Precision::kFp32;
  return std::nullopt;
}

int IntOr0(const CsvTable& t, const CsvRow& r, const char* col, Status* st) {
  auto v = t.GetOptionalDouble(r, col);
  if (!v.ok()) {
    *st = v.status();
    return 0;
  }
  return v->has_value() ? static_cast<int>(std::lround(**v)) : 0;
}

// A short, stable id per publication: leave-one-source-out CV groups on it.
std::string SourceId(const std::string& text) {
  static const std::pair<const char*, const char*> kKnown[] = {
      {"Narayanan et al. 2021", "narayanan2021"},
      {"NVIDIA/Megatron-LM README (Sep 2020)", "megatron-readme-2020"},
      {"NVIDIA/Megatron-LM README 'Performance Benchmarking'", "megatron-core-readme-h100"},
      {"NVIDIA/Megatron-LM README strong-scaling", "megatron-core-readme-h100"},
      {"Korthikanti et al. 2022", "korthikanti2022"},
      {"NVIDIA DeepLearningExamples BERT", "dle-bert"},
      {"NVIDIA DeepLearningExamples ResNet", "dle-resnet50"},
      // published.csv ids of publications calibration.csv already cites:
      // one publication, one group.
      {"megatron-sc21-paper", "narayanan2021"},
      {"megatron-lm-readme", "megatron-readme-2020"},
  };
  for (const auto& [prefix, id] : kKnown)
    if (StartsWith(text, prefix)) return id;
  // published.csv states ids; anything else: a slug of its first words.
  std::string slug;
  for (char ch : ToLower(text)) {
    if (std::isalnum(static_cast<unsigned char>(ch))) slug += ch;
    else if (!slug.empty() && slug.back() != '-') slug += '-';
    if (slug.size() >= 40) break;
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "unknown" : slug;
}

// The framework column -> a PerfParams framework ("" = by plan).
std::string FrameworkName(const std::string& text) {
  std::string l = ToLower(text);
  for (const char* exact : {"megatron", "megatron-legacy", "fsdp", "fsdp-fused", "pytorch", "deepspeed", "alpa"})
    if (l == exact) return exact;
  if (Contains(l, "deepspeed")) return "deepspeed";
  if (Contains(l, "fsdp") && (Contains(l, "fused") || Contains(l, "torch.compile"))) return "fsdp-fused";
  if (Contains(l, "fsdp")) return "fsdp";
  if (Contains(l, "pytorch eager")) return "pytorch";
  if (Contains(l, "alpa")) return "alpa";
  if (Contains(l, "megatron-core") || Contains(l, "nemo") || Contains(l, "megatron-bridge")) return "megatron";
  if (Contains(l, "megatron") || Contains(l, "pytorch (nvidia")) return "megatron-legacy";
  return "";
}

}  // namespace

Status LoadCalibrationCsv(const std::string& path, ReferenceSet* out) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return LoadThroughputCsvText(*text, path, out);
}

Result<std::map<std::string, std::string>> ParseUnusableRows(std::string_view text, const std::string& file) {
  auto table = CsvTable::Parse(text, file);
  if (!table.ok()) return table.status();
  const CsvTable& t = *table;
  for (const char* col : {"file", "row_id", "reason"})
    if (!t.HasColumn(col)) return InvalidArgument(file + ": missing column '" + col + "' (expected file,row_id,reason)");
  std::map<std::string, std::string> out;
  for (const auto& row : t.rows()) {
    auto id = t.GetInt(row, "row_id");
    if (!id.ok()) return id.status();
    if (t.Get(row, "file").empty()) return InvalidArgument(t.Where(row, "file") + ": expected a reference file name");
    if (t.Get(row, "reason").empty()) return InvalidArgument(t.Where(row, "reason") + ": expected the evidence");
    std::string key = t.Get(row, "file") + ":" + std::to_string(*id);
    if (!out.emplace(key, t.Get(row, "reason")).second)
      return InvalidArgument(t.Where(row, "row_id") + ": " + key + " listed twice");
  }
  return out;
}

Status LoadThroughputCsvText(std::string_view text, const std::string& path, ReferenceSet* out) {
  auto unusable = ParseUnusableRows(EmbeddedUnusableRowsCsv(), "unusable-rows.csv");
  if (!unusable.ok()) return unusable.status();
  auto table = CsvTable::Parse(text, path);
  if (!table.ok()) return table.status();
  const CsvTable& t = *table;
  for (const char* col : {"row_id", "model", "layers", "hidden", "heads", "seq_len", "global_batch_seqs",
                          "micro_batch", "grad_accum_or_num_microbatches", "gpu_type", "num_gpus", "t", "p",
                          "d", "vp_interleave", "recompute", "precision", "tflops_per_gpu", "tflops_basis",
                          "samples_per_s", "iter_time_s", "notes"}) {
    if (!t.HasColumn(col)) return InvalidArgument(path + ": missing column '" + col + "'");
  }
  const std::string file = std::filesystem::path(path).filename().string();
  auto opt = [&](const CsvRow& row, const char* col) -> std::string {
    return t.HasColumn(col) ? t.Get(row, col) : std::string();
  };
  auto opt_num = [&](const CsvRow& row, const char* col, Status* st) -> std::optional<double> {
    if (!t.HasColumn(col)) return std::nullopt;
    auto v = t.GetOptionalDouble(row, col);
    if (!v.ok()) {
      *st = v.status();
      return std::nullopt;
    }
    return *v;
  };
  static const std::regex kVocab("vocab (?:size )?([0-9]+)");
  static const std::regex kMemoryFormat("memory format: ([a-z_]+)");
  for (const auto& row : t.rows()) {
    Status st;
    std::string id = file + ":" + t.Get(row, "row_id");
    std::string name = t.Get(row, "model");
    int layers = IntOr0(t, row, "layers", &st), hidden = IntOr0(t, row, "hidden", &st),
        heads = IntOr0(t, row, "heads", &st), seq = IntOr0(t, row, "seq_len", &st);
    int gb = IntOr0(t, row, "global_batch_seqs", &st), mb = IntOr0(t, row, "micro_batch", &st),
        accum = IntOr0(t, row, "grad_accum_or_num_microbatches", &st), n = IntOr0(t, row, "num_gpus", &st);
    int tp = IntOr0(t, row, "t", &st), pp = IntOr0(t, row, "p", &st), dp = IntOr0(t, row, "d", &st),
        vp = IntOr0(t, row, "vp_interleave", &st);
    auto tflops = t.GetOptionalDouble(row, "tflops_per_gpu");
    auto sps = t.GetOptionalDouble(row, "samples_per_s");
    auto iter = t.GetOptionalDouble(row, "iter_time_s");
    auto kv_heads = opt_num(row, "kv_heads", &st), ffn = opt_num(row, "ffn_hidden", &st),
         vocab = opt_num(row, "vocab", &st),
         cp = opt_num(row, "cp", &st), tok_gpu = opt_num(row, "tokens_per_s_per_gpu", &st),
         tok_total = opt_num(row, "tokens_per_s_total", &st), mem_gb = opt_num(row, "memory_GB_per_gpu", &st);
    if (!st.ok()) return st;
    if (!tflops.ok()) return tflops.status();
    if (!sps.ok()) return sps.status();
    if (!iter.ok()) return iter.status();
    if (n <= 0) return InvalidArgument(t.Where(row, "num_gpus") + ": expected a positive integer");

    if (auto u = unusable->find(id); u != unusable->end()) {
      out->skipped.push_back({id, u->second});
      continue;
    }
    ReferenceCase c;
    c.id = id;
    c.source = SourceId(t.Get(row, "source"));
    c.framework = FrameworkName(opt(row, "framework"));
    auto hw = ParseHardware(t.Get(row, "gpu_type"));
    if (!hw.ok()) {
      out->skipped.push_back({id, hw.status().message()});
      continue;
    }
    if (cp && *cp > 1) {
      out->skipped.push_back({id, "context parallelism (cp > 1) is not modelled"});
      continue;
    }
    c.topology.gpu = hw->first;
    c.topology.gpus_per_node = hw->second->gpus_per_node;
    c.topology.intra = hw->second->intra;
    c.topology.network_gbps = hw->second->network_gbps;
    if (auto gbps = InterNodeGbps(opt(row, "interconnect")); gbps && *gbps > 0) {
      c.topology.network_gbps = *gbps;
      if (*gbps != hw->second->network_gbps)
        c.note += "inter-node " + FormatDouble(*gbps) + " Gb/s per node, as stated. ";
    }
    c.gpu_generation = Split(hw->first->name, '-')[0];
    c.arch = hw->first->arch;
    c.gpus = n;
    if (mem_gb) c.measured_memory_gib = *mem_gb * 1e9 / (1024.0 * 1024 * 1024);
    std::string lname = ToLower(name);
    auto catalog_cnn = FindModel(name);
    if (catalog_cnn.ok() && (*catalog_cnn)->kind == ModelKind::kCnn) {
      // A CNN named as the catalog names it, its memory format as the notes
      // state it ("memory format: nhwc" or "nchw"; the catalog's otherwise).
      c.model = **catalog_cnn;
      std::smatch mf;
      const std::string notes = ToLower(t.Get(row, "notes"));
      if (std::regex_search(notes, mf, kMemoryFormat)) {
        auto first = ChannelsFirstFromName(mf[1].str());
        if (!first)
          return InvalidArgument(t.Where(row, "notes") + ": memory format '" + mf[1].str() +
                                 "': expected nhwc or nchw");
        c.model.cnn.channels_first = *first;
      }
    } else if (Contains(lname, "resnet-50")) {
      c.model = **FindModel("resnet-50");
    } else {
      if (layers <= 0 || hidden <= 0 || heads <= 0 || seq <= 0) {
        out->skipped.push_back({id, "model shape (layers, hidden, heads, seq_len) not stated"});
        continue;
      }
      ShapeFlags f;
      f.layers = layers;
      f.hidden = hidden;
      f.heads = heads;
      f.seq_len = seq;
      if (kv_heads) f.kv_heads = static_cast<int>(std::lround(*kv_heads));
      if (ffn) f.ffn_hidden = static_cast<int>(std::lround(*ffn));
      std::smatch mv;
      std::string notes = t.Get(row, "notes");
      if (vocab) f.vocab = static_cast<int>(std::lround(*vocab));
      else f.vocab = std::regex_search(notes, mv, kVocab) ? std::stoi(mv[1]) : (Contains(lname, "bert") ? 30522 : 51200);
      auto m = ResolveModel("custom", f);
      if (!m.ok()) return InvalidArgument(id + ": " + m.status().message());
      c.model = *m;
      c.model.name = name;
      if (ToLower(opt(row, "ffn_kind")) == "swiglu") c.model.tf.gated_ffn = true;
      std::string tied = ToLower(opt(row, "tied_embeddings"));
      if (tied == "true") c.model.tf.tied_embeddings = true;
      else if (!tied.empty() && tied != "false")
        return InvalidArgument(t.Where(row, "tied_embeddings") + ": expected true, false or empty, got '" + tied + "'");
      // Llama 2/3 are trained without dropout (their configurations).
      if (Contains(lname, "llama")) c.model.tf.dropout = false;
      if (Contains(lname, "bert")) {
        c.model.tf.causal = false;
        c.model.tf.tied_embeddings = true;
      }
    }
    c.tp = tp;
    c.pp = pp;
    c.dp = dp;
    c.virtual_stages = vp;
    c.micro_batch = mb;
    c.num_micro_batches = accum;
    std::string zero = ToLower(opt(row, "sharding_zero"));
    if (zero == "none" || zero == "0") c.zero = 0;
    else if (zero == "1" || zero == "2" || zero == "3") c.zero = zero[0] - '0';
    else if (!zero.empty())
      return InvalidArgument(t.Where(row, "sharding_zero") + ": expected 0, 1, 2, 3 or none, got '" + zero + "'");
    std::string rc = ToLower(t.Get(row, "recompute"));
    std::string basis = ToLower(t.Get(row, "tflops_basis"));
    if (StartsWith(rc, "full")) c.recompute = Recompute::kFull;
    else if (StartsWith(rc, "selective")) c.recompute = Recompute::kSelective;
    else if (StartsWith(rc, "none")) c.recompute = Recompute::kNone;
    else if (BasisCountsRecompute(basis)) {
      c.recompute = Recompute::kFull;
      c.note += "recompute not stated; full, as the row's FLOP basis includes it. ";
    }
    auto prec = ParsePrecisionText(t.Get(row, "precision"));
    if (!prec) {
      prec = hw->first->bf16_tflops > 0 ? Precision::kBf16 : Precision::kFp16;
      c.note += std::string("precision not stated; ") + PrecisionName(*prec) + ". ";
    }
    c.precision = *prec;
    if (c.model.kind == ModelKind::kCnn && mb == 0) {
      // DeepLearningExamples' ConvNets recipes (PyTorch/Classification/
      // ConvNets/configs.yml, models.resnet50): per-GPU batch 256 on every
      // platform and precision but FP32 on DGX-1V (the V100 SXM2 servers), 112.
      const bool dgx1v_fp32 = c.precision == Precision::kFp32 && c.arch == "volta" &&
                              Contains(ToLower(t.Get(row, "gpu_type")), "dgx-1");
      c.micro_batch = dgx1v_fp32 ? 112 : 256;
      c.note += dgx1v_fp32 ? "per-GPU batch 112 (the recipe's FP32 batch on DGX-1V). "
                           : "per-GPU batch 256 (the recipe's batch). ";
      // Those scripts have no activation checkpointing, and keep PyTorch's
      // channels-first memory format but under AMP (memory_format: nhwc).
      if (!c.recompute) c.recompute = Recompute::kNone;
      c.model.cnn.channels_first = c.precision != Precision::kFp16;
      if (c.model.cnn.channels_first) c.note += "NCHW activations (the recipe's default memory format). ";
    }
    if (gb > 0) c.global_batch = gb;
    else if (c.micro_batch > 0 && c.num_micro_batches > 0 && dp > 0) c.global_batch = c.micro_batch * c.num_micro_batches * dp;
    else if (c.micro_batch > 0 && dp > 0) c.global_batch = c.micro_batch * std::max(1, accum) * dp;
    else if (c.micro_batch > 0 && tp > 0 && pp > 0 && n % (tp * pp) == 0 && pp == 1) {
      c.global_batch = c.micro_batch * (n / tp);
      c.note += "global batch not stated; one micro-batch per replica. ";
    }
    const double tokens_per_sample = c.model.TokensPerSample();
    // The measured iteration time.
    if (iter->has_value()) {
      c.measured_iteration_s = **iter;
    } else if (tok_gpu && c.global_batch > 0) {
      c.measured_iteration_s = c.global_batch * tokens_per_sample / (*tok_gpu * n);
    } else if (tok_total && c.global_batch > 0) {
      c.measured_iteration_s = c.global_batch * tokens_per_sample / *tok_total;
    } else if (sps->has_value() && c.global_batch > 0) {
      c.measured_iteration_s = c.global_batch / **sps;
    } else if (tflops->has_value() && c.global_batch > 0 && c.model.kind == ModelKind::kTransformer) {
      bool with_recompute = BasisCountsRecompute(basis);
      const auto& s = c.model.tf;
      double flops = MegatronFlopsPerIteration(c.global_batch, s.seq_len, s.layers, s.hidden, s.vocab, with_recompute);
      c.measured_iteration_s = flops / (**tflops * 1e12 * n);
      c.note += std::string("time from TFLOP/s via the Megatron formula") + (with_recompute ? " (with recompute). " : ". ");
    } else if (StartsWith(ToLower(opt(row, "other_result")), "out of memory") && c.global_batch > 0) {
      out->out_of_memory.push_back(std::move(c));
      continue;
    } else {
      out->skipped.push_back({id, c.global_batch > 0 ? "no time, throughput or TFLOP/s result with a known FLOP basis"
                                                     : "global batch and micro-batch not stated"});
      continue;
    }
    out->cases.push_back(std::move(c));
  }
  return Status::Ok();
}

namespace {
constexpr int kArenaMicroBatches = 16;
}  // namespace

Status LoadArenaDatabase(const std::string& path, double arena_network_gbps, ReferenceSet* out) {
  auto entries = ReadArenaDatabase(path);
  if (!entries.ok()) return entries.status();
  std::string file = std::filesystem::path(path).filename().string();
  std::string skipped_key;  // entries of one key are adjacent: report it once
  for (const ArenaDbEntry& e : *entries) {
    auto model = FindModel(e.model);
    if (!model.ok()) {
      if (e.key != skipped_key) out->skipped.push_back({file + ":" + e.key, "model not in the catalog"});
      skipped_key = e.key;
      continue;
    }
    if (e.seconds <= 0) {
      out->infeasible_measured++;
      continue;
    }
    const ArenaMesh& am = e.mesh;
    ReferenceCase c;
    c.id = file + ":" + e.key + "@" + e.mesh_name;
    c.source = file == "prof_database.json" ? "arena-prof-db" : "arena-prof-db-h100-l20";
    c.framework = "alpa";
    c.model = **model;
    c.gpu_generation = am.gpu_token;
    c.arch = am.gpu->arch;
    c.topology.gpu = am.gpu;
    c.topology.gpus_per_node = am.gpus_per_host;
    c.topology.intra = am.node->intra;
    c.topology.network_gbps = am.arena_node() ? arena_network_gbps : am.node->network_gbps;
    c.gpus = am.hosts * am.gpus_per_host;
    c.global_batch = e.batch;
    c.precision = c.model.default_precision;
    // What the Arena profiler fixed in every run it measured (sjtu-epcc/arena,
    // branch ae-eurosys, runtime/crius_worker: train.py and its trainers; the
    // profiler's command lines in runtime_profiler invocations): Alpa's
    // PipeshardParallel with 16 micro-batches, coarse-grained (per-layer,
    // i.e. full) rematerialisation, and prefer_reduce_scatter (gradients
    // reduce-scattered and the updated weights all-gathered, sharding the
    // optimizer state: the alpa framework's min_zero_data_parallel). Alpa's
    // search chose the mesh split (data, operator, pipeline degrees) and,
    // under its memory budget, how far to shard weights: the rest of the
    // ZeRO stage is left to the planner.
    c.num_micro_batches = std::min(kArenaMicroBatches, e.batch);
    c.recompute = Recompute::kFull;
    // The GPT and MoE workers apply the model with deterministic=True
    // (crius_worker/jax/trainer/gpt_trainer.py, moe_trainer.py): no dropout.
    if (c.model.kind == ModelKind::kTransformer) c.model.tf.dropout = false;
    c.measured_iteration_s = e.seconds;
    out->cases.push_back(std::move(c));
  }
  return Status::Ok();
}

}  // namespace tessel
