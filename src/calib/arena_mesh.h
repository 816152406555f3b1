// The Arena artifact's mesh names, "<hosts>_<gpu>_<hosts>_n_<gpus per
// host>_d[_ib]" (arena/comm file names, arena/database keys), and the
// testbed hardware they denote.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "hardware/node.h"

namespace tessel {

struct ArenaMesh {
  int hosts = 1;
  int gpus_per_host = 1;
  std::string gpu_token;          // as written: "a100", "v100", "l20"
  const GpuSpec* gpu = nullptr;   // the catalog GPU (by name or alias)
  const NodeType* node = nullptr; // arena-<gpu> when the catalog has it, else the GPU's usual node
  bool infiniband = false;        // "_ib" suffix
  bool arena_node() const;        // node is one of the Arena testbed's
};

// `where` prefixes errors (a file path or database key).
Result<ArenaMesh> ParseArenaMesh(std::string_view name, const std::string& where);

}  // namespace tessel
