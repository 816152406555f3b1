// Measured profiles of the Pollux/Sia applications (../shared/data/pollux/apps,
// ../shared/data/sia/apps): how fast each trains on each placement and GPU
// type, and how its gradient statistics and validation progress evolve. The
// simulator plays jobs from these (the `apps` truth source) the way the
// Pollux and Sia artifacts' simulators do; they are also what the agent's
// throughput model is fitted from, step by step, as a job runs.
//
// Directory layout of one application (`<apps>/<app>/`):
//   placements.csv or placements-<node>.csv:  placement,local_bsz,step_time,sync_time
//       placement = per-node replica counts as digits ("22" = 2 nodes x 2 GPUs)
//   scalability.csv or scalability-<node>.csv: num_nodes,num_replicas,local_bsz,step_time,sync_time
//   validation-<batch>.csv: progress,iteration,metric,grad_sqr,grad_var (one row per epoch)
// `<node>` names Sia's node kinds, mapped to catalog GPUs: aws -> t4,
// azure -> v100-32g, dgx-ext and dgx -> a100-40g (dgx-ext preferred),
// quad -> rtx6000, rtx -> rtx2080ti. Unsuffixed files are T4 (Pollux's
// testbed), used when no placements-aws.csv exists.
//
// Units: seconds per step; progress in steps at the initial batch size (the
// smallest validated batch), as in the profiles.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "goodput/goodput.h"

namespace tessel::goodput {

// Per-application settings the profiles do not carry. The defaults for the
// six Pollux applications are the Pollux artifact's (simulator/
// applications.py): max_epochs bert 2, cifar10 100, ncf 10, imagenet 90,
// deepspeech2 80, yolov3 50 (and yolov3's max local batch 8); gpt_pmp 10
// (our choice: Sia's artifact does not state it). The artifact also pins
// ncf under Pollux to batch 32768 on one GPU (its jobs last seconds, so a
// restart costs more than scaling gains): fixed_batch and max_replicas.
struct AppSettings {
  std::optional<int> max_epochs;
  std::optional<int> max_local_bsz;
  std::optional<int> fixed_batch;   // the batch never adapts, even under goodput policies
  std::optional<int> max_replicas;  // goodput policies never give it more GPUs
};
AppSettings DefaultAppSettings(std::string_view app);

struct StepTime {
  double step_s = 0;  // whole optimizer step (no accumulation)
  double sync_s = 0;  // of which gradient synchronisation
};

class AppProfile {
 public:
  // Reads `<dir>` (one application); the app's name is the directory name.
  // Errors name the file, line and column.
  static Result<AppProfile> Load(const std::string& dir);
  static Result<AppProfile> Load(const std::string& dir, const AppSettings& settings);

  const std::string& name() const { return name_; }
  int init_batch() const { return init_batch_; }    // smallest validated batch
  int max_batch() const { return max_batch_; }      // largest validated batch
  int min_local_bsz() const { return min_local_bsz_; }  // smallest profiled local batch
  int max_local_bsz() const { return max_local_bsz_; }  // largest (or the setting)
  int max_epochs() const { return max_epochs_; }
  const std::optional<int>& fixed_batch() const { return fixed_batch_; }
  const std::optional<int>& max_replicas() const { return max_replicas_; }
  BatchLimits limits() const;

  // Catalog GPU names with a throughput table, sorted.
  std::vector<std::string> gpu_types() const;
  bool HasGpu(std::string_view gpu) const;
  int gpus_per_node(std::string_view gpu) const;  // largest per-node count profiled

  // Step and sync time on `gpu` for a placement (replicas per node, zeros
  // ignored, any order) at per-GPU batch `local_bsz`. A profiled placement
  // (up to rotation) interpolates linearly in local_bsz; any other
  // interpolates over (nodes, replicas, local_bsz) in the placement means
  // and scalability rows (tensor-product linear, clamped at the edges).
  // local_bsz is clamped to the profiled range. NotFound for an unprofiled
  // GPU type.
  Result<StepTime> Throughput(std::string_view gpu, std::span<const int> placement,
                              double local_bsz) const;

  // Gradient statistics during `epoch` (0-based) at total batch `batch`,
  // interpolated linearly between the two nearest validated batch sizes
  // (clamped to [init_batch, max_batch]; epoch clamped to the profile).
  GradStats GradStatsAt(double batch, int epoch) const;

  // Progress at the start of `epoch` (0 for epoch 0): the smallest progress
  // any validated batch size had reached after epoch - 1 epochs.
  double ProgressAt(int epoch) const;
  // The epoch that `progress` falls in.
  int EpochAt(double progress) const;
  // Progress at which the job is done: ProgressAt(max_epochs()).
  double TargetProgress() const { return ProgressAt(max_epochs_); }

 private:
  struct Table;  // one GPU type's placements + scalability
  std::string name_;
  int init_batch_ = 1, max_batch_ = 1, min_local_bsz_ = 1, max_local_bsz_ = 1, max_epochs_ = 1;
  std::optional<int> fixed_batch_, max_replicas_;
  std::map<std::string, std::shared_ptr<const Table>, std::less<>> tables_;  // by GPU
  struct Validation {
    int batch = 0;
    std::vector<double> progress, grad_sqr, grad_var;
  };
  std::vector<Validation> validation_;  // ascending batch
  std::vector<double> epoch_progress_;  // ProgressAt(e) for e in [0, max_epochs]
};

// All applications under one directory (`<data>/sia/apps` or
// `<data>/pollux/apps`), loaded once.
class AppCatalog {
 public:
  static Result<AppCatalog> Load(const std::string& apps_dir);
  const AppProfile* Find(std::string_view app) const;  // nullptr if absent
  std::vector<std::string> names() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, AppProfile, std::less<>> apps_;
};

}  // namespace tessel::goodput
