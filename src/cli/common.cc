#include "cli/common.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>

#include "core/csv.h"
#include "core/strings.h"

namespace tessel {

void ModelFlags::Add(CLI::App& app, bool required) {
  auto* o = app.add_option("--model", model,
                           "Catalog name (see `tessel models`), a YAML file, or 'custom'");
  if (required) o->required();
  app.add_option("--layers", layers, "Transformer layers (custom shapes / override)");
  app.add_option("--hidden", hidden, "Hidden size");
  app.add_option("--heads", heads, "Attention heads");
  app.add_option("--kv-heads", kv_heads, "Key/value heads (grouped-query attention)");
  app.add_option("--ffn-hidden", ffn_hidden, "FFN hidden size (default 4 x hidden)");
  app.add_option("--ffn-kind", ffn_kind,
                 "FFN: gelu (two matrices, GPT) or swiglu (gated, three matrices: Llama); default the model's "
                 "(custom: gelu)");
  app.add_option("--vocab", vocab, "Vocabulary size (default 51200)");
  app.add_option("--seq-len", seq_len, "Sequence length");
  app.add_option("--experts", experts, "MoE experts");
  app.add_option("--top-k", top_k, "MoE experts per token");
  app.add_option("--memory-format", memory_format,
                 "CNNs: nhwc (channels-last, the default) or nchw (PyTorch's default without channels_last: "
                 "tensor-core convolutions transpose every input and output)");
}

Result<ModelSpec> ModelFlags::Resolve() const {
  ShapeFlags f;
  auto set = [](const std::optional<int>& v, std::optional<int>* out, const char* flag) -> Status {
    if (!v) return Status::Ok();
    if (*v < 1 || *v > kMaxModelDim) {
      return InvalidArgument(std::string(flag) + ": expected an integer from 1 to " + std::to_string(kMaxModelDim) +
                             ", got " + std::to_string(*v));
    }
    *out = *v;
    return Status::Ok();
  };
  TESSEL_RETURN_IF_ERROR(set(layers, &f.layers, "--layers"));
  TESSEL_RETURN_IF_ERROR(set(hidden, &f.hidden, "--hidden"));
  TESSEL_RETURN_IF_ERROR(set(heads, &f.heads, "--heads"));
  TESSEL_RETURN_IF_ERROR(set(kv_heads, &f.kv_heads, "--kv-heads"));
  TESSEL_RETURN_IF_ERROR(set(ffn_hidden, &f.ffn_hidden, "--ffn-hidden"));
  TESSEL_RETURN_IF_ERROR(set(vocab, &f.vocab, "--vocab"));
  TESSEL_RETURN_IF_ERROR(set(seq_len, &f.seq_len, "--seq-len"));
  TESSEL_RETURN_IF_ERROR(set(experts, &f.experts, "--experts"));
  TESSEL_RETURN_IF_ERROR(set(top_k, &f.top_k, "--top-k"));
  if (!ffn_kind.empty()) {
    std::string k = ToLower(ffn_kind);
    if (k == "swiglu" || k == "gated") f.gated_ffn = true;
    else if (k == "gelu" || k == "relu") f.gated_ffn = false;
    else return InvalidArgument("--ffn-kind: expected gelu or swiglu, got '" + ffn_kind + "'");
  }
  if (!memory_format.empty()) {
    f.channels_first = ChannelsFirstFromName(ToLower(memory_format));
    if (!f.channels_first) return InvalidArgument("--memory-format: expected nchw or nhwc, got '" + memory_format + "'");
  }
  return ResolveModel(model, f);
}

void TopologyFlags::Add(CLI::App& app) {
  app.add_option("--gpu", gpu, "GPU type (see `tessel gpus`)")->required();
  app.add_option("--gpus-per-node", gpus_per_node,
                 "GPUs per node (default: the GPU's usual node type, see `tessel node-types`)");
  app.add_option("--network-gbps", network_gbps,
                 "Network bandwidth per node, Gb/s, all NICs together (default: the node type's)");
}

Result<Topology> TopologyFlags::Resolve() const {
  auto g = FindGpu(gpu);
  if (!g.ok()) return InvalidArgument("--gpu: " + g.status().message());
  if (gpus_per_node && (*gpus_per_node < 1 || *gpus_per_node > 64)) {
    return InvalidArgument("--gpus-per-node: expected an integer from 1 to 64, got " + std::to_string(*gpus_per_node));
  }
  if (network_gbps && !(std::isfinite(*network_gbps) && *network_gbps > 0 && *network_gbps <= 1e6)) {
    return InvalidArgument("--network-gbps: expected a number of Gb/s above 0 and at most 1e6, got " +
                           FormatDouble(*network_gbps));
  }
  return MakeTopology(**g, gpus_per_node.value_or(0), network_gbps.value_or(0));
}

void ParamsFlag::Add(CLI::App& app) {
  app.add_option("--params", path,
                 "Estimator parameters (JSON from `tessel calibrate --out`); default: embedded");
}

Result<const PerfParams*> ParamsFlag::Resolve() const {
  if (path.empty()) return &DefaultPerfParams();
  auto text = ReadTextFile(path);
  if (!text.ok()) return InvalidArgument("--params: " + text.status().message());
  auto p = PerfParamsFromJson(*text, path);
  if (!p.ok()) return p.status();
  static std::deque<PerfParams> loaded;  // stable addresses for the process
  loaded.push_back(std::move(*p));
  return &loaded.back();
}

void JobFlags::Add(CLI::App& app) {
  model.Add(app);
  topo.Add(app);
  params.Add(app);
  app.add_option("--precision", precision, "fp32|tf32|fp16|bf16|fp8 (default: the model's)");
  app.add_option("--framework", framework, "Training framework: megatron|megatron-legacy|fsdp|fsdp-fused|pytorch|deepspeed|alpa (default from the plan: ZeRO-3 is fsdp, ZeRO-2 with p = 1 fsdp (t = 1) or deepspeed (t > 1), ZeRO-1/2 with p > 1 deepspeed (megatron when interleaved), else megatron)");
}

Result<JobInputs> JobFlags::Resolve() const {
  JobInputs in;
  auto m = model.Resolve();
  if (!m.ok()) return m.status();
  in.model = std::move(*m);
  auto t = topo.Resolve();
  if (!t.ok()) return t.status();
  in.topology = *t;
  auto p = params.Resolve();
  if (!p.ok()) return p.status();
  in.params = *p;
  in.precision = in.model.default_precision;
  if (!precision.empty()) {
    auto pr = ParsePrecision(precision);
    if (!pr.ok()) return InvalidArgument("--precision: " + pr.status().message());
    in.precision = *pr;
  }
  if (precision.empty() && in.topology.gpu->PeakTflops(in.precision) <= 0) {
    std::vector<std::string> ok;
    for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16, Precision::kFp8})
      if (in.topology.gpu->PeakTflops(p) > 0) ok.push_back(PrecisionName(p));
    return InvalidArgument("model " + in.model.name + " trains in " + PrecisionName(in.precision) +
                           " (its default precision), which " + in.topology.gpu->name + " (" +
                           in.topology.gpu->arch + ") does not support; give --precision " + Join(ok, "|"));
  }
  if (!framework.empty()) {
    auto fw = in.params->FindFramework(framework);
    if (!fw.ok()) return InvalidArgument("--framework: " + fw.status().message());
    in.framework = *fw;
  }
  return in;
}

