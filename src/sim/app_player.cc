#include "sim/app_player.h"

#include <algorithm>

#include "hardware/gpu.h"

namespace tessel {
namespace {

// Replicas per node of an allocation, as the profiles name placements.
std::vector<int> PlacementOf(const Allocation& a) {
  std::vector<int> p;
  for (const Placement& part : a.parts) p.push_back(part.gpus);
  return p;
}

}  // namespace

std::unique_ptr<AppJob> AppPlayer::Make(const JobSpec& spec, const PolicyTraits& traits,
                                        const goodput::AppCatalog& apps) const {
  if (spec.app.empty()) return nullptr;
  const goodput::AppProfile* profile = apps.Find(spec.app);
  if (profile == nullptr) return nullptr;
  auto a = std::make_unique<AppJob>();
  a->profile = profile;
  AgentReport& r = a->report;
  r.limits = profile->limits();
  r.rule = rule_;
  r.adaptive = traits.adapts_batch && spec.adaptive_batch && !profile->fixed_batch();
  r.fixed_batch = std::clamp(spec.global_batch, r.limits.init_batch, r.limits.max_batch);
  // The artifact's pinned apps (ncf) keep its batch under goodput policies.
  if (traits.adapts_batch && profile->fixed_batch()) r.fixed_batch = *profile->fixed_batch();
  if (traits.adapts_batch && profile->max_replicas()) r.max_gpus = *profile->max_replicas();
  r.params.assign(cluster_.types().size(), std::nullopt);
  r.max_replicas.assign(cluster_.types().size(), 0);
  a->seen.resize(cluster_.types().size());
  return a;
}

// The profile's step time on `type`. A GPU type the profile lacks borrows
// the first profiled type's time, scaled by the two GPUs' dense 16-bit
// peaks (counted as a truth fallback).
// `count`: a step the job runs (counted in projections when projected).
goodput::StepTime AppPlayer::Step(const AppJob& a, int type, std::span<const int> placement, double atomic,
                                  bool count) {
  const std::string& gpu = cluster_.types()[type].gpu->name;
  if (auto st = a.profile->Throughput(gpu, placement, atomic); st.ok()) return *st;
  if (count) ++projections_;
  std::vector<std::string> have = a.profile->gpu_types();
  const std::string& from = have.front();
  goodput::StepTime st = a.profile->Throughput(from, placement, atomic).value();
  auto src = FindGpu(from);
  double ratio = src.ok() ? (*src)->PeakTflops(Precision::kFp16) /
                                std::max(1e-9, cluster_.types()[type].gpu->PeakTflops(Precision::kFp16))
                          : 1.0;
  st.step_s *= ratio;
  st.sync_s *= ratio;
  return st;
}

// Records a measured step in the job's own history and refits that type's
// model when it is new (Pollux's agent does this every step).
void AppPlayer::Observe(AppJob& a, int type, int nodes, int replicas, int atomic, const goodput::StepTime& st) {
  if (Record(a, type, nodes, replicas, atomic, st)) Refit(a, type);
}

// Adds a measured step to the job's history; false if already there.
bool AppPlayer::Record(AppJob& a, int type, int nodes, int replicas, int atomic, const goodput::StepTime& st) {
  auto& seen = a.seen[type];
  auto key = std::make_tuple(nodes, replicas, atomic);
  if (seen.count(key)) return false;
  goodput::StepObservation o;
  o.nodes = nodes;
  o.replicas = replicas;
  o.atomic_bsz = atomic;
  o.step_time = st.step_s;
  o.accum_time = std::max(1e-9, st.step_s - st.sync_s);
  seen.emplace(key, o);
  a.report.max_replicas[type] = std::max(a.report.max_replicas[type], replicas);
  ++a.report.observations;
  return true;
}

// Refits the job's model of `type` to everything it measured there.
void AppPlayer::Refit(AppJob& a, int type) {
  const auto& seen = a.seen[type];
  std::vector<goodput::StepObservation> obs;
  obs.reserve(seen.size());
  for (const auto& [k, v] : seen) obs.push_back(v);
  auto fit = goodput::FitThroughputParams(obs);
  if (fit.ok()) a.report.params[type] = fit->params;
}

void AppPlayer::ObservePending(AppJob& a) {
  if (!a.pending) return;
  const AppJob::PendingObservation& o = *a.pending;
  Observe(a, o.type, o.nodes, o.replicas, o.atomic, o.step);
  a.pending.reset();
}

// The agent's batch on an allocation: fixed when it may not adapt (or has
// no model yet: the Pollux artifact then runs max(init, min_local x
// replicas)) or has not measured its gradient noise yet, else the
// goodput-optimal split from its own model.
goodput::BatchChoice AppPlayer::ChooseBatch(const AppJob& a, int type, int nodes, int replicas) const {
  const AgentReport& r = a.report;
  const goodput::ThroughputParams* params = nullptr;
  if (r.params[type]) params = &*r.params[type];
  for (size_t t = 0; params == nullptr && t < r.params.size(); ++t)
    if (r.params[t]) params = &*r.params[t];
  goodput::GoodputFunction fn(params ? *params : goodput::ThroughputParams{}, r.grad, r.limits, r.rule);
  bool grad_known = r.grad.sqr > 0 || r.grad.var > 0;
  if (r.adaptive && params != nullptr && grad_known) {
    goodput::BatchChoice c = fn.Optimize(nodes, replicas, /*accumulation=*/true);
    if (c.valid) return c;
  }
  int batch = r.adaptive ? std::max(r.limits.init_batch, r.limits.min_atomic * replicas) : r.fixed_batch;
  goodput::BatchChoice c = fn.Fixed(nodes, replicas, batch);
  // Never more than the largest validated batch.
  int count = replicas * (c.accum_steps + 1);
  c.atomic_bsz = std::max(1, std::min(c.atomic_bsz, r.limits.max_batch / std::max(1, count)));
  c.batch = count * c.atomic_bsz;
  return c;
}

// Progress (initial-batch steps) per second = gain / time per optimizer step.
AppRate AppPlayer::SetRate(AppJob& a, const Allocation& alloc) {
  std::vector<int> placement = PlacementOf(alloc);
  int nodes = alloc.nodes(), replicas = alloc.gpus();
  a.choice = ChooseBatch(a, alloc.type, nodes, replicas);
  goodput::StepTime st = Step(a, alloc.type, placement, a.choice.atomic_bsz, /*count=*/true);
  // Measured once the job actually runs (ObservePending), not when granted.
  a.pending = AppJob::PendingObservation{alloc.type, nodes, replicas, a.choice.atomic_bsz, st};
  double accum_time = std::max(0.0, st.step_s - st.sync_s);
  double step = st.step_s + accum_time * a.choice.accum_steps;
  goodput::GradStats g = a.profile->GradStatsAt(a.choice.batch, a.epoch);
  a.report.grad = g;
  double gain = goodput::Gain(g, a.report.limits.init_batch, a.choice.batch, a.report.rule);
  return {step / std::max(1e-12, gain), a.choice.batch / std::max(1e-12, gain)};
}

double AppPlayer::Isolated(AppJob& a, int type, int gpus) {
  const GpuTypeInfo& info = cluster_.types()[type];
  Allocation alloc;
  alloc.type = type;
  int left = gpus;
  for (int node = 0; left > 0; ++node) {
    int g = std::min(left, std::max(1, info.max_gpus_per_node));
    alloc.parts.push_back({node, g});
    left -= g;
  }
  goodput::GoodputFunction fn(goodput::ThroughputParams{}, {}, a.report.limits, a.report.rule);
  goodput::BatchChoice c = fn.Fixed(alloc.nodes(), gpus, a.report.fixed_batch);
  goodput::StepTime st = Step(a, type, PlacementOf(alloc), c.atomic_bsz);
  double step = st.step_s + std::max(0.0, st.step_s - st.sync_s) * c.accum_steps;
  double total = 0;
  for (int e = 0; e < a.profile->max_epochs(); ++e) {
    double work = a.profile->ProgressAt(e + 1) - a.profile->ProgressAt(e);
    double gain =
        goodput::Gain(a.profile->GradStatsAt(c.batch, e), a.report.limits.init_batch, c.batch, a.report.rule);
    total += work * step / std::max(1e-12, gain);
  }
  return total;
}

void AppPlayer::ProfileAllTypes(AppJob& a) {
  // The profiling steps also measure the gradient noise at the initial batch.
  a.report.grad = a.profile->GradStatsAt(a.report.limits.init_batch, 0);
  for (int t = 0; t < static_cast<int>(cluster_.types().size()); ++t) {
    std::vector<int> one = {1};
    bool added = false;
    for (int b : {a.report.limits.min_atomic, std::min(a.report.limits.init_batch, a.report.limits.max_atomic),
                  a.report.limits.max_atomic}) {
      added |= Record(a, t, 1, 1, b, Step(a, t, one, b));
    }
    if (added) Refit(a, t);  // once per type, on all its profiled steps
  }
}

}  // namespace tessel
