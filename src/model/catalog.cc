// Model shapes. Sources:
//  Megatron-LM GPT family: Narayanan et al., SC'21, Table 1 (seq 2048,
//    vocab 51200).
//  GPT-3: Brown et al. 2020, Table 2.1 (seq 2048, vocab 50257); where the
//    table's d_model is not heads x d_head (XL, 13B), d_model = 2048 / 5120
//    and heads = d_model / 128, as implementations do.
//  LLaMA-2: Touvron et al. 2023 / HF configs (vocab 32000, seq 4096).
//  LLaMA-3: Meta Llama 3 / 3.1 model cards and HF configs (vocab 128256).
//  BLOOM-176B: BigScience, bigscience/bloom config (vocab 250880).
//  BERT: Devlin et al. 2019 (vocab 30522, seq 512).
//  Arena/Alpa families: alpa-projects/alpa benchmark/alpa/suite_manual_gpt.py,
//    suite_manual_moe.py, suite_wresnet.py; sjtu-epcc/arena
//    runtime/crius_worker/jax/configs.py. "bert" there has GPT shapes
//    (seq 1024, vocab 51200, FFN 4h, untied embeddings, fp16); "moe" has FFN
//    8h, an MoE layer every other layer, top-2 routing, vocab 32000;
//    wide_resnet is fp32.
//  ResNet-50: He et al. 2016.
#include "model/catalog.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include "core/csv.h"
#include "core/strings.h"
#include "model/cnn.h"