std::string DataDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TESSEL_DATA"); env && *env) return env;
  namespace fs = std::filesystem;
  if (fs::is_directory("../shared/data")) return "../shared/data";
  // Next to the checkout: <repo>/build/tessel -> <repo>/../shared/data.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path candidate = exe.parent_path().parent_path().parent_path() / "shared" / "data";
    if (fs::is_directory(candidate)) return candidate.string();
  }
  return "../shared/data";
}

void AddSeedOption(CLI::App& app, uint64_t* seed, const std::string& help) {
  app.add_option("--seed", *seed, help)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::string t = Trim(v);
            if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos)
              return "expected a whole number from 0 to 18446744073709551615, got '" + v + "'";
            return "";
          },
          "UINT64"));
}

Status CheckDataDir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return Status::Ok();
  return InvalidArgument("data folder '" + dir + "' is not a directory (give --data or set TESSEL_DATA to the shared data folder)");
}

Status CheckOutputDir(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec))
      return InvalidArgument(flag + " '" + path + "': exists and is not a directory; expected a directory (created when missing)");
    return Status::Ok();
  }
  // The nearest existing ancestor must be a directory.
  for (fs::path up = p.parent_path(); !up.empty(); up = up.parent_path()) {
    if (fs::exists(up, ec)) {
      if (!fs::is_directory(up, ec))
        return InvalidArgument(flag + " '" + path + "': '" + up.string() + "' is not a directory");
      break;
    }
    if (up == up.parent_path()) break;
  }
  return Status::Ok();
}

Status CheckOutputFile(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec))
    return InvalidArgument(flag + " '" + path + "': is a directory; expected a file to write");
  fs::path dir = p.parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec))
    return InvalidArgument(flag + " '" + path + "': directory '" + dir.string() + "' does not exist");
  return Status::Ok();
}

}  // namespace tessel
