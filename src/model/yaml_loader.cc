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
//   dropout: false    # trained without dropout (Llama); default true
//   experts: 8        # MoE
//   top_k: 2
//   moe_every: 1
//   precision: bf16
//   optimizer: adam   # adam | adafactor | sgd-momentum (sets optimizer state)
// or a ResNet:
//   name: my-resnet
//   kind: resnet
//   depth: 50
//   channels: 64
//   width_factor: 2
//   image: 224
//   classes: 1000
//   memory_format: nchw   # nhwc (default) | nchw: tensor-core convolutions
//                         # then transpose every input and output
#include <set>
#include <type_traits>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "model/catalog.h"
#include "model/cnn.h"

namespace tessel {

namespace {

// Where errors point: `source` (the file), `prefix` before field names
// ("" for a model file, "model." inside a job spec) and `whole`, the
// mapping as a whole ("m.yaml", or "spec.yaml:4: model").
struct Where {
  std::string source;
  std::string prefix;
  std::string whole;
};

std::string At(const Where& w, const YAML::Node& n, const std::string& key) {
  return w.source + ":" + std::to_string(n.Mark().line + 1) + ": " + w.prefix + key;
}

template <typename T>
Status Read(const YAML::Node& root, const Where& w, const std::string& key, T* out,
            bool required, const char* expect) {
  YAML::Node n = root[key];
  if (!n) {
    if (!required) return Status::Ok();
    if (w.prefix.empty()) {
      return InvalidArgument(w.source + ": missing required field '" + key + "' (" + expect + ")");
    }
    return InvalidArgument(w.whole + ": missing required field '" + key + "' (" + expect + ")");
  }
  auto got = [&] {
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    return std::string(n.IsSequence() ? "a list" : n.IsMap() ? "a mapping" : "nothing");
  };
  if constexpr (std::is_same_v<T, int>) {
    // Shape integers: read wide, so 2^32 + 1 is not taken for 1, and
    // bounded, so derived sizes (4 x hidden, ...) cannot overflow.
    long long v = 0;
    try {
      v = n.as<long long>();
    } catch (const YAML::Exception&) {
      return InvalidArgument(At(w, n, key) + ": expected " + expect + ", got " + got());
    }
    if (v < 0 || v > kMaxModelDim) {
      return InvalidArgument(At(w, n, key) + ": expected " + expect + " up to " + std::to_string(kMaxModelDim) +
                             ", got " + got());
    }
    *out = static_cast<int>(v);
  } else {
    try {
      *out = n.as<T>();
    } catch (const YAML::Exception&) {
      return InvalidArgument(At(w, n, key) + ": expected " + expect + ", got " + got());
    }
  }
  return Status::Ok();
}

Result<ModelSpec> LoadModel(const YAML::Node& root, const Where& w) {
  if (!root.IsMap()) return InvalidArgument(w.whole + ": expected a mapping of model fields");
  static const std::set<std::string> kKnown = {
      "name", "kind", "family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
      "seq_len", "gated_ffn", "tied_embeddings", "dropout", "experts", "top_k", "moe_every", "precision",
      "optimizer", "depth", "channels", "width_factor", "image", "classes", "memory_format", "description"};
  for (const auto& kv : root) {
    std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("(a non-scalar key)");
    if (!kKnown.count(k)) {
      std::string known;
      for (const auto& x : kKnown) known += (known.empty() ? "" : ", ") + x;
      return InvalidArgument(At(w, kv.first, k) + ": unknown field; known: " + known);
    }
  }
  ModelSpec m;
  m.source = w.source;
  std::string kind = "transformer";
  TESSEL_RETURN_IF_ERROR(Read(root, w, "name", &m.name, true, "a string"));
  TESSEL_RETURN_IF_ERROR(Read(root, w, "kind", &kind, false, "transformer or resnet"));
  TESSEL_RETURN_IF_ERROR(Read(root, w, "family", &m.family, false, "a string"));
  TESSEL_RETURN_IF_ERROR(Read(root, w, "description", &m.description, false, "a string"));
  std::string prec;
  TESSEL_RETURN_IF_ERROR(Read(root, w, "precision", &prec, false, "fp32|tf32|fp16|bf16|fp8"));
  if (!prec.empty()) {
    auto p = ParsePrecision(prec);
    if (!p.ok()) return InvalidArgument(At(w, root["precision"], "precision") + ": " + p.status().message());
    m.default_precision = *p;
  }
  std::string opt;
  TESSEL_RETURN_IF_ERROR(Read(root, w, "optimizer", &opt, false, "adam|adafactor|sgd-momentum"));
  if (!opt.empty()) {
    auto o = ParseOptimizer(opt);
    if (!o.ok()) return InvalidArgument(At(w, root["optimizer"], "optimizer") + ": " + o.status().message());
    m.optimizer = *o;
  }
  if (kind == "resnet") {
    int depth = 50, channels = 64, width = 1, image = 224, classes = 1000;
    TESSEL_RETURN_IF_ERROR(Read(root, w, "depth", &depth, false, "50, 101 or 152"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "channels", &channels, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "width_factor", &width, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "image", &image, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "classes", &classes, false, "a positive integer"));
    auto s = BuildResNet(depth, channels, width, image, classes);
    if (!s.ok()) return InvalidArgument(w.whole + ": " + s.status().message());
    m.kind = ModelKind::kCnn;
    m.cnn = std::move(*s);
    std::string format;
    TESSEL_RETURN_IF_ERROR(Read(root, w, "memory_format", &format, false, "nhwc or nchw"));
    if (!format.empty()) {
      auto first = ChannelsFirstFromName(format);
      if (!first)
        return InvalidArgument(At(w, root["memory_format"], "memory_format") + ": expected nhwc or nchw, got '" +
                               format + "'");
      m.cnn.channels_first = *first;
    }
    if (prec.empty()) m.default_precision = Precision::kFp16;
  } else if (kind == "transformer") {
    if (root["memory_format"])
      return InvalidArgument(At(w, root["memory_format"], "memory_format") + ": applies to kind: resnet only");
    auto& t = m.tf;
    TESSEL_RETURN_IF_ERROR(Read(root, w, "layers", &t.layers, true, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "hidden", &t.hidden, true, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "heads", &t.heads, true, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "seq_len", &t.seq_len, true, "a positive integer"));
    t.kv_heads = t.heads;
    t.ffn_hidden = 4 * t.hidden;
    t.vocab = 51200;
    TESSEL_RETURN_IF_ERROR(Read(root, w, "kv_heads", &t.kv_heads, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "ffn_hidden", &t.ffn_hidden, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "vocab", &t.vocab, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "gated_ffn", &t.gated_ffn, false, "true or false"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "tied_embeddings", &t.tied_embeddings, false, "true or false"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "dropout", &t.dropout, false, "true or false"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "experts", &t.experts, false, "an integer >= 0"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "top_k", &t.top_k, false, "a positive integer"));
    TESSEL_RETURN_IF_ERROR(Read(root, w, "moe_every", &t.moe_every, false, "a positive integer"));
    if (t.experts > 0 && t.top_k == 0) t.top_k = std::min(2, t.experts);
  } else {
    return InvalidArgument(At(w, root["kind"], "kind") + ": expected transformer or resnet, got '" + kind + "'");
  }
  if (m.family.empty()) m.family = "custom";
  Status st = ValidateModel(m);
  if (!st.ok()) return InvalidArgument(w.whole + ": " + st.message());
  return m;
}

}  // namespace

Result<ModelSpec> LoadModelYaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": YAML nested too deeply");
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  // Reading values can throw too (a key that is not a scalar, `[a, b]: 1`,
  // is not a field name): every yaml-cpp error is an error about the file.
  try {
    return LoadModel(root, Where{source, "", source});
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) +
                           ": expected a mapping of field names (scalars) to values: " + e.msg);
  }
}

Result<ModelSpec> LoadModelYamlNode(const YAML::Node& node, const std::string& source,
                                    const std::string& field) {
  std::string whole = source + ":" + std::to_string(node.Mark().line + 1) + ": " + field;
  return LoadModel(node, Where{source, field + ".", whole});
}

}  // namespace tessel
