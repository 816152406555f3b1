// Model YAML files. Example (all keys but name/layers/hidden/heads/seq_len
// optional):
//   name: my-gpt
//   layers: 32
//   hidden: 4096
//   heads: 32
//   kv_heads: 8
//   ffn_hidden: 14336
//   vocab: 128256
//   seq_len: 8192
//   gated_ffn: true
//   experts: 8        # MoE
//   top_k: 2
//   moe_every: 1
//   precision: bf16
// or a ResNet:
//   name: my-resnet
//   kind: resnet
//   depth: 50
//   channels: 64
//   width_factor: 2
//   image: 224
//   classes: 1000
#include <set>

#include <yaml-cpp/yaml.h>

#include "model/catalog.h"
#include "model/cnn.h"

namespace tessel {

namespace {

std::string At(const std::string& source, const YAML::Node& n, const std::string& key) {
  return source + ":" + std::to_string(n.Mark().line + 1) + ": " + key;
}

template <typename T>
Status Read(const YAML::Node& root, const std::string& source, const std::string& key, T* out,
            bool required, const char* expect) {
  YAML::Node n = root[key];
  if (!n) {
    if (required) return InvalidArgument(source + ": missing required field '" + key + "' (" + expect + ")");
    return Status::Ok();
  }
  try {
    *out = n.as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgument(At(source, n, key) + ": expected " + expect + ", got '" +
                           (n.IsScalar() ? n.Scalar() : std::string("a non-scalar")) + "'");
  }
  return Status::Ok();
}

}  // namespace

Result<ModelSpec> LoadModelYaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  if (!root.IsMap()) return InvalidArgument(source + ": expected a mapping of model fields");
  static const std::set<std::string> kKnown = {
      "name", "kind", "family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
      "seq_len", "gated_ffn", "tied_embeddings", "experts", "top_k", "moe_every", "precision",
      "depth", "channels", "width_factor", "image", "classes", "description"};
  for (const auto& kv : root) {
    std::string k = kv.first.as<std::string>();
    if (!kKnown.count(k)) {
      std::string known;
      for (const auto& x : kKnown) known += (known.empty() ? "" : ", ") + x;
      return InvalidArgument(At(source, kv.first, k) + ": unknown field; known: " + known);
    }
  }
  ModelSpec m;
  m.source = source;
  std::string kind = "transformer";
  TESSEL_RETURN_IF_ERROR(Read(root, source, "name", &m.name, true, "a string"));
  TESSEL_RETURN_IF_ERROR(Read(root, source, "kind", &kind, false, "transformer or resnet"));
  TESSEL_RETURN_IF_ERROR(Read(root, source, "family", &m.family, false, "a string"));
  TESSEL_RETURN_IF_ERROR(Read(root, source, "description", &m.description, false, "a string"));
  std::string prec;
  TESSEL_RETURN_IF_ERROR(Read(root, source, "precision", &prec, false, "fp32|tf32|fp16|bf16|fp8"));
  if (!prec.empty()) {
    auto p = ParsePrecision(prec);
    if (!p.ok()) return InvalidArgument(At(source, root["precision"], "precision") + ": " + p.status().message());
    m.default_precision = *p;
  }
  if (kind == "resnet") {
    int depth = 50, channels = 64, width = 1, image = 224, classes = 1000;
    TESSEL_RETURN_IF_ERROR(Read(root, source, "depth", &depth, false, "50, 101 or 152"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "channels", &channels, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "width_factor", &width, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "image", &image, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "classes", &classes, false, "a positive integer"));
    auto s = BuildResNet(depth, channels, width, image, classes);
    if (!s.ok()) return InvalidArgument(source + ": " + s.status().message());
    m.kind = ModelKind::kCnn;
    m.cnn = std::move(*s);
    if (prec.empty()) m.default_precision = Precision::kFp16;
  } else if (kind == "transformer") {
    auto& t = m.tf;
    TESSEL_RETURN_IF_ERROR(Read(root, source, "layers", &t.layers, true, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "hidden", &t.hidden, true, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "heads", &t.heads, true, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "seq_len", &t.seq_len, true, "a positive integer"));
    t.kv_heads = t.heads;
    t.ffn_hidden = 4 * t.hidden;
    t.vocab = 51200;
    TESSEL_RETURN_IF_ERROR(Read(root, source, "kv_heads", &t.kv_heads, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "ffn_hidden", &t.ffn_hidden, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "vocab", &t.vocab, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "gated_ffn", &t.gated_ffn, false, "true or false"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "tied_embeddings", &t.tied_embeddings, false, "true or false"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "experts", &t.experts, false, "an integer >= 0"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "top_k", &t.top_k, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, source, "moe_every", &t.moe_every, false, "a positive integer"));
    if (t.experts > 0 && t.top_k == 0) t.top_k = std::min(2, t.experts);
  } else {
    return InvalidArgument(At(source, root["kind"], "kind") + ": expected transformer or resnet, got '" + kind + "'");
  }
  if (m.family.empty()) m.family = "custom";
  Status st = ValidateModel(m);
  if (!st.ok()) return InvalidArgument(source + ": " + st.message());
  return m;
}

}  // namespace tessel
