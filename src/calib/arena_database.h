// Arena's measured iteration times (arena/database/prof_database*.json:
// {"optimal": {"<family>_<size>_<batch>": {"<mesh>": seconds}}}), read once
// for both the accuracy report (calib/reference) and the simulator's
// `--truth arena-db` (sim/arena_db).
#pragma once

#include <string>
#include <vector>

#include "calib/arena_mesh.h"
#include "core/status.h"

namespace tessel {

struct ArenaDbEntry {
  std::string key;    // "bert_1.3B_128"
  std::string model;  // "bert_1.3B" (FindModel accepts it)
  int batch = 0;
  std::string mesh_name;  // "1_a100_1_n_4_d"
  ArenaMesh mesh;
  // Seconds per iteration; <= 0 where the database says -1 (out of memory
  // or infeasible). The h100/l20 file's lists [iterations, total e2e s,
  // avg e2e s, total local s, avg local s, max memory GB] give total local
  // / iterations: the older file's quantity (its profiler's local_avg_lat).
  double seconds = 0;
};

// Every entry of the file, in the file's order. Errors name the path and
// the key or mesh that is malformed.
Result<std::vector<ArenaDbEntry>> ReadArenaDatabase(const std::string& path);

}  // namespace tessel
