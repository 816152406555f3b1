// Jobs of profiled models (model/profiled_model.h) timed from their
// measured per-iteration profiles; every other job is answered by the
// wrapped model. The simulator wraps both its truth and its belief in one,
// so traces of the Wang et al. (ICDCS 2020) setting run under any --truth.
//
// A profiled job of global batch B on g GPUs over n nodes, pure data
// parallel (d = g, one micro-batch), as the paper's simulator
// (HKBU-HPML/dl-scheduling) runs it: forward, backward, then the gradient
// all-reduce, not overlapped:
//   compute   = (forward + backward) x (B / g) / per-GPU batch profiled
//   all-reduce = 0 on one node (their simulator charges jobs inside one
//               node nothing), else size / (node NIC bytes/s x 0.935 x share)
//   iteration = compute + all-reduce; network_s = network_exposed_s =
//               all-reduce; samples/s = B / iteration; tokens/s = 0.
// 0.935 turns 10 Gb/s (1.25e9 B/s) into the repository's all-reduce cost
// beta = 0.856 ms/MB (1e6 B / (1.25e9 x 0.935) B/s = 0.8556 ms); the cost
// does not grow with the number of nodes (their alpha = 0). Compute time
// scales linearly with the samples per GPU (the profile holds one batch).
// Memory is not modelled: a profiled job fits on any GPU (their jobs need
// 2.7-4.5 GB of a 32 GB GPU), and the GPU type does not change its times.
//
// Cheap for other jobs: one hash lookup of the model name (memoised), then
// the wrapped model's answer. Not thread-safe (memoises), like every
// ThroughputModel.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "model/profiled_model.h"
#include "policy/throughput.h"

namespace tessel {

class ProfiledThroughput : public ThroughputModel {
 public:
  // The profiled share of a NIC's line rate an all-reduce achieves.
  static constexpr double kAllReduceEfficiency = 0.935;

  // `cluster` and `base` must outlive this.
  ProfiledThroughput(const Cluster& cluster, ThroughputModel& base) : cluster_(cluster), base_(base) {}
  // The wrapped model's name: reports name the source of everything else.
  std::string_view name() const override { return base_.name(); }
  uint64_t version() const override { return base_.version(); }

  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override;
  // A profiled job's all-reduce takes 1/share as long (share clamped to
  // [1/64, 1], as the estimator's).
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) override;
  // A profiled job: its one data-parallel plan (memory 0: not modelled).
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) override;
  // The base's questions: those of jobs whose models are not profiled.
  void Prefetch(std::span<const RateQuery> queries) override;
  void Anticipate(std::span<const RateQuery> queries) override;

 private:
  std::vector<RateQuery> Unprofiled(std::span<const RateQuery> queries);
  const ProfiledModel* Profile(const std::string& model);
  const JobRate& Profiled(const ProfiledModel& p, const JobSpec& job, int type, int gpus, int nodes,
                          double network_share);

  const Cluster& cluster_;
  ThroughputModel& base_;
  std::unordered_map<std::string, const ProfiledModel*> profiles_;  // model name -> profile or null
  std::map<std::tuple<const ProfiledModel*, int, int, int, int, double>, JobRate> rates_;
};

}  // namespace tessel
