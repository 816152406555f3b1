#include "calib/arena_mesh.h"

#include "core/strings.h"

namespace tessel {

bool ArenaMesh::arena_node() const { return node != nullptr && StartsWith(node->name, "arena-"); }

Result<ArenaMesh> ParseArenaMesh(std::string_view name, const std::string& where) {
  auto parts = Split(name, '_');
  if (parts.size() < 5 || parts[2] != parts[0] || parts[3] != "n") {
    return InvalidArgument(where + ": '" + std::string(name) +
                           "' is not <hosts>_<gpu>_<hosts>_n_<gpus per host>_d[_ib]");
  }
  auto hosts = ParseInt(parts[0], where + ": hosts");
  if (!hosts.ok()) return hosts.status();
  auto per = ParseInt(parts[4], where + ": gpus per host");
  if (!per.ok()) return per.status();
  auto gpu = FindGpu(parts[1]);  // aliases: a100 -> a100-40g, v100 -> v100-32g, h100 -> h100-sxm
  if (!gpu.ok()) return InvalidArgument(where + ": " + gpu.status().message());
  ArenaMesh m;
  m.hosts = static_cast<int>(*hosts);
  m.gpus_per_host = static_cast<int>(*per);
  m.gpu_token = parts[1];
  m.gpu = *gpu;
  auto node = FindNodeType("arena-" + parts[1]);
  m.node = node.ok() ? *node : &DefaultNodeFor(**gpu);
  m.infiniband = std::string_view(name).ends_with("_ib");
  return m;
}

}  // namespace tessel
