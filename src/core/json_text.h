// JSON text that never throws: strings that are not valid UTF-8 (a file
// name, a cluster name, a value read from a file or from Slurm) have their
// invalid bytes replaced by U+FFFD instead of aborting the output
// (nlohmann's type_error.316). Every JSON tessel writes goes through here.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace tessel {

// `indent` < 0: one line; otherwise pretty-printed with that many spaces.
std::string JsonText(const nlohmann::json& j, int indent = -1);
// The same keeping the object's key order.
std::string JsonText(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace tessel
