// GPUs allocated per type over the last hours, for the dashboard's cluster
// chart (GET /v1/cluster/history): the daemon's loop records what the Slurm
// backend counts (SlurmBackend::GpusAllocatedByType) at its polls, at most
// one sample per `interval`, into a ring of `capacity` samples (the oldest
// dropped), so memory stays bounded however long the daemon runs. A change
// that lasts less than the interval shows only if a sample falls in it.
// Thread-safe: the loop records, API threads read.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "server/service.h"

namespace tessel {

class GpuAllocationHistory {
 public:
  // 10 s between samples, 6 hours kept.
  static constexpr int64_t kDefaultIntervalUs = 10'000'000;
  static constexpr size_t kDefaultCapacity = 2160;

  explicit GpuAllocationHistory(int64_t interval_us = kDefaultIntervalUs, size_t capacity = kDefaultCapacity);

  // Keeps `allocated` (GPU type -> GPUs allocated) as the sample at `now_us`
  // unless the last sample is less than the interval older. Types absent
  // count 0.
  void Record(int64_t now_us, const std::map<std::string, int64_t>& allocated);

  // The samples, oldest first, then `now` (the current counts at `now_us`)
  // as the last point, over the types of `capacity` (type -> GPUs) and of
  // every sample.
  ClusterHistoryInfo Snapshot(int64_t now_us, const std::map<std::string, int64_t>& now,
                              const std::map<std::string, int64_t>& capacity) const;

  size_t size() const;

 private:
  struct Sample {
    int64_t time_us = 0;
    std::map<std::string, int64_t> allocated;
  };
  const int64_t interval_us_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Sample> samples_;
};

}  // namespace tessel
