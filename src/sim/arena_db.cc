#include "sim/arena_db.h"

#include <nlohmann/json.hpp>

#include "calib/arena_mesh.h"
#include "core/csv.h"
#include "model/catalog.h"

namespace tessel {

Result<std::unique_ptr<ArenaDbThroughput>> ArenaDbThroughput::Load(const std::string& path, const Cluster& cluster,
                                                                   ThroughputModel& fallback) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path + ": not valid JSON: " + e.what());
  }
  if (!root.is_object() || !root.contains("optimal") || !root["optimal"].is_object()) {
    return InvalidArgument(path + ": expected {\"optimal\": {\"<model>_<size>_<batch>\": {\"<mesh>\": seconds}}}");
  }
  std::unique_ptr<ArenaDbThroughput> db(new ArenaDbThroughput(cluster, fallback));
  for (const auto& [model_key, meshes] : root["optimal"].items()) {
    if (!meshes.is_object()) return InvalidArgument(path + ": " + model_key + ": expected an object of meshes");
    for (const auto& [mesh_name, value] : meshes.items()) {
      std::string where = path + ": " + model_key + "." + mesh_name;
      auto mesh = ParseArenaMesh(mesh_name, where);
      if (!mesh.ok()) return mesh.status();
      double seconds = 0;
      if (value.is_number()) {
        seconds = value.get<double>();
      } else if (value.is_array() && value.size() >= 2 && value[0].is_number() && value[1].is_number()) {
        // [iterations measured, their total time] (prof_database_h100_l20).
        double n = value[0].get<double>();
        seconds = n > 0 ? value[1].get<double>() / n : -1;
        if (value[1].get<double>() < 0) seconds = -1;
      } else {
        return InvalidArgument(where + ": expected seconds or [iterations, total seconds]");
      }
      db->measured_s_[{model_key, mesh->gpu, mesh->hosts, mesh->gpus_per_host}] = seconds;
    }
  }
  return db;
}

const JobRate& ArenaDbThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  auto ckey = std::make_tuple(job.model, job.global_batch, type, gpus, nodes);
  auto it = cache_.find(ckey);
  if (it != cache_.end()) return it->second;
  // "bert__1.3B" -> "bert_1.3B_<batch>".
  std::string key;
  size_t sep = job.model.find("__");
  if (sep != std::string::npos) {
    key = job.model.substr(0, sep) + "_" + job.model.substr(sep + 2) + "_" + std::to_string(job.global_batch);
  }
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
