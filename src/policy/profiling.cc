#include "policy/profiling.h"

#include <algorithm>
#include <vector>

#include "core/strings.h"
#include "model/catalog.h"

namespace tessel {

Result<ProfilingKind> ParseProfilingKind(std::string_view s) {
  if (s == "none") return ProfilingKind::kNone;
  if (s == "disaggregated") return ProfilingKind::kDisaggregated;
  if (s == "direct") return ProfilingKind::kDirect;
  return InvalidArgument("profiling '" + std::string(s) + "': expected none, disaggregated or direct");
}

const char* ProfilingKindName(ProfilingKind k) {
  switch (k) {
    case ProfilingKind::kNone: return "none";
    case ProfilingKind::kDisaggregated: return "disaggregated";
    case ProfilingKind::kDirect: return "direct";
  }
  return "?";
}

namespace {

int LayersOf(const JobSpec& job) {
  auto model = FindModel(job.model);
  return model.ok() ? std::max(1, (*model)->NumLayers()) : 1;
}

// GPUs of type `t` the job may hold: no more stages than that.
int MaxGpusOn(const JobSpec& job, const Cluster& cluster, int t) {
  return std::min(cluster.types()[t].total_gpus, std::max(1, std::max(job.max_gpus, job.requested_gpus)));
}

// Configurations per GPU type (0 for types left out).
std::vector<int> PerType(const ProfilingModel& m, const JobSpec& job, const Cluster& cluster) {
  std::vector<int> out(cluster.types().size(), 0);
  if (m.kind == ProfilingKind::kNone) return out;
  const int layers = LayersOf(job);
  int want = job.requested_gpu_type.empty() ? -1 : cluster.FindType(job.requested_gpu_type);
  for (int t = 0; t < static_cast<int>(cluster.types().size()); ++t) {
    if (!m.all_types && want >= 0 && t != want) continue;
    int max_gpus = MaxGpusOn(job, cluster, t);
    for (int p : m.StageCounts(layers, max_gpus)) {
      if (m.kind == ProfilingKind::kDisaggregated) {
        ++out[t];  // one stage on one GPU
      } else {
        for (int g = p; g <= max_gpus; g *= 2) ++out[t];  // every count that holds p stages
      }
    }
  }
  return out;
}

}  // namespace

std::vector<int> ProfilingModel::StageCounts(int layers, int max_gpus) const {
  std::vector<int> out;
  for (int p = 1; p <= max_stages && p <= layers && p <= max_gpus; p *= 2) out.push_back(p);
  return out;
}

std::vector<int> ProfilingModel::StageCountsFor(const JobSpec& job, const Cluster& cluster, int type) const {
  if (type < 0 || type >= static_cast<int>(cluster.types().size())) return {};
  return StageCounts(LayersOf(job), MaxGpusOn(job, cluster, type));
}

int ProfilingModel::Configurations(const JobSpec& job, const Cluster& cluster) const {
  int total = 0;
  for (int n : PerType(*this, job, cluster)) total += n;
  return total;
}

double ProfilingModel::Seconds(const JobSpec& job, const Cluster& cluster) const {
  std::vector<int> per = PerType(*this, job, cluster);
  int configs = 0, longest = 0;
  for (int n : per) {
    configs += n;
    longest = std::max(longest, n);
  }
  bool parallel = kind == ProfilingKind::kDisaggregated && parallel_types;
  return (parallel ? longest : configs) * per_config_s;
}

}  // namespace tessel
