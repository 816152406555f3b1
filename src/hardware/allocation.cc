#include "hardware/allocation.h"

namespace tessel {

std::string Allocation::ToString(const Cluster& cluster) const {
  if (empty()) return "-";
  std::string s = cluster.TypeName(type) + " x" + std::to_string(gpus()) + " on ";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += ",";
    s += "n" + std::to_string(parts[i].node) + ":" + std::to_string(parts[i].gpus);
  }
  return s;
}

}  // namespace tessel