namespace tessel {

namespace {

ModelSpec Gpt(std::string name, std::string family, int layers, int hidden, int heads,
              int vocab, int seq, std::string source, Precision prec = Precision::kBf16) {
  ModelSpec m;
  m.name = std::move(name);
  m.family = std::move(family);
  m.kind = ModelKind::kTransformer;
  m.tf.layers = layers;
  m.tf.hidden = hidden;
  m.tf.heads = heads;
  m.tf.kv_heads = heads;
  m.tf.ffn_hidden = 4 * hidden;
  m.tf.vocab = vocab;
  m.tf.seq_len = seq;
  m.source = std::move(source);
  m.default_precision = prec;
  return m;
}

ModelSpec Llama(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn,
                int vocab, int seq, std::string source) {
  ModelSpec m = Gpt(std::move(name), "llama", layers, hidden, heads, vocab, seq, std::move(source));
  m.tf.kv_heads = kv_heads;
  m.tf.ffn_hidden = ffn;
  m.tf.gated_ffn = true;
  m.tf.dropout = false;  // Llama 2/3 configurations: no dropout
  return m;
}

ModelSpec AlpaMoe(std::string size, int hidden, int layers, int experts) {
  ModelSpec m = Gpt("moe__" + size, "moe", layers, hidden, 16, 32000, 1024,
                    "alpa suite_manual_moe.py / arena configs.py", Precision::kFp16);
  m.tf.ffn_hidden = 8 * hidden;
  m.tf.experts = experts;
  m.tf.top_k = 2;
  m.tf.moe_every = 2;
  // The Arena trainer (crius_worker/jax/trainer/moe_trainer.py) trains MoE
  // with optax.adafactor and an fp32 master copy.
  m.optimizer = Optimizer::kAdafactor;
  return m;
}

ModelSpec WideResnet(std::string size, int depth, int channels, int width) {
  ModelSpec m;
  m.name = "wide_resnet__" + size;
  m.family = "wide_resnet";
  m.kind = ModelKind::kCnn;
  m.cnn = *BuildResNet(depth, channels, width, 224, 1024);
  // Measured Alpa times match true fp32 math (not TF32) on A100/A40/A10/H100.
  m.default_precision = Precision::kFp32;
  // Arena's wide_resnet_trainer.py (as Alpa's benchmark): SGD with momentum.
  m.optimizer = Optimizer::kSgdMomentum;
  m.source = "alpa suite_wresnet.py (image 224, 1024 classes, fp32) / arena configs.py";
  return m;
}

std::vector<ModelSpec> BuildCatalog() {
  std::vector<ModelSpec> c;
  const std::string meg = "Narayanan et al. SC'21 Table 1";
  c.push_back(Gpt("gpt-1.7b", "gpt", 24, 2304, 24, 51200, 2048, meg));
  c.push_back(Gpt("gpt-3.6b", "gpt", 30, 3072, 32, 51200, 2048, meg));
  c.push_back(Gpt("gpt-7.5b", "gpt", 36, 4096, 32, 51200, 2048, meg));
  c.push_back(Gpt("gpt-18.4b", "gpt", 40, 6144, 48, 51200, 2048, meg));
  c.push_back(Gpt("gpt-39.1b", "gpt", 48, 8192, 64, 51200, 2048, meg));
  c.push_back(Gpt("gpt-76.1b", "gpt", 60, 10240, 80, 51200, 2048, meg));
  c.push_back(Gpt("gpt-145.6b", "gpt", 80, 12288, 96, 51200, 2048, meg));
  c.push_back(Gpt("gpt-310.1b", "gpt", 96, 16384, 128, 51200, 2048, meg));
  c.push_back(Gpt("gpt-529.6b", "gpt", 105, 20480, 128, 51200, 2048, meg));
  c.push_back(Gpt("gpt-1t", "gpt", 128, 25600, 160, 51200, 2048, meg));
  const std::string g3 = "Brown et al. 2020 Table 2.1";
  c.push_back(Gpt("gpt3-125m", "gpt3", 12, 768, 12, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-350m", "gpt3", 24, 1024, 16, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-760m", "gpt3", 24, 1536, 16, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-1.3b", "gpt3", 24, 2048, 16, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-2.7b", "gpt3", 32, 2560, 32, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-6.7b", "gpt3", 32, 4096, 32, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-13b", "gpt3", 40, 5120, 40, 50257, 2048, g3));
  c.push_back(Gpt("gpt3-175b", "gpt3", 96, 12288, 96, 50257, 2048, g3));
  c.push_back(Llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, "Touvron et al. 2023"));
  c.push_back(Llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, "Touvron et al. 2023"));
  c.push_back(Llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, "Touvron et al. 2023"));
  c.push_back(Llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, "Meta Llama 3 model card"));
  c.push_back(Llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, "Meta Llama 3 model card"));
  c.push_back(Llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192,
                    "Meta Llama 3.1 model card"));
  {
    ModelSpec b = Gpt("bloom-176b", "bloom", 70, 14336, 112, 250880, 2048, "bigscience/bloom config");
    b.tf.tied_embeddings = true;
    c.push_back(b);
  }
  {
    ModelSpec b = Gpt("bert-base", "bert", 12, 768, 12, 30522, 512, "Devlin et al. 2019");
    b.tf.tied_embeddings = true;
    c.push_back(b);
    b = Gpt("bert-large", "bert", 24, 1024, 16, 30522, 512, "Devlin et al. 2019");
    b.tf.tied_embeddings = true;
    c.push_back(b);
  }
  const std::string alpa = "alpa suite_manual_gpt.py / arena configs.py";
  c.push_back(Gpt("bert__350M", "bert", 24, 1024, 16, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(Gpt("bert__760M", "bert", 24, 1536, 16, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(Gpt("bert__1.3B", "bert", 24, 2048, 32, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(Gpt("bert__2.6B", "bert", 32, 2560, 32, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(Gpt("bert__6.7B", "bert", 32, 4096, 32, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(Gpt("bert__15B", "bert", 48, 5120, 40, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(Gpt("bert__39B", "bert", 48, 8192, 64, 51200, 1024, alpa, Precision::kFp16));
  c.push_back(AlpaMoe("690M", 768, 8, 16));
  c.push_back(AlpaMoe("1.3B", 768, 16, 16));
  c.push_back(AlpaMoe("2.4B", 1024, 16, 16));
  c.push_back(AlpaMoe("10B", 1536, 16, 32));
  c.push_back(AlpaMoe("27B", 2048, 16, 48));
  c.push_back(AlpaMoe("70B", 2048, 32, 64));
  c.push_back(WideResnet("500M", 50, 224, 2));
  c.push_back(WideResnet("1B", 50, 320, 2));
  c.push_back(WideResnet("2B", 50, 448, 2));
  c.push_back(WideResnet("4B", 50, 640, 2));
  c.push_back(WideResnet("6.8B", 50, 320, 16));
  c.push_back(WideResnet("13B", 101, 320, 16));
  {
    ModelSpec r;
    r.name = "resnet-50";
    r.family = "resnet";
    r.kind = ModelKind::kCnn;
    r.cnn = *BuildResNet(50, 64, 1, 224, 1000);
    r.default_precision = Precision::kFp16;
    r.source = "He et al. 2016 (ResNet-50 v1.5: stride on the 3x3 conv)";
    c.push_back(r);
  }
  for (auto& m : c) {
    if (m.family == "bert") m.tf.causal = false;
    if (m.description.empty()) {
      m.description = m.kind == ModelKind::kCnn ? "CNN" : (m.tf.IsMoe() ? "MoE transformer" : "transformer");
    }
  }
  return c;
}

std::string Canonical(std::string_view name) {
  std::string l = ToLower(Trim(name));
  // Arena writes family__size in traces and family_size in its database.
  for (const char* fam : {"bert_", "moe_", "wide_resnet_"}) {
    std::string f = fam;
    if (StartsWith(l, f) && !StartsWith(l, f + "_")) l = f + "_" + l.substr(f.size());
  }
  return l;
}

// Models added at run time (RegisterModel), by canonical name. Entries are
// never removed, so pointers handed out by FindModel stay valid.
struct Registry {
  std::shared_mutex mu;
  std::map<std::string, std::unique_ptr<const ModelSpec>> models;
};

Registry& Registered() {
  static Registry* registry = new Registry();  // never destroyed: outlives every user
  return *registry;
}

auto TransformerFields(const TransformerShape& t) {
  return std::tie(t.layers, t.hidden, t.heads, t.kv_heads, t.ffn_hidden, t.vocab, t.seq_len,
                  t.gated_ffn, t.tied_embeddings, t.causal, t.dropout, t.experts, t.top_k, t.moe_every);
}

auto ConvFields(const ConvOp& c) {
  return std::tie(c.out_hw, c.cin, c.cout, c.kernel, c.batch_norm, c.stride);
}

// Catalog names and aliases; `canonical` as Canonical() makes it.
const ModelSpec* FindBuiltin(const std::string& canonical) {
  // The catalog by lower-case name (built once: simulators look models up
  // by name for every estimate they miss).
  static const std::unordered_map<std::string, const ModelSpec*> kByName = [] {
    std::unordered_map<std::string, const ModelSpec*> index;
    for (const auto& m : ModelCatalog()) index.emplace(ToLower(m.name), &m);  // the first of equal names
    return index;
  }();
  if (auto it = kByName.find(canonical); it != kByName.end()) return it->second;
  // Friendly aliases.
  static const std::vector<std::pair<std::string, std::string>> kAliases = {
      {"gpt3", "gpt3-175b"},     {"gpt-3", "gpt3-175b"},     {"gpt-3-175b", "gpt3-175b"},
      {"resnet50", "resnet-50"}, {"bert-large-uncased", "bert-large"},
      {"llama-2-7b", "llama2-7b"}, {"llama-2-13b", "llama2-13b"}, {"llama-2-70b", "llama2-70b"},
      {"llama-3-8b", "llama3-8b"}, {"llama-3-70b", "llama3-70b"}, {"llama-3-405b", "llama3-405b"},
      {"bloom", "bloom-176b"},
  };
  for (const auto& [a, n] : kAliases)
    if (a == canonical) return FindBuiltin(n);
  return nullptr;
}

}  // namespace

const std::vector<ModelSpec>& ModelCatalog() {
  static const std::vector<ModelSpec> catalog = BuildCatalog();
  return catalog;
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> out;
  for (const auto& m : ModelCatalog()) out.push_back(m.name);
  return out;
}

Result<const ModelSpec*> FindModel(std::string_view name) {
  std::string l = Canonical(name);
  if (const ModelSpec* m = FindBuiltin(l)) return m;
  {
    Registry& r = Registered();
    std::shared_lock lock(r.mu);
    auto it = r.models.find(l);
    if (it != r.models.end()) return it->second.get();
  }
  return NotFound(UnknownNameMessage("model", name, ModelNames()) +
                  " (or a YAML file, or 'custom' with --layers --hidden --heads --seq-len)");
}

bool SameModelShape(const ModelSpec& a, const ModelSpec& b) {
  if (a.kind != b.kind || a.default_precision != b.default_precision || a.optimizer != b.optimizer) return false;
  if (a.kind == ModelKind::kTransformer) return TransformerFields(a.tf) == TransformerFields(b.tf);
  if (a.cnn.image != b.cnn.image || a.cnn.num_classes != b.cnn.num_classes ||
      a.cnn.channels_first != b.cnn.channels_first || a.cnn.blocks.size() != b.cnn.blocks.size()) {
    return false;
  }
  for (size_t i = 0; i < a.cnn.blocks.size(); ++i) {
    const auto& x = a.cnn.blocks[i].convs;
    const auto& y = b.cnn.blocks[i].convs;
    if (x.size() != y.size()) return false;
    for (size_t j = 0; j < x.size(); ++j)
      if (ConvFields(x[j]) != ConvFields(y[j])) return false;
  }
  return true;
}

Status RegisterModel(const ModelSpec& model) {
  std::string l = Canonical(model.name);
  if (l.empty()) return InvalidArgument("RegisterModel: the model has no name");
  TESSEL_RETURN_IF_ERROR(ValidateModel(model));
  auto clash = [&](const std::string& holder) {
    return FailedPrecondition("model '" + model.name + "': the name is taken by " + holder +
                              " with a different shape; choose another name");
  };
  if (const ModelSpec* m = FindBuiltin(l)) {
    return SameModelShape(*m, model) ? Status::Ok() : clash("catalog model '" + m->name + "'");
  }
  Registry& r = Registered();
  std::unique_lock lock(r.mu);
  auto [it, inserted] = r.models.try_emplace(l);
  if (!inserted) {
    const ModelSpec& m = *it->second;
    return SameModelShape(m, model) ? Status::Ok()
                               : clash("a model registered earlier" +
                                       (m.source.empty() ? std::string() : " (from " + m.source + ")"));
  }
  it->second = std::make_unique<const ModelSpec>(model);
  return Status::Ok();
}

Result<ModelSpec> ResolveModel(std::string_view spec, const ShapeFlags& f) {
  ModelSpec m;
  std::string s = Trim(spec);
  if (s.empty()) return InvalidArgument("--model: required (a catalog name, a YAML file, or 'custom')");
  bool is_file = s.ends_with(".yaml") || s.ends_with(".yml") ||
                 (s.find('/') != std::string::npos && std::filesystem::exists(s));
  if (ToLower(s) == "custom") {
    if (!f.layers || !f.hidden || !f.heads || !f.seq_len) {
      return InvalidArgument(
          "--model custom: needs --layers, --hidden, --heads and --seq-len "
          "(optional: --kv-heads --ffn-hidden --ffn-kind --vocab --experts --top-k)");
    }
    m = Gpt("custom", "custom", *f.layers, *f.hidden, *f.heads, 51200, *f.seq_len, "command line");
  } else if (is_file) {
    auto text = ReadTextFile(s);
    if (!text.ok()) return InvalidArgument("--model: " + text.status().message());
    auto r = LoadModelYaml(*text, s);
    if (!r.ok()) return r.status();
    m = std::move(*r);
  } else {
    auto r = FindModel(s);
    if (!r.ok()) return r.status();
    m = **r;
  }
  if (m.kind == ModelKind::kTransformer) {
    bool custom = ToLower(s) == "custom";
    if (f.layers) m.tf.layers = *f.layers;
    if (f.hidden) {
      m.tf.hidden = *f.hidden;
      if (!f.ffn_hidden && custom) m.tf.ffn_hidden = 4 * *f.hidden;
    }
    if (f.heads) {
      m.tf.heads = *f.heads;
      if (!f.kv_heads && custom) m.tf.kv_heads = *f.heads;
    }
    if (f.kv_heads) m.tf.kv_heads = *f.kv_heads;
    if (f.ffn_hidden) m.tf.ffn_hidden = *f.ffn_hidden;
    if (f.gated_ffn) m.tf.gated_ffn = *f.gated_ffn;
    if (f.vocab) m.tf.vocab = *f.vocab;
    if (f.seq_len) m.tf.seq_len = *f.seq_len;
    if (f.experts) {
      m.tf.experts = *f.experts;
      if (!f.top_k && m.tf.top_k == 0) m.tf.top_k = std::min(2, *f.experts);
    }
    if (f.top_k) m.tf.top_k = *f.top_k;
  } else if (f.layers || f.hidden || f.heads || f.seq_len || f.experts || f.gated_ffn) {
    return InvalidArgument("--model " + m.name + ": shape flags apply to transformers only");
  }
  if (f.channels_first) {
    if (m.kind != ModelKind::kCnn)
      return InvalidArgument("--memory-format: applies to CNNs only; " + m.name + " is a transformer");
    m.cnn.channels_first = *f.channels_first;
  }
  TESSEL_RETURN_IF_ERROR(ValidateModel(m));
  return m;
}

}  // namespace tessel
