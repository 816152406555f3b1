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

namespace tessel {

const std::vector<ModelSpec>& ModelCatalog();
std::vector<std::string> ModelNames();
// Case-insensitive; Arena's `family__size` and `family_size` both accepted.
Result<const ModelSpec*> FindModel(std::string_view name);

// Shape flags of the CLI; unset fields keep the base model's value.
struct ShapeFlags {
  std::optional<int> layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, experts, top_k;
};

// `spec`: a catalog name, a path to a YAML file (*.yaml / *.yml), or
// "custom" (then layers, hidden, heads and seq_len are required). Flags
// override the shape (e.g. --seq-len on a catalog model).
Result<ModelSpec> ResolveModel(std::string_view spec, const ShapeFlags& flags);

// Parses a model YAML document; `source` names the file in errors.
Result<ModelSpec> LoadModelYaml(const std::string& text, const std::string& source);

}  // namespace tessel
