#include "sim/arena_db.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "calib/arena_database.h"
#include "core/strings.h"
#include "model/catalog.h"

namespace tessel {
namespace {

// The model sizes of each Arena family, smallest first
// (supported_model_cfgs, resources/hardware_specs.py:65-81 at 65573a2).
const std::map<std::string, std::vector<std::string>>& ArenaFamilies() {
  static const std::map<std::string, std::vector<std::string>> families = {
      {"wide_resnet", {"500M", "1B", "2B", "4B", "6.8B", "13B"}},
      {"bert", {"760M", "1.3B", "2.6B", "6.7B", "15B", "39B"}},
      {"moe", {"690M", "1.3B", "2.4B", "10B", "27B", "70B"}},
  };
  return families;
}

// The database's key: family "bert", size "1.3B", batch 128 -> "bert_1.3B_128".
std::string KeyOf(std::string_view family, std::string_view size, int batch) {
  return std::string(family) + "_" + std::string(size) + "_" + std::to_string(batch);
}

// A job that runs: one iteration in `seconds`.
JobRate Runs(const JobSpec& job, double seconds) {
  JobRate rate;
  rate.fits = true;
  rate.iteration_time_s = seconds;
  rate.samples_per_s = job.global_batch / seconds;
  auto model = FindModel(job.model);
  if (model.ok() && (*model)->kind == ModelKind::kTransformer) {
    rate.tokens_per_s = rate.samples_per_s * (*model)->SeqLen();
  }
  return rate;
}

constexpr double kLocalityScale = 0.9;   // LOCALITY_SCALE_FACTOR
constexpr double kParamNumScale = 1.8;   // PARAM_NUM_SCALE_FACTOR
constexpr double kRoundS = 300;          // SCHEDULING_INTERVAL: longer iterations are infeasible

}  // namespace

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

std::unique_ptr<ArenaDbThroughput> ArenaDbThroughput::ArtifactDataParallelView() const {
  std::unique_ptr<ArenaDbThroughput> view(new ArenaDbThroughput(cluster_, fallback_));
  view->measured_s_ = measured_s_;
  view->AnswerAsTheArtifactsQuerier(/*scaled=*/false);
  return view;
}

std::string ArenaDbKey(const JobSpec& job) {
  size_t sep = job.model.find("__");
  if (sep == std::string::npos) return "";
  return KeyOf(std::string_view(job.model).substr(0, sep), std::string_view(job.model).substr(sep + 2),
               job.global_batch);
}

const double* ArenaDbThroughput::Find(const std::string& key, int type, int hosts, int per_host) const {
  auto m = measured_s_.find({key, cluster_.types()[type].gpu, hosts, per_host});
  return m != measured_s_.end() ? &m->second : nullptr;
}

const double* ArenaDbThroughput::Measured(const std::string& key, int type, int gpus, int nodes) const {
  if (key.empty() || nodes <= 0 || gpus % nodes != 0) return nullptr;
  return Find(key, type, nodes, gpus / nodes);
}

JobRate ArenaDbThroughput::QuerierRate(const std::string& key, const JobSpec& job, int type, int gpus,
                                       int nodes) const {
  JobRate rate;
  const int per_host = std::max(1, gpus / std::max(1, nodes));
  const int capacity = std::max(1, cluster_.types()[type].max_gpus_per_node);
  // The best locality: one node up to its capacity, else whole nodes.
  const int best_hosts = gpus <= capacity ? 1 : gpus / capacity;
  const int best_per_host = gpus <= capacity ? gpus : capacity;
  double seconds = 0;
  double scale = 1;  // on throughput
  std::string how;
  if (const double* s = Measured(key, type, gpus, nodes); s != nullptr) {
    seconds = *s;
    how = "its own mesh";
  } else if (const double* s = Find(key, type, best_hosts, best_per_host); s != nullptr) {
    seconds = *s;
    const int halvings = static_cast<int>(std::log2(std::max(1, best_per_host / per_host)));
    scale = std::pow(kLocalityScale, halvings);
    how = "its best locality (" + std::to_string(best_hosts) + " x " + std::to_string(best_per_host) + ") x 0.9^" +
          std::to_string(halvings);
  } else {
    const size_t sep = job.model.find("__");
    auto family = ArenaFamilies().find(job.model.substr(0, sep));
    const double* grown = nullptr;
    if (family != ArenaFamilies().end() && nodes > 0 && gpus % nodes == 0) {
      const auto& sizes = family->second;
      auto at = std::find(sizes.begin(), sizes.end(), job.model.substr(sep + 2));
      for (auto next = at == sizes.end() ? sizes.end() : at + 1; next != sizes.end() && grown == nullptr; ++next) {
        grown = Find(KeyOf(family->first, *next, job.global_batch), type, nodes, per_host);
        if (grown != nullptr) {
          const int steps = static_cast<int>(next - at);
          scale = std::pow(kParamNumScale, steps);
          how = "the " + *next + " model's x 1.8^" + std::to_string(steps);
        }
      }
    }
    if (grown == nullptr) {
      rate.reason = "not in the Arena database at " + std::to_string(nodes) + " nodes, nor at its best locality or a "
                    "larger model's (the artifact's querier: infeasible)";
      return rate;
    }
    seconds = *grown;
  }
  if (seconds <= 0) {
    rate.reason = "measured out of memory at " + how + " (prof_database: -1)";
    return rate;
  }
  if (seconds > kRoundS) {
    rate.reason = "an iteration of " + FormatDouble(seconds) + " s at " + how + " outlasts the 300 s round";
    return rate;
  }
  return Runs(job, querier_scaled_ ? seconds / scale : seconds);
}

std::vector<RateQuery> ArenaDbThroughput::FallbackQuestions(std::span<const RateQuery> queries) const {
  std::vector<RateQuery> fallback;
  for (const RateQuery& q : queries) {
    if (cache_.count(std::make_tuple(q.job->model, q.job->global_batch, q.type, q.gpus, q.nodes)) != 0) continue;
    const std::string key = ArenaDbKey(*q.job);
    if ((artifact_querier_ && !key.empty()) || Measured(key, q.type, q.gpus, q.nodes) != nullptr) continue;
    fallback.push_back({q.job, q.type, q.gpus, q.nodes});
  }
  return fallback;
}

void ArenaDbThroughput::Prefetch(std::span<const RateQuery> queries) { fallback_.Prefetch(FallbackQuestions(queries)); }

void ArenaDbThroughput::Anticipate(std::span<const RateQuery> queries) {
  fallback_.Anticipate(FallbackQuestions(queries));
}

const JobRate& ArenaDbThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  auto ckey = std::make_tuple(job.model, job.global_batch, type, gpus, nodes);
  auto it = cache_.find(ckey);
  if (it != cache_.end()) return it->second;
  JobRate rate;
  const std::string key = ArenaDbKey(job);
  const double* seconds = nullptr;
  if (artifact_querier_ && !key.empty()) {
    ++measured_;
    rate = QuerierRate(key, job, type, gpus, nodes);
  } else if ((seconds = Measured(key, type, gpus, nodes)) != nullptr) {
    ++measured_;
    if (*seconds > 0) {
      rate = Runs(job, *seconds);
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
