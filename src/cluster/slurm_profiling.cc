// Arena's disaggregated profiling on real GPUs: one pipeline stage of every
// depth the job's grids admit, on one GPU of each allowed type, all at once.
#include "cluster/slurm_backend_impl.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "cluster/launch.h"
#include "cluster/metrics_file.h"
#include "core/strings.h"

namespace tessel {

namespace fs = std::filesystem;
using namespace slurm_internal;

// The profiled stage of a p-stage pipeline on `type`. Layers: the first
// stage's under the split rule the job library and the estimator share
// (stage k of p holds floor(L/p) layers, one more when k < L mod p: the
// first holds ceil(L/p)). Micro-batch (and recompute, precision): those
// of the base estimator's fastest pure pipeline of p stages on p GPUs of
// the type (p = 1: the one-GPU plan, the rule before stage counts were
// profiled), so the profile's micro-batch is the one its factor compares
// with and needs no scaling. nullopt when no pure p-stage pipeline fits p
// GPUs of the type: its profile could give no factor.
auto SlurmBackend::Impl::ShapeFor(const Tracked& t, int type, int stages) const -> std::optional<StageShape> {
  std::optional<PlanChoice> grid =
      belief.base().PipelinePlan(t.spec, type, stages, MinNodes(cluster, type, stages));
  if (!grid || !(grid->iteration_time_s > 0)) return std::nullopt;
  int layers = std::max(1, t.dspec.model.NumLayers());
  StageShape s;
  s.layers = (layers + stages - 1) / stages;
  s.plan = grid->plan;
  s.plan.dp = s.plan.tp = s.plan.pp = s.plan.ep = 1;
  s.plan.virtual_stages = 1;
  s.plan.num_micro_batches = 1;
  s.plan.zero = 0;
  return s;
}


// A profile of one stage of a `stages`-stage pipeline as the job's factor
// for `stages`-stage plans on `type`. The base's fastest pure pipeline of
// p = `stages` stages on p GPUs (d = t = 1) takes T_grid for M
// micro-batches of mb samples with ceil(L/p) layers in its first stage;
// the profile predicts
//   (M + p - 1) * t_stage * (mb / mb_profiled) * (ceil(L/p) / stage layers profiled)
// and the factor is predicted / T_grid (p = 1: global batch / mb_profiled
// * t_stage * L / stage layers against the one-GPU estimate, the rule
// before stage counts were profiled). Approximate where the estimator is
// finer (perf/estimator.cc, the stage costs and the pipeline schedule):
// it times M * s_max + (p - 1) * s_avg with each stage's own layers, the
// embedding on the first stage and the head on the last only, while the
// profiled stage carries both (each of the M + p - 1 slots is charged a
// little more: the factor errs high by about the embedding's or the
// head's share of a stage); T_grid includes the point-to-point activation
// transfers between stages and the optimizer step, which the profiled
// stage time does not (the factor errs low by their share of T_grid);
// micro-batch scaling is linear (exact at the rule's micro-batch, which a
// fresh profile uses).
void SlurmBackend::Impl::CorrectFromProfile(Tracked& t, int type, int stages, const ProfileRecord& p) {
  if (!(p.step_time_s > 0) || p.micro_batch <= 0 || p.stage_layers <= 0) return;
  std::optional<PlanChoice> grid =
      belief.base().PipelinePlan(t.spec, type, stages, MinNodes(cluster, type, stages));
  if (!grid || !(grid->iteration_time_s > 0)) return;
  const ParallelPlan& g = grid->plan;
  int layers = std::max(1, t.dspec.model.NumLayers());
  double plan_stage_layers = (layers + g.pp - 1) / g.pp;
  double predicted = (g.num_micro_batches + g.pp - 1) * p.step_time_s *
                     (static_cast<double>(g.micro_batch) / p.micro_batch) * (plan_stage_layers / p.stage_layers);
  double factor = predicted / grid->iteration_time_s;
  if (!std::isfinite(factor) || factor <= 0) return;
  belief.SetStageFactor(t.spec.id, type, stages, factor);
  Warn(store.SetCorrection(t.id, Correction{cluster.TypeName(type), factor, 0, StageScope(stages)}));
}


// The GPU types a job may run on: the one it requires, else those its
// spec allows.
std::vector<int> SlurmBackend::Impl::AllowedTypes(const Tracked& t) const {
  std::vector<int> types;
  int only = t.spec.requested_gpu_type.empty() ? -1 : cluster.FindType(t.spec.requested_gpu_type);
  for (int type = 0; type < static_cast<int>(cluster.types().size()); ++type) {
    if ((only < 0 || type == only) && t.spec.AllowsGpuType(cluster.TypeName(type))) types.push_back(type);
  }
  return types;
}


// Starts profiling `t`: one run per (allowed type, stage count) without a
// stored profile, submitted at once, each on one GPU of its type (the
// node with the most GPUs left free, so runs spread). False when the
// policy does not profile or every profile needed is stored (then
// applied).
bool SlurmBackend::Impl::StartProfiling(Tracked& t, SimTime now) {
  if (traits.profiling.kind == ProfilingKind::kNone || t.view.started()) return false;
  std::map<std::tuple<std::string, int, int>, ProfileRecord> stored;
  if (auto profiles = store.Profiles(ProfileKey(t)); profiles.ok()) {
    for (const ProfileRecord& p : *profiles) stored[{p.gpu_type, p.stage_layers, p.micro_batch}] = p;
  }
  ComputeFree();
  std::vector<int> spare = free;
  int runs = 0;
  for (int type : AllowedTypes(t)) {
    for (int stages : traits.profiling.StageCountsFor(t.spec, cluster, type)) {
      if (t.profiling.count({type, stages})) continue;  // adopted after a restart: still running
      std::optional<StageShape> shape = ShapeFor(t, type, stages);
      if (!shape) continue;
      auto it = stored.find({cluster.TypeName(type), shape->layers, shape->plan.micro_batch});
      if (it != stored.end()) {
        CorrectFromProfile(t, type, stages, it->second);
        continue;
      }
      int node = -1;
      for (int n : cluster.types()[type].nodes) {
        if (up[n] && (node < 0 || spare[n] > spare[node])) node = n;
      }
      if (node < 0) continue;
      LaunchSpec ls;
      ls.job_id = t.id;
      ls.job_name = t.dspec.name;
      ls.gpu_type = cluster.TypeName(type);
      ls.nodes = {{inv.names[node], 1}};
      ls.plan = shape->plan;
      ls.global_batch = t.dspec.global_batch;
      ls.total_iterations = t.dspec.iterations;
      ls.checkpoint_dir = CheckpointDir(t);
      ls.metrics_file = ProfilePath(t.id, type, stages);
      ls.rendezvous_addr = opt.rendezvous_addr.empty() ? inv.addrs[node] : opt.rendezvous_addr;
      // Ports apart from the job's launches' (which count up from 0) and
      // from each other, for runs that share a node.
      ls.rendezvous_port = opt.rendezvous_port_base + static_cast<int>((t.id * 16 + 15 - runs % 16) % 10000);
      ls.argv = t.dspec.command;
      ls.workdir = t.dspec.workdir;
      ls.user_env = t.dspec.env;
      ls.profile = true;
      ls.profile_layers = shape->layers;
      ls.framework = t.dspec.framework;  // a plan it cannot express: no profile of this shape
      ls.model_layers = shape->layers;
      ls.python_dir = opt.python_dir;
      std::string dir = JobDir(t.id), tag = ProfileTag(t.id, type, stages);
      std::error_code ec;
      fs::create_directories(dir, ec);
      fs::create_directories(CheckpointDir(t), ec);
      std::remove(ProfilePath(t.id, type, stages).c_str());
      const std::string name = ProfileRunName(t.id, cluster.TypeName(type), stages);
      Result<SubmitRequest> req = Prepare(ls, name, inv.gres_types[node],
                                          {tag + ".json", tag + ".sh", tag + ".out", tag + ".exit"});
      if (!req.ok()) {
        Warn(req.status());
        continue;
      }
      // Recorded before sbatch, its Slurm id after: a restart in between
      // finds the run under its name (slurm_recovery.cc), never starts it twice.
      if (Status st = store.AddSlurmRun(SlurmRun{name, t.id, "profile", cluster.TypeName(type), stages,
                                                 std::nullopt, now});
          !st.ok()) {
        Warn(st);
        continue;
      }
      FaultPoint("profile.before-sbatch");
      Result<SlurmJobId> id = slurm.Submit(*req);
      if (!id.ok()) {
        Warn(id.status());
        Warn(store.RemoveSlurmRun(name));
        continue;
      }
      FaultPoint("profile.after-sbatch");
      Warn(store.SetSlurmRunJob(name, std::to_string(*id)));
      t.profiling[{type, stages}] = *id;
      --spare[node];
      ++runs;
    }
  }
  if (t.profiling.empty()) return false;
  SetState(t, JobState::kProfiling, now, "profiling one pipeline stage on one GPU: " + Profiling(t));
  return true;
}


// What is being profiled: "a100-80g (1, 2 stages), v100-32g (1 stage)".
std::string SlurmBackend::Impl::Profiling(const Tracked& t) const {
  std::map<int, std::vector<int>> by_type;
  for (const auto& [key, id] : t.profiling) by_type[key.first].push_back(key.second);
  std::string out;
  for (const auto& [type, counts] : by_type) {
    out += (out.empty() ? "" : ", ") + cluster.TypeName(type) + " (";
    for (size_t i = 0; i < counts.size(); ++i) out += (i ? ", " : "") + std::to_string(counts[i]);
    out += counts.size() == 1 && counts[0] == 1 ? " stage)" : " stages)";
  }
  return out;
}


// A profiling run ended: its steps become the model's stored profile and
// the job's factor for that stage count on that type. Once all have, the
// job is placed.
void SlurmBackend::Impl::Profiled(Tracked& t, int type, int stages, SimTime now) {
  t.profiling.erase({type, stages});
  Warn(store.RemoveSlurmRun(ProfileRunName(t.id, cluster.TypeName(type), stages)));
  MetricsTail tail(ProfilePath(t.id, type, stages));
  Result<MetricsUpdate> u = tail.Read();
  std::vector<double> times;
  std::vector<StepSample> samples;
  int layers = 0, micro_batch = 0;
  if (u.ok()) {
    for (const MetricsStep& s : u->steps) {
      if (!s.profile) continue;
      times.push_back(s.step_time_s);
      layers = s.layers;
      micro_batch = s.micro_batch;
      StepSample o;
      o.time_us = s.time_s > 0 ? static_cast<int64_t>(s.time_s * 1e6) : now;
      o.gpu_type = cluster.TypeName(type);
      o.gpus = 1;
      o.step = s.step;
      o.step_time_s = s.step_time_s;
      o.profile = true;
      samples.push_back(o);
    }
  }
  if (!times.empty() && layers > 0 && micro_batch > 0) {
    Warn(store.AddStepTimes(t.id, samples).status());
    std::sort(times.begin(), times.end());
    ProfileRecord p{ProfileKey(t), cluster.TypeName(type), layers, micro_batch, times[times.size() / 2], now};
    Warn(store.PutProfile(p));
    CorrectFromProfile(t, type, stages, p);
  } else {
    std::fprintf(stderr, "tessel serve: job %lld: profiling %d stage(s) on %s measured nothing (see %s.out)\n",
                 static_cast<long long>(t.id), stages, cluster.TypeName(type).c_str(),
                 ProfileTag(t.id, type, stages).c_str());
  }
  if (t.profiling.empty() && t.state == JobState::kProfiling) {
    SetState(t, JobState::kPending, now, "profiled; waiting for GPUs");
    Activate(t);
  }
}

}  // namespace tessel
