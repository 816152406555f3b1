// Arena's measured iteration times (arena/database/prof_database.json: the
// best plan Alpa found for each model, batch and mesh, timed on real GPUs)
// as a ThroughputModel, for `--truth arena-db`.
//
// A job's rate on an allocation is the measured time for its model, batch
// and (hosts, GPUs per host, GPU type) when the database has that entry;
// -1 in the database (measured out of memory) is "does not fit". Shapes the
// database lacks (other models, uneven splits, other GPU types) are
// answered by the fallback model, and counted; under `--setting
// arena-artifact` they are answered as the artifact's own querier answers
// them instead (AnswerAsTheArtifactsQuerier).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "core/status.h"
#include "policy/throughput.h"

namespace tessel {

// The Arena artifact's key for a job's model and batch, as its database
// files write it: model "bert__1.3B" at batch 128 -> "bert_1.3B_128";
// "" for a model outside Arena's families.
std::string ArenaDbKey(const JobSpec& job);

class ArenaDbThroughput : public ThroughputModel {
 public:
  // Reads `path` (prof_database.json or the h100/l20 variant).
  static Result<std::unique_ptr<ArenaDbThroughput>> Load(const std::string& path, const Cluster& cluster,
                                                         ThroughputModel& fallback);

  std::string_view name() const override { return "arena-db"; }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override;
  // The fallback's questions: the shapes the database does not hold.
  void Prefetch(std::span<const RateQuery> queries) override;
  void Anticipate(std::span<const RateQuery> queries) override;
  // Shapes the database lacks are answered as the Arena artifact's
  // DatabaseQuerier answers its optimal-plan queries (sjtu-epcc/arena at
  // 65573a2, db_querier.py:102-140 and :142-149, :208-245): the mesh's own
  // entry; else the type's best locality for the count (one node up to its
  // GPUs per node, else whole nodes), its throughput x 0.9 for each halving
  // of the GPUs per host (LOCALITY_SCALE_FACTOR, macro/macro_def.py:73);
  // else the same mesh of a larger model of the family, x 1.8 per size step
  // (PARAM_NUM_SCALE_FACTOR, :75); else "does not fit". An iteration longer
  // than the 300 s round does not fit either. Models outside Arena's
  // families still go to the fallback model.
  // `scaled` = false: the artifact's data-parallel queries, which its
  // baselines decide on (only_dp, db_querier.py:246-286): the same entries,
  // their times taken as they are, without the 0.9 and 1.8 factors.
  void AnswerAsTheArtifactsQuerier(bool scaled = true) {
    artifact_querier_ = true;
    querier_scaled_ = scaled;
  }
  // The same measured table, answering as the artifact's data-parallel
  // queries (AnswerAsTheArtifactsQuerier(false)), with the same fallback:
  // what the artifact's baselines decide on, without reading the file again.
  std::unique_ptr<ArenaDbThroughput> ArtifactDataParallelView() const;
  int64_t measured_answers() const { return measured_; }
  int64_t fallback_answers() const { return fallbacks_; }

 private:
  ArenaDbThroughput(const Cluster& cluster, ThroughputModel& fallback) : cluster_(cluster), fallback_(fallback) {}
  // Of `queries`, those the fallback answers and has not answered yet.
  std::vector<RateQuery> FallbackQuestions(std::span<const RateQuery> queries) const;
  // The database's seconds for the shape of the model and batch `key`
  // (ArenaDbKey; <= 0: measured out of memory); nullptr when it has none.
  const double* Measured(const std::string& key, int type, int gpus, int nodes) const;
  // The artifact querier's answer for the shape (`key`: the job's ArenaDbKey).
  JobRate QuerierRate(const std::string& key, const JobSpec& job, int type, int gpus, int nodes) const;
  const double* Find(const std::string& key, int type, int hosts, int per_host) const;

  // (model key "bert_1.3B_128", GPU, hosts, GPUs per host) -> seconds.
  using Key = std::tuple<std::string, const GpuSpec*, int, int>;
  const Cluster& cluster_;
  ThroughputModel& fallback_;
  std::map<Key, double> measured_s_;
  std::map<std::tuple<std::string, int, int, int, int>, JobRate> cache_;
  int64_t measured_ = 0;
  int64_t fallbacks_ = 0;
  bool artifact_querier_ = false;
  bool querier_scaled_ = true;
};

}  // namespace tessel
