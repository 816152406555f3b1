#include "model/profiled_model.h"

#include "core/strings.h"

namespace tessel {

namespace {

// HKBU-HPML/dl-scheduling (d5398bd, "finish ICDCS2020 experiments"),
// online/job_master.py TEMPLATES: model_size in MB, fw_time and bw_time in
// ms per iteration, batch_size per worker (GPU). Their simulator charges an
// all-reduce beta * model_size with beta = 0.856 ms/MB on 10 GbE
// (online/cluster.py, node.net_conf), so the sizes are read as decimal MB
// (1e6 bytes): with the 0.935 efficiency of policy/profiled_throughput.h
// 10 Gb/s then gives 0.8556 ms per MB. (The figures look like MiB of fp32
// weights, e.g. VGG-16's 138.4M parameters are 527.9 MiB; it is the
// repository's time per MB that the decimal reading reproduces.)
// train_mem (MB per GPU) is what their simulator packs several jobs on one
// 32 GB GPU by; tessel uses it under --setting ddl-paper only, elsewhere a
// job has whole GPUs.
constexpr char kSource[] = "HKBU-HPML/dl-scheduling online/job_master.py (d5398bd), Wang et al. ICDCS 2020";

ProfiledModel Make(const char* name, const char* description, double size_mb, double forward_ms,
                   double backward_ms, int per_gpu_batch, int train_memory_mb) {
  return {name,           description, size_mb * 1e6,   forward_ms / 1e3, backward_ms / 1e3,
          per_gpu_batch,  train_memory_mb, kSource};
}

}  // namespace

const std::vector<ProfiledModel>& ProfiledModels() {
  static const std::vector<ProfiledModel> kModels = {
      Make("ddl-vgg16", "VGG-16 on ImageNet, measured for Wang et al. (ICDCS 2020)", 526.4, 36, 54, 16, 4527),
      Make("ddl-resnet50", "ResNet-50 on ImageNet, measured for Wang et al. (ICDCS 2020)", 99.2, 25, 37, 16, 3213),
      Make("ddl-inception3", "Inception-v3 on ImageNet, measured for Wang et al. (ICDCS 2020)", 103.0, 35, 52, 16, 3291),
      Make("ddl-lstm-ptb", "LSTM on Penn Treebank, measured for Wang et al. (ICDCS 2020)", 251.8, 32, 47, 64, 2751),
  };
  return kModels;
}

const ProfiledModel* FindProfiledModel(std::string_view name) {
  std::string l = ToLower(Trim(name));
  for (const ProfiledModel& m : ProfiledModels())
    if (m.name == l) return &m;
  return nullptr;
}

std::vector<std::string> ProfiledModelNames() {
  std::vector<std::string> out;
  for (const ProfiledModel& m : ProfiledModels()) out.push_back(m.name);
  return out;
}

}  // namespace tessel
