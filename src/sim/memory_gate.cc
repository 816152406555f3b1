#include "sim/memory_gate.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/strings.h"
#include "hardware/cluster.h"
#include "sim/arena_db.h"

namespace tessel {
namespace {

// The artifact's rule: need x 1.2 <= max_mem x 0.8.
constexpr double kHeadroom = 1.2;
constexpr double kUsableFraction = 0.8;
constexpr int kCounts[] = {1, 2, 4, 8, 16};

}  // namespace

Result<std::unique_ptr<ArenaDpMemoryGate>> ArenaDpMemoryGate::Load(const std::string& path, const Cluster& cluster,
                                                                   ThroughputModel& base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot read (the Arena artifact's dp_mem.json)");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  // A list of objects (the artifact's file holds one) or one object.
  std::vector<const nlohmann::json*> objects;
  if (doc.is_array()) {
    for (const auto& o : doc) objects.push_back(&o);
  } else {
    objects.push_back(&doc);
  }
  std::unique_ptr<ArenaDpMemoryGate> gate(new ArenaDpMemoryGate(cluster, base));
  for (const nlohmann::json* o : objects) {
    if (!o->is_object()) return InvalidArgument(path + ": expected objects of \"model_size_batch\": [5 numbers]");
    for (const auto& [key, list] : o->items()) {
      if (!list.is_array() || list.size() != std::size(kCounts)) {
        return InvalidArgument(path + ": " + key + ": expected a list of 5 numbers (GB per GPU at 1, 2, 4, 8, 16 GPUs)");
      }
      std::vector<double> need;
      for (const auto& v : list) {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() > 1e6) {
          return InvalidArgument(path + ": " + key + ": expected numbers (GB; -1 = out of memory)");
        }
        need.push_back(v.get<double>());
      }
      gate->need_gb_[key] = std::move(need);
    }
  }
  return gate;
}

const JobRate* ArenaDpMemoryGate::Refused(const JobSpec& job, int type, int gpus) {
  auto ckey = std::make_tuple(job.model, job.global_batch, type, gpus);
  if (auto it = refused_.find(ckey); it != refused_.end()) return it->second.fits ? nullptr : &it->second;
  JobRate verdict;
  verdict.fits = true;  // the cached "passes"
  const std::string key = ArenaDbKey(job);
  auto it = need_gb_.find(key);
  if (it == need_gb_.end()) {
    verdict.fits = false;
    verdict.reason = "no data-parallel memory measurement for " + (key.empty() ? job.model : key) +
                     " (dp_mem.json); the Arena artifact's baselines cannot place it";
  } else {
    size_t i = 0;
    while (i + 1 < std::size(kCounts) && kCounts[i + 1] <= gpus) ++i;
    const double need = it->second[i];
    const double mem = cluster_.types()[type].gpu->memory_gib;
    if (need < 0 || need * kHeadroom > mem * kUsableFraction) {
      verdict.fits = false;
      verdict.reason = "data-parallel plan out of memory on " + std::to_string(gpus) + " " +
                       cluster_.types()[type].gpu->name + " (dp_mem.json: " +
                       (need < 0 ? std::string("measured out of memory") : FormatDouble(need) + " GB per GPU") +
                       "; x1.2 must be <= 80% of " + FormatDouble(mem) + " GB)";
    }
  }
  auto& stored = refused_.emplace(ckey, std::move(verdict)).first->second;
  return stored.fits ? nullptr : &stored;
}

const JobRate& ArenaDpMemoryGate::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  const JobRate* refused = Refused(job, type, gpus);
  return refused != nullptr ? *refused : base_.Rate(job, type, gpus, nodes);
}

}  // namespace tessel
