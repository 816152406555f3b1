#include "server/cluster_history.h"

#include <set>

namespace tessel {

GpuAllocationHistory::GpuAllocationHistory(int64_t interval_us, size_t capacity)
    : interval_us_(interval_us > 0 ? interval_us : 1), capacity_(capacity > 0 ? capacity : 1) {}

void GpuAllocationHistory::Record(int64_t now_us, const std::map<std::string, int64_t>& allocated) {
  std::lock_guard lock(mu_);
  if (!samples_.empty() && now_us - samples_.back().time_us < interval_us_) return;
  if (samples_.size() == capacity_) samples_.pop_front();
  samples_.push_back({now_us, allocated});
}

ClusterHistoryInfo GpuAllocationHistory::Snapshot(int64_t now_us, const std::map<std::string, int64_t>& now,
                                                  const std::map<std::string, int64_t>& capacity) const {
  std::lock_guard lock(mu_);
  std::set<std::string> types;
  for (const auto& [type, n] : capacity) types.insert(type);
  for (const auto& [type, n] : now) types.insert(type);
  for (const Sample& s : samples_)
    for (const auto& [type, n] : s.allocated) types.insert(type);
  ClusterHistoryInfo out;
  out.interval_s = interval_us_ / 1'000'000;
  for (const std::string& type : types) {
    out.gpu_types.push_back(type);
    auto it = capacity.find(type);
    out.gpus.push_back(it == capacity.end() ? 0 : it->second);
  }
  auto add = [&](int64_t time_us, const std::map<std::string, int64_t>& allocated) {
    ClusterHistorySample s;
    s.time_us = time_us;
    for (const std::string& type : out.gpu_types) {
      auto it = allocated.find(type);
      s.allocated.push_back(it == allocated.end() ? 0 : it->second);
    }
    out.samples.push_back(std::move(s));
  };
  for (const Sample& s : samples_) add(s.time_us, s.allocated);
  if (samples_.empty() || now_us > samples_.back().time_us) add(now_us, now);
  return out;
}

size_t GpuAllocationHistory::size() const {
  std::lock_guard lock(mu_);
  return samples_.size();
}

}  // namespace tessel
