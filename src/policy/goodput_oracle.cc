#include "policy/goodput_oracle.h"

#include <algorithm>

#include "policy/placement.h"
#include "policy/throughput.h"

namespace tessel {

void GoodputCache::Begin(const Snapshot& snap, bool type_aware) {
  const uint64_t version = snap.belief->version();
  if (snap.cluster != cluster_ || snap.belief != belief_ || version != version_ || type_aware != type_aware_) {
    jobs_.clear();
    cluster_ = snap.cluster;
    belief_ = snap.belief;
    version_ = version;
    type_aware_ = type_aware;
    return;
  }
  // Drop finished jobs' entries once they outnumber the active jobs.
  if (jobs_.size() <= 2 * snap.jobs.size() + 64) return;
  std::unordered_map<int, JobEntry> kept;
  kept.reserve(snap.jobs.size());
  for (const JobView* job : snap.jobs) {
    auto it = jobs_.find(job->index);
    if (it != jobs_.end() && it->second.spec == job->spec) kept.insert(std::move(*it));
  }
  jobs_ = std::move(kept);
}

GoodputCache::JobEntry& GoodputCache::Entry(const JobView& job) {
  JobEntry& e = jobs_[job.index];
  if (e.spec != job.spec) {
    e.answers.clear();
    e.spec = job.spec;
  }
  return e;
}

GoodputOracle::GoodputOracle(const Snapshot& snapshot, bool type_aware, GoodputCache* cache)
    : snap_(snapshot), type_aware_(type_aware), cache_(cache) {
  if (cache_ != nullptr) cache_->Begin(snap_, type_aware_);
}

int GoodputOracle::HomeType(const JobView& job) const {
  if (!job.alloc.empty()) return job.alloc.type;
  if (const AgentReport* r = job.agent) {
    int best = -1;
    for (size_t t = 0; t < r->max_replicas.size(); ++t) {
      if (r->max_replicas[t] > 0 && (best < 0 || r->max_replicas[t] > r->max_replicas[best])) best = static_cast<int>(t);
    }
    if (best >= 0) return best;
  }
  if (!job.spec->requested_gpu_type.empty()) {
    int t = snap_.cluster->FindType(job.spec->requested_gpu_type);
    if (t >= 0) return t;
  }
  return snap_.cluster->LargestType();
}

int GoodputOracle::MaxGpus(const JobView& job) const {
  int cap = std::max(1, job.spec->max_gpus);
  if (const AgentReport* r = job.agent) {
    int batch_cap = std::max(1, r->limits.max_batch / std::max(1, r->limits.min_atomic));
    if (!r->adaptive) batch_cap = std::max(1, r->fixed_batch / std::max(1, r->limits.min_atomic));
    int measured = 0;
    for (int m : r->max_replicas) measured = std::max(measured, m);
    cap = std::min({cap, batch_cap, std::max(1, 2 * measured)});
    if (r->max_gpus > 0) cap = std::min(cap, r->max_gpus);
  }
  return cap;
}

double GoodputOracle::Evaluate(const AgentReport& r, const goodput::ThroughputParams& p, int gpus,
                               int nodes) const {
  goodput::GoodputFunction fn(p, r.grad, r.limits, r.rule);
  if (r.adaptive) {
    goodput::BatchChoice c = fn.Optimize(nodes, gpus, /*accumulation=*/true);
    return c.valid ? c.goodput : 0.0;
  }
  goodput::BatchChoice c = fn.Fixed(nodes, gpus, r.fixed_batch);
  if (!c.valid || c.atomic_bsz < r.limits.min_atomic) return 0.0;
  return fn.Evaluate(nodes, gpus, c.atomic_bsz, c.accum_steps);
}

const goodput::ThroughputParams* GoodputOracle::OwnParams(const AgentReport& r, int type, bool type_aware,
                                                          bool* any) {
  const int ntypes = static_cast<int>(r.params.size());
  const goodput::ThroughputParams* own = type < ntypes && r.params[type] ? &*r.params[type] : nullptr;
  if (!type_aware && own == nullptr) {
    for (int t = 0; t < ntypes && own == nullptr; ++t)
      if (r.params[t]) own = &*r.params[t];
  }
  *any = own != nullptr || std::any_of(r.params.begin(), r.params.end(), [](const auto& p) { return p.has_value(); });
  return own;
}

double GoodputOracle::AgentGoodput(const JobView& job, const AgentReport& r, int type, int gpus, int nodes) {
  const int ntypes = static_cast<int>(r.params.size());
  // (Type-blind callers arrive here with the home type: see Goodput.)
  bool any = false;
  const goodput::ThroughputParams* own = OwnParams(r, type, type_aware_, &any);
  if (own == nullptr) {
    // No measurement anywhere yet: Pollux assumes linear scaling.
    if (!any) return static_cast<double>(gpus);
    return 0.0;  // type-aware, never measured on this type: Sia would have profiled it
  }
  if (type_aware_ && gpus > 1 && r.max_replicas[type] <= 1) {
    // Borrow the scaling of the type the job has run widest on.
    int from = -1;
    for (int t = 0; t < ntypes; ++t) {
      if (t != type && r.params[t] && r.max_replicas[t] > 1 && (from < 0 || r.max_replicas[t] > r.max_replicas[from]))
        from = t;
    }
    if (from >= 0) {
      const GpuTypeInfo& src = snap_.cluster->types()[from];
      int gpn = std::max(1, src.max_gpus_per_node);
      int src_nodes = std::max(nodes, (gpus + gpn - 1) / gpn);
      double base_t = Evaluate(r, *own, 1, 1);
      double base_u = Evaluate(r, *r.params[from], 1, 1);
      if (base_u <= 0) return 0.0;
      return Evaluate(r, *r.params[from], gpus, src_nodes) * base_t / base_u;
    }
  }
  return Evaluate(r, *own, gpus, nodes);
}

double GoodputOracle::BeliefGoodput(const JobView& job, int home, int type, int gpus, int nodes) {
  const JobRate& rate =
      snap_.belief->Rate(*job.spec, home, gpus, type_aware_ ? nodes : MinNodes(*snap_.cluster, home, gpus));
  double g = rate.fits ? rate.samples_per_s : 0.0;
  // Pollux's view cannot tell types apart, but a job must still fit
  // where it is put.
  if (!type_aware_ && g > 0 && home != type && !snap_.belief->Rate(*job.spec, type, gpus, nodes).fits) g = 0;
  return g;
}

double GoodputOracle::WeakScalingThroughput(const JobView& job, int type, int gpus, int nodes) {
  if (gpus <= 0) return 0.0;
  if (job.agent == nullptr) return Goodput(job, type, gpus, nodes);  // efficiency 1: its throughput
  const AgentReport& r = *job.agent;
  if (!type_aware_) type = HomeType(job);
  bool any = false;
  const goodput::ThroughputParams* own = OwnParams(r, type, type_aware_, &any);
  if (own == nullptr) return any ? 0.0 : static_cast<double>(gpus);  // as AgentGoodput
  const goodput::BatchLimits& l = r.limits;
  // Each replica's batch: the job's own, less where max_batch caps the total.
  // Split into micro-steps of at most max_atomic.
  const int per_replica = std::min(std::max(1, l.init_batch), std::max(1, l.max_batch / gpus));
  const int steps = (per_replica + std::max(1, l.max_atomic) - 1) / std::max(1, l.max_atomic);
  const int atomic = (per_replica + steps - 1) / steps;
  return goodput::PredictThroughput(*own, nodes, gpus, atomic, steps - 1);
}

double GoodputOracle::Goodput(const JobView& job, int type, int gpus, int nodes) {
  if (gpus <= 0) return 0.0;
  // Type-blind, an agent job's goodput is its home type's: ask (and
  // memoise) it once, not once per type.
  if (!type_aware_ && job.agent != nullptr) type = HomeType(job);
  if (job.agent == nullptr && cache_ != nullptr) {
    const int home = type_aware_ ? type : HomeType(job);
    // Key: home type (8 bits), type (8), GPUs (24), nodes (24); larger
    // questions skip the cache.
    if (home < 256 && type < 256 && gpus < (1 << 24) && nodes < (1 << 24)) {
      if (&job != last_job_) {
        last_job_ = &job;
        last_entry_ = &cache_->Entry(job);
      }
      const uint64_t key = (static_cast<uint64_t>(home) << 56) | (static_cast<uint64_t>(type) << 48) |
                           (static_cast<uint64_t>(gpus) << 24) | static_cast<uint64_t>(nodes);
      auto& answers = last_entry_->answers;
      auto it = std::lower_bound(answers.begin(), answers.end(), key,
                                 [](const std::pair<uint64_t, double>& a, uint64_t k) { return a.first < k; });
      if (it != answers.end() && it->first == key) return it->second;
      double g = BeliefGoodput(job, home, type, gpus, nodes);
      answers.insert(it, {key, g});
      return g;
    }
  }
  // Key: job (32 bits), type (8), GPUs (12), nodes (12); larger questions skip the memo.
  const bool memo = type < 256 && gpus < 4096 && nodes < 4096;
  uint64_t key = (static_cast<uint64_t>(job.index) << 32) | (static_cast<uint64_t>(type) << 24) |
                 (static_cast<uint64_t>(gpus) << 12) | static_cast<uint64_t>(nodes);
  if (memo) {
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
  }
  double g = 0;
  if (job.agent != nullptr) {
    g = AgentGoodput(job, *job.agent, type, gpus, nodes);
  } else {
    g = BeliefGoodput(job, type_aware_ ? type : HomeType(job), type, gpus, nodes);
  }
  if (memo) memo_.emplace(key, g);
  return g;
}

}  // namespace tessel
