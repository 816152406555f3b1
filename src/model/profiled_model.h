// Profiled models: jobs known only by measured per-iteration times, not by
// a shape the estimator could cost. Each entry is one model's forward and
// backward time per iteration on one GPU at a fixed per-GPU batch, and the
// bytes of gradient it all-reduces per iteration; the simulator times such
// jobs from these numbers (policy/profiled_throughput.h), never with the
// estimator. They are not in the model catalog (ModelCatalog, FindModel):
// traces may name them, the estimator and planner cannot.
//
// The embedded table holds the four models of Wang, Shi, Wang, Chu,
// "Communication Contention Aware Scheduling of Multiple Deep Learning
// Training Jobs" (ICDCS 2020), as their simulator states them
// (HKBU-HPML/dl-scheduling, online/job_master.py TEMPLATES, commit d5398bd).
// Thread-safe (immutable).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessel {

struct ProfiledModel {
  std::string name;         // "ddl-vgg16"
  std::string description;  // what was measured, and the dataset
  // Gradient bytes all-reduced per iteration (the model's size).
  double size_bytes = 0;
  // One iteration on one GPU at `per_gpu_batch` samples.
  double forward_s = 0;
  double backward_s = 0;
  int per_gpu_batch = 1;
  // Memory one worker holds on its GPU, MB (MiB): what limits how many jobs
  // share a GPU under --setting ddl-paper (sim/shared_gpu_sim.h).
  int train_memory_mb = 0;
  std::string source;
};

const std::vector<ProfiledModel>& ProfiledModels();
// Case-insensitive; nullptr when `name` is no profiled model.
const ProfiledModel* FindProfiledModel(std::string_view name);
std::vector<std::string> ProfiledModelNames();

}  // namespace tessel
