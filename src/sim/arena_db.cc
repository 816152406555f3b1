#include "sim/arena_db.h"

#include "calib/arena_database.h"
#include "model/catalog.h"

namespace tessel {

Result<std::unique_ptr<ArenaDbThroughput>> ArenaDbThroughput::Load(const std::string& path, const Cluster& cluster,
                                                                   ThroughputModel& fallback) {
  auto entries = ReadArenaDatabase(path);
  if (!entries.ok()) return entries.status();
  std::unique_ptr<ArenaDbThroughput> db(new ArenaDbThroughput(cluster, fallback));
  for (const ArenaDbEntry& e : *entries) {
    db->measured_s_[{e.key, e.mesh.gpu, e.mesh.hosts, e.mesh.gpus_per_host}] = e.seconds;
  }
  return db;
}

std::string ArenaDbKey(const JobSpec& job) {
  size_t sep = job.model.find("__");
  if (sep == std::string::npos) return "";
  return job.model.substr(0, sep) + "_" + job.model.substr(sep + 2) + "_" + std::to_string(job.global_batch);
}

const double* ArenaDbThroughput::Measured(const JobSpec& job, int type, int gpus, int nodes) const {
  const std::string key = ArenaDbKey(job);
  if (key.empty() || nodes <= 0 || gpus % nodes != 0) return nullptr;
  auto m = measured_s_.find({key, cluster_.types()[type].gpu, nodes, gpus / nodes});
  return m != measured_s_.end() ? &m->second : nullptr;
}

void ArenaDbThroughput::Prefetch(std::span<const RateQuery> queries) {
  std::vector<RateQuery> fallback;
  for (const RateQuery& q : queries) {
    if (cache_.count(std::make_tuple(q.job->model, q.job->global_batch, q.type, q.gpus, q.nodes)) != 0) continue;
    if (Measured(*q.job, q.type, q.gpus, q.nodes) == nullptr) fallback.push_back({q.job, q.type, q.gpus, q.nodes});
  }
  fallback_.Prefetch(fallback);
}

const JobRate& ArenaDbThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  auto ckey = std::make_tuple(job.model, job.global_batch, type, gpus, nodes);
  auto it = cache_.find(ckey);
  if (it != cache_.end()) return it->second;
  JobRate rate;
  const double* seconds = Measured(job, type, gpus, nodes);
  if (seconds != nullptr) {
    ++measured_;
    if (*seconds > 0) {
      rate.fits = true;
      rate.iteration_time_s = *seconds;
      rate.samples_per_s = job.global_batch / *seconds;
      auto model = FindModel(job.model);
      if (model.ok()) rate.tokens_per_s = rate.samples_per_s * (*model)->SeqLen();
      if (model.ok() && (*model)->kind != ModelKind::kTransformer) rate.tokens_per_s = 0;
    } else {
      rate.reason = "measured out of memory (prof_database: -1)";
    }
  } else {
    ++fallbacks_;
    rate = fallback_.Rate(job, type, gpus, nodes);
  }
  return cache_.emplace(ckey, std::move(rate)).first->second;
}

}  // namespace tessel
