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

const JobRate& ArenaDbThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  auto ckey = std::make_tuple(job.model, job.global_batch, type, gpus, nodes);
  auto it = cache_.find(ckey);
  if (it != cache_.end()) return it->second;
  const std::string key = ArenaDbKey(job);
  JobRate rate;
  bool found = false;
  if (!key.empty() && nodes > 0 && gpus % nodes == 0) {
    auto m = measured_s_.find({key, cluster_.types()[type].gpu, nodes, gpus / nodes});
    if (m != measured_s_.end()) {
      found = true;
      ++measured_;
      if (m->second > 0) {
        rate.fits = true;
        rate.iteration_time_s = m->second;
        rate.samples_per_s = job.global_batch / m->second;
        auto model = FindModel(job.model);
        if (model.ok()) rate.tokens_per_s = rate.samples_per_s * (*model)->SeqLen();
        if (model.ok() && (*model)->kind != ModelKind::kTransformer) rate.tokens_per_s = 0;
      } else {
        rate.reason = "measured out of memory (prof_database: -1)";
      }
    }
  }
  if (!found) {
    ++fallbacks_;
    rate = fallback_.Rate(job, type, gpus, nodes);
  }
  return cache_.emplace(ckey, std::move(rate)).first->second;
}

}  // namespace tessel
