#include "policy/throughput.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "model/catalog.h"
#include "plan/planner.h"

namespace tessel {

Result<PlanMode> ParsePlanMode(std::string_view s) {
  if (s == "dp") return PlanMode::kDataParallel;
  if (s == "best") return PlanMode::kBest;
  return InvalidArgument("parallelism '" + std::string(s) + "': expected dp or best");
}

const char* PlanModeName(PlanMode m) { return m == PlanMode::kDataParallel ? "dp" : "best"; }

namespace {

struct RateKey {
  std::string model;
  int batch, type, gpus, nodes;
  int share64 = 64;  // network share in 64ths
  bool operator<(const RateKey& o) const {
    return std::tie(model, batch, type, gpus, nodes, share64) <
           std::tie(o.model, o.batch, o.type, o.gpus, o.nodes, o.share64);
  }
};

// The precision a job trains in on `gpu`: the model's own, or fp16 where
// the GPU lacks it (bf16 before Ampere), as frameworks fall back.
Precision PrecisionOn(const ModelSpec& model, const GpuSpec& gpu) {
  if (gpu.PeakTflops(model.default_precision) > 0) return model.default_precision;
  return Precision::kFp16;
}

}  // namespace

struct EstimatorThroughput::Impl {
  const Cluster& cluster;
  PlanMode mode;
  PerfParams params;
  Estimator estimator{params};
  std::map<RateKey, JobRate> cache;

  Impl(const Cluster& c, PlanMode m, PerfParams p) : cluster(c), mode(m), params(std::move(p)) {}

  // The best plan under `req`, or nothing (reason set).
  JobRate Search(PlanRequest req) const {
    JobRate rate;
    auto result = SearchPlans(estimator, req);
    if (!result.ok()) {
      rate.reason = result.status().message();
      return rate;
    }
    if (result->plans.empty()) {
      rate.reason = result->reason.empty() ? "no parallel plan fits" : result->reason;
      return rate;
    }
    const Estimate& e = result->plans.front();
    rate.fits = true;
    rate.iteration_time_s = e.iteration_time_s;
    rate.samples_per_s = e.samples_per_s;
    rate.tokens_per_s = e.tokens_per_s;
    rate.plan = e.plan;
    return rate;
  }

  JobRate Compute(const JobSpec& job, int type, int gpus, int nodes, double network_share = 1.0) const {
    JobRate rate;
    auto model = FindModel(job.model);
    if (!model.ok()) {
      rate.reason = model.status().message();
      return rate;
    }
    const GpuTypeInfo& info = cluster.types()[type];
    PlanRequest req;
    req.model = *model;
    req.topology = info.topology;
    req.topology.network_gbps *= network_share;
    // The job's GPUs are spread evenly over its nodes.
    req.topology.gpus_per_node = std::max(1, (gpus + nodes - 1) / std::max(1, nodes));
    req.gpus = gpus;
    req.precision = PrecisionOn(**model, *info.gpu);
    req.top_k = 1;
    // A global batch the data-parallel degree cannot split evenly is rounded
    // up to the next multiple of the GPU count; the rate is scaled back.
    int batch = std::max(1, job.global_batch);
    auto attempt = [&](int b) {
      req.global_batch = b;
      if (mode == PlanMode::kDataParallel) {
        PlanRequest dp = req;
        dp.tp = 1;
        dp.pp = 1;
        dp.max_zero = 0;
        JobRate r = Search(dp);
        if (r.fits) return r;
      }
      return Search(req);
    };
    rate = attempt(batch);
    if (!rate.fits && batch % gpus != 0) {
      int rounded = (batch + gpus - 1) / gpus * gpus;
      JobRate r = attempt(rounded);
      if (r.fits) {
        // samples/s is what the hardware does; an iteration is `batch` samples.
        r.iteration_time_s *= static_cast<double>(batch) / rounded;
        rate = r;
      }
    }
    return rate;
  }
};

EstimatorThroughput::EstimatorThroughput(const Cluster& cluster, PlanMode mode, PerfParams params)
    : impl_(std::make_unique<Impl>(cluster, mode, std::move(params))) {}

EstimatorThroughput::~EstimatorThroughput() = default;

const JobRate& EstimatorThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  RateKey key{job.model, job.global_batch, type, gpus, nodes};
  auto it = impl_->cache.find(key);
  if (it != impl_->cache.end()) return it->second;
  ++misses_;
  return impl_->cache.emplace(std::move(key), impl_->Compute(job, type, gpus, nodes)).first->second;
}

const JobRate& EstimatorThroughput::RateShared(const JobSpec& job, int type, int gpus, int nodes,
                                               double network_share) {
  int share64 = std::clamp(static_cast<int>(std::lround(network_share * 64)), 1, 64);
  if (share64 == 64 || nodes <= 1) return Rate(job, type, gpus, nodes);
  RateKey key{job.model, job.global_batch, type, gpus, nodes, share64};
  auto it = impl_->cache.find(key);
  if (it != impl_->cache.end()) return it->second;
  ++misses_;
  return impl_->cache.emplace(std::move(key), impl_->Compute(job, type, gpus, nodes, share64 / 64.0)).first->second;
}

}  // namespace tessel
