// The model catalog (published shapes, each with its source) and the one
// place that turns a --model argument (catalog name, YAML file, or `custom`
// with shape flags) into a ModelSpec.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace tessel {

const std::vector<ModelSpec>& ModelCatalog();
std::vector<std::string> ModelNames();
// Case-insensitive; Arena's `family__size` and `family_size` both accepted.
// Finds catalog models, their aliases, then models added by RegisterModel.
// Thread-safe; the pointer stays valid until the process exits.
Result<const ModelSpec*> FindModel(std::string_view name);

// Adds a model defined at run time (a job spec's shape) so that FindModel,
// and with it the estimator and policies, finds it by name. Thread-safe.
// Registering a name again with the same shape (kind, transformer/CNN
// shape, precision) is a no-op. A name FindModel already resolves (catalog
// name, alias or registered model) to a different shape is
// FailedPrecondition; an empty name or an invalid shape is InvalidArgument.
// Registered models are not in ModelCatalog() or ModelNames().
Status RegisterModel(const ModelSpec& model);
// Whether two specs are the same model to the estimator: kind, shape and
// precision (name, family, description and source aside).
bool SameModelShape(const ModelSpec& a, const ModelSpec& b);

// Shape flags of the CLI; unset fields keep the base model's value.
struct ShapeFlags {
  std::optional<int> layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, experts, top_k;
  // The FFN's kind: gated (SwiGLU: gate, up and down matrices) or not (GeLU).
  std::optional<bool> gated_ffn;
  // CNNs only: activations channels-first (NCHW) or channels-last
  // (CnnShape::channels_first).
  std::optional<bool> channels_first;
};

// `spec`: a catalog name, a path to a YAML file (*.yaml / *.yml), or
// "custom" (then layers, hidden, heads and seq_len are required). Flags
// override the shape (e.g. --seq-len on a catalog model).
Result<ModelSpec> ResolveModel(std::string_view spec, const ShapeFlags& flags);

// Parses a model YAML document; `source` names the file in errors.
Result<ModelSpec> LoadModelYaml(const std::string& text, const std::string& source);
// The same for a model mapping inside another YAML document (a job spec's
// `model:`): errors read "<source>:<line>: <field>.<key>: ..." with the
// node's own line numbers. Never throws.
Result<ModelSpec> LoadModelYamlNode(const YAML::Node& node, const std::string& source,
                                    const std::string& field);

}  // namespace tessel
