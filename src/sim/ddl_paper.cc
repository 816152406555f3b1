#include "sim/ddl_paper.h"

#include <cmath>

#include "core/strings.h"
#include "model/profiled_model.h"

namespace tessel {
namespace {

constexpr double kLawMeasuredGbps = 10;  // their 10 GbE testbed

}  // namespace

Result<SharedGpuConfig> DdlPaperConfig(const Cluster& cluster, const Policy& policy, const PlacementRule& placement,
                                       SimTime horizon) {
  SharedGpuConfig c;
  const std::string name(policy.name());
  const PolicyTraits traits = policy.traits();
  if (name == "srsf-avoid") {
    c.comm_threshold = 0;
    c.adadual = false;
  } else if (name == "srsf-accept") {
    c.comm_threshold = 1;
    c.adadual = false;
  } else if (name == "ada-srsf") {
    c.comm_threshold = 1;
    c.adadual = true;
    c.paper_rest_size = traits.paper_rest_size;
  } else {
    return InvalidArgument("--setting ddl-paper plays Wang et al.'s schedulers: srsf-avoid (SRSF(1)), srsf-accept "
                           "(SRSF(2)) or ada-srsf (Ada-SRSF); got " + name);
  }
  switch (placement.kind) {
    case PlacementRule::Kind::kFirstFit: c.placement = SharedGpuConfig::Placement::kFirstFit; break;
    case PlacementRule::Kind::kLwfKappa:
      c.placement = SharedGpuConfig::Placement::kLwf;
      c.kappa = placement.kappa;
      break;
    case PlacementRule::Kind::kConsolidate:
      return InvalidArgument("--setting ddl-paper places as Wang et al.'s simulator does: --placement first-fit or "
                             "lwf-kappa:kappa=N (default lwf-kappa:kappa=2); consolidate is not one of theirs");
  }
  const ClusterSpec& spec = cluster.spec();
  if (cluster.types().size() != 1 || spec.pools.empty()) {
    return InvalidArgument("--setting ddl-paper: cluster " + cluster.name() +
                           " has several GPU types; their simulator has one (e.g. ddl-64)");
  }
  const NodePool& pool = spec.pools.front();
  for (const NodePool& p : spec.pools) {
    if (p.gpus_per_node != pool.gpus_per_node || p.network_gbps != pool.network_gbps) {
      return InvalidArgument("--setting ddl-paper: cluster " + cluster.name() +
                             " mixes node sizes or NIC speeds; their simulator's nodes are all alike (e.g. ddl-64)");
    }
  }
  c.nodes = static_cast<int>(cluster.nodes().size());
  c.gpus_per_node = pool.gpus_per_node;
  c.gpu_memory_mb = static_cast<int>(std::lround(pool.gpu->memory_gib * 1024));
  const double scale = kLawMeasuredGbps / pool.network_gbps;
  if (scale != 1) {
    c.law.beta_ms_per_mb *= scale;
    c.law.eta_ms_per_mb *= scale;
  }
  c.horizon_ms = horizon == kNever ? 0 : horizon / 1000;
  return c;
}

Result<SimResult> RunDdlPaper(const Cluster& cluster, const Workload& workload, const SharedGpuConfig& config,
                              const SimConfig& sim_config, const std::string& policy_spec) {
  const int total_gpus = config.nodes * config.gpus_per_node;
  std::vector<SharedGpuJob> jobs;
  std::vector<int> played;  // workload index of each played job
  SimResult r;
  for (size_t i = 0; i < workload.jobs.size(); ++i) {
    const JobSpec& j = workload.jobs[i];
    const ProfiledModel* m = FindProfiledModel(j.model);
    if (m == nullptr) {
      return InvalidArgument("--setting ddl-paper: job " + j.id + " trains " + j.model +
                             "; their simulator plays the profiled models only (" + Join(ProfiledModelNames(), ", ") +
                             ")");
    }
    if (!j.iterations || *j.iterations < 1 || *j.iterations != std::floor(*j.iterations) || *j.iterations > 1e9) {
      return InvalidArgument("--setting ddl-paper: job " + j.id +
                             ": expected a whole number of iterations (1 to 1e9) in the trace's iterations column");
    }
    JobRecord rec = RecordOf(j);
    rec.total_iterations = *j.iterations;
    rec.gpu_s_by_type.assign(1, 0.0);
    if (j.requested_gpus > total_gpus || m->train_memory_mb > config.gpu_memory_mb) {
      rec.outcome = JobOutcome::kRejected;
      rec.reason = j.requested_gpus > total_gpus
                       ? "needs " + std::to_string(j.requested_gpus) + " GPUs; the cluster has " +
                             std::to_string(total_gpus)
                       : "needs " + std::to_string(m->train_memory_mb) + " MB per GPU; a GPU has " +
                             std::to_string(config.gpu_memory_mb);
    } else {
      SharedGpuJob s;
      s.arrival_ms = j.submit / 1000;
      s.workers = j.requested_gpus;
      s.iterations = static_cast<int>(*j.iterations);
      s.size_mb = m->size_bytes / 1e6;
      s.forward_ms = static_cast<int>(std::lround(m->forward_s * 1e3));
      s.backward_ms = static_cast<int>(std::lround(m->backward_s * 1e3));
      s.memory_mb = m->train_memory_mb;
      jobs.push_back(s);
      played.push_back(static_cast<int>(i));
    }
    r.jobs.push_back(std::move(rec));
  }
  auto run = RunSharedGpu(jobs, config);
  if (!run.ok()) return run.status();
  const SimTime end = run->end_ms * 1000;
  for (size_t k = 0; k < jobs.size(); ++k) {
    const SharedGpuJob& s = jobs[k];
    const SharedGpuJobResult& out = run->jobs[k];
    JobRecord& rec = r.jobs[played[k]];
    const SimTime submit = s.arrival_ms * 1000;
    rec.done_iterations = out.iterations_done;
    rec.gpu_s = static_cast<double>(out.compute_ms) / 1e3;
    rec.gpu_s_by_type[0] = rec.gpu_s;
    // Alone: its compute, and an all-reduce at one transfer's rate when it
    // cannot fit on one node.
    const bool spread = s.workers > config.gpus_per_node;
    rec.isolated_s = s.iterations *
                     (s.forward_ms + s.backward_ms + (spread ? s.size_mb * config.law.beta_ms_per_mb : 0.0)) / 1e3;
    if (out.placed_ms >= 0) rec.first_start = out.placed_ms * 1000;
    const SimTime started = rec.first_start == kNever ? std::max(end, submit) : rec.first_start;
    rec.queueing_s = ToSeconds(started - submit);
    rec.waiting_s = rec.queueing_s;
    // JCT is measured from the arrival step (their finish_time).
    rec.submit = submit;
    if (out.finished_ms >= 0) {
      rec.outcome = JobOutcome::kFinished;
      rec.finish = out.finished_ms * 1000;
    } else {
      rec.outcome = out.placed_ms >= 0 ? JobOutcome::kRunning : JobOutcome::kPending;
      rec.reason = "the horizon came first";
    }
  }
  for (const SharedGpuRun::Point& p : run->timeline) {
    TimelinePoint tp;
    tp.time = p.ms * 1000;
    tp.running_jobs = p.running;
    tp.pending_jobs = p.waiting;
    tp.allocated_gpus = p.gpus_in_use;
    tp.progressing_gpus = p.gpus_in_use;
    r.timeline.push_back(tp);
  }
  Summary& sum = r.summary;
  sum.policy = policy_spec;
  sum.cluster = cluster.name();
  sum.trace = workload.name;
  sum.truth = "ddl-paper";
  sum.placement = config.placement == SharedGpuConfig::Placement::kFirstFit
                      ? "first-fit"
                      : "lwf-kappa:kappa=" + std::to_string(config.kappa);
  sum.seed = sim_config.seed;
  sum.events = run->end_ms;  // 1 ms steps
  Summarize(r.jobs, r.timeline, total_gpus, end, &sum);
  return r;
}

}  // namespace tessel
