#include "calib/arena_database.h"

#include <nlohmann/json.hpp>

#include "core/csv.h"
#include "core/strings.h"

namespace tessel {

Result<std::vector<ArenaDbEntry>> ReadArenaDatabase(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(path + ": JSON syntax error at byte " + std::to_string(e.byte));
  }
  if (!j.is_object() || !j.contains("optimal") || !j["optimal"].is_object()) {
    return InvalidArgument(path + ": expected {\"optimal\": {\"<model>_<size>_<batch>\": {\"<mesh>\": seconds}}}");
  }
  std::vector<ArenaDbEntry> out;
  for (const auto& [key, configs] : j["optimal"].items()) {
    size_t last = key.rfind('_');
    if (last == std::string::npos) return InvalidArgument(path + ": optimal: bad key '" + key + "'");
    auto batch = ParseInt(key.substr(last + 1), path + ": optimal: " + key + ": batch");
    if (!batch.ok()) return batch.status();
    if (!configs.is_object()) return InvalidArgument(path + ": " + key + ": expected an object of meshes");
    for (const auto& [mesh_name, value] : configs.items()) {
      auto mesh = ParseArenaMesh(mesh_name, path + ": " + key);
      if (!mesh.ok()) return mesh.status();
      ArenaDbEntry e;
      e.key = key;
      e.model = key.substr(0, last);
      e.batch = static_cast<int>(*batch);
      e.mesh_name = mesh_name;
      e.mesh = *mesh;
      if (value.is_number()) {
        e.seconds = value.get<double>();
      } else if (value.is_array() && value.size() >= 2 && value[0].is_number() && value[1].is_number()) {
        // [iterations, total e2e s, avg e2e s, total local s, avg local s,
        // max memory GB] (the H100/L20 database). The older database stores
        // the average *local* iteration time (its profiler returns
        // local_avg_lat; an A40 console log of the artifact prints "Average
        // e2e iteration time: 13.995 ... local iteration time: 13.509" and
        // the database holds 13.509), so the same quantity is read here
        // where it is present: total local / iterations. Shorter lists give
        // the e2e total.
        double n_iter = value[0].get<double>();
        const size_t total = value.size() >= 5 && value[3].is_number() ? 3 : 1;
        e.seconds = n_iter > 0 ? value[total].get<double>() / n_iter : -1;
      } else {
        return InvalidArgument(path + ": " + key + "." + mesh_name +
                               ": expected seconds or [iterations, total e2e seconds, avg e2e, total local, "
                               "avg local, ...]");
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace tessel
