// Two wrappers around the policy's belief (a ThroughputModel):
//  - RefusalCounter counts the placements the belief refuses: distinct
//    (job, GPU type, GPU count, nodes) shapes it answered "does not fit"
//    (out of memory, or a precision the GPU lacks), and the jobs refused at
//    least once. The summary's memory_refusals and jobs_memory_refused.
//  - ArenaDpMemoryGate is the Arena artifact's memory check for baselines
//    (sjtu-epcc/arena, branch ae-eurosys, db_querier.py): a baseline runs a
//    data-parallel plan, so a shape fits only when the per-GPU memory of pure
//    data parallelism measured for the model, batch and GPU count
//    (arena/database/dp_mem.json, for 1, 2, 4, 8 and 16 GPUs; -1 = out of
//    memory) satisfies need x 1.2 <= 0.8 x the GPU's memory (the artifact's
//    headroom and XLA's pre-allocated fraction). A model the file lacks does
//    not fit (as in the artifact). Other GPU counts use the entry of the
//    largest listed count at or below them. Shapes that pass are answered by
//    the wrapped model.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "policy/throughput.h"

namespace tessel {

class RefusalCounter : public ThroughputModel {
 public:
  explicit RefusalCounter(ThroughputModel& base) : base_(base) {}
  std::string_view name() const override { return base_.name(); }
  uint64_t version() const override { return base_.version(); }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override {
    return Count(base_.Rate(job, type, gpus, nodes), job, type, gpus, nodes);
  }
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) override {
    return Count(base_.RateShared(job, type, gpus, nodes, network_share), job, type, gpus, nodes);
  }
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) override {
    return base_.PlanSet(job, type, gpus, nodes, max_plans);
  }
  // Counted when asked (RateShared), as before.
  void Prefetch(std::span<const RateQuery> queries) override { base_.Prefetch(queries); }
  void Anticipate(std::span<const RateQuery> queries) override { base_.Anticipate(queries); }
  int64_t refusals() const { return static_cast<int64_t>(shapes_.size()); }
  int64_t jobs_refused() const { return static_cast<int64_t>(jobs_.size()); }

 private:
  const JobRate& Count(const JobRate& r, const JobSpec& job, int type, int gpus, int nodes) {
    if (!r.fits) {
      shapes_.insert({job.id, type, gpus, nodes});
      jobs_.insert(job.id);
    }
    return r;
  }
  ThroughputModel& base_;
  std::set<std::tuple<std::string, int, int, int>> shapes_;
  std::set<std::string> jobs_;
};

class ArenaDpMemoryGate : public ThroughputModel {
 public:
  // Reads dp_mem.json at `path`.
  static Result<std::unique_ptr<ArenaDpMemoryGate>> Load(const std::string& path, const Cluster& cluster,
                                                         ThroughputModel& base);
  std::string_view name() const override { return base_.name(); }
  uint64_t version() const override { return base_.version(); }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override;
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double network_share) override {
    const JobRate* refused = Refused(job, type, gpus);
    return refused != nullptr ? *refused : base_.RateShared(job, type, gpus, nodes, network_share);
  }
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) override {
    if (Refused(job, type, gpus) != nullptr) return {};
    return base_.PlanSet(job, type, gpus, nodes, max_plans);
  }

 private:
  ArenaDpMemoryGate(const Cluster& cluster, ThroughputModel& base) : cluster_(cluster), base_(base) {}
  // The refusal for this shape, or null when data parallelism fits.
  const JobRate* Refused(const JobSpec& job, int type, int gpus);

  const Cluster& cluster_;
  ThroughputModel& base_;
  std::map<std::string, std::vector<double>> need_gb_;  // "bert_1.3B_128" -> GB at 1, 2, 4, 8, 16 GPUs
  std::map<std::tuple<std::string, int, int, int>, JobRate> refused_;  // (model, batch, type, gpus)
};

}  // namespace tessel
