// The simulator backend's decisions: applying a policy's Decision (with
// what a restart costs), the snapshot policies see, and the network model's
// re-rating of jobs that share links.
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "policy/placement.h"
#include "sim/sim_backend_impl.h"

namespace tessel {

using namespace sim_detail;  // NOLINT: the backend's own internal types

double SimBackend::Impl::CheckpointSeconds(const JobState& j, int nodes) const {
  if (!config.reconfig.checkpoints) return 0;
  return j.checkpoint_bytes / (config.reconfig.storage_gbs_per_node * 1e9 * std::max(1, nodes));
}

// Seconds from getting `alloc` to making progress on it: a job that ran
// before saves its checkpoint (if its last allocation has not yet) and
// loads it; adaptive policies also search a plan.
double SimBackend::Impl::StartDelay(const JobState& j, const Allocation& alloc) const {
  const ReconfigCost& rc = config.reconfig;
  double search = 0;
  if (traits.searches_plans || rc.baselines_pay_full_search) {
    search = traits.full_plan_search || !traits.searches_plans ? std::min(rc.full_search_cap_s, rc.full_search_s_per_gpu * alloc.gpus())
                                     : std::min(rc.search_cap_s, rc.search_s_per_gpu * alloc.gpus());
  }
  double delay = search + rc.start_overhead_s;
  if (j.view.started()) {
    double save = j.needs_save ? CheckpointSeconds(j, j.last_nodes) : 0;
    delay = save + CheckpointSeconds(j, alloc.nodes()) + rc.restart_overhead_s + search;
  }
  if (rc.debt_round_s > 0)
    delay = delay <= rc.debt_round_s ? 0.0 : (std::ceil(delay / rc.debt_round_s) - 1) * rc.debt_round_s;
  return delay;
}

// The decision was checked against the snapshot (sched/loop.h
// CheckDecision); only the truth can still refuse it.
Status SimBackend::Impl::Apply(const Decision& d) {
  timeline_dirty = true;
  for (const auto& [idx, why] : d.reject) {
    JobState& j = jobs[idx];
    Touch(j);
    Release(j);
    j.view.phase = JobPhase::kPending;
    j.status = Status_::kRejected;
    j.reason = why;
    ++j.version;
    RemoveActive(idx);
    ++done_jobs;
    if (log != nullptr) Log("reject job=" + j.view.spec->id + " reason=" + why);
  }
  // Releases first, so a decision may hand GPUs from one job to another.
  std::vector<std::pair<int, const Allocation*>> grants;
  for (const auto& [idx, alloc] : d.assign) {
    JobState& j = jobs[idx];
    if (j.view.alloc == alloc) continue;
    Touch(j);
    bool was_holding = !j.view.alloc.empty();
    if (was_holding) {
      j.needs_save = true;
      Release(j);  // remembers the node count the save will use
      if (alloc.empty()) {
        ++j.view.preemptions;
        if (log != nullptr) Log("suspend job=" + j.view.spec->id);
      }
    }
    j.view.phase = JobPhase::kPending;
    j.view.alloc_since = now;
    ++j.version;
    if (!alloc.empty()) grants.push_back({idx, &alloc});
  }
  // The truth's answers for the new allocations, searched together where
  // the truth is an estimator.
  std::vector<RateQuery> asked;
  for (const auto& [idx, alloc] : grants)
    if (app[idx] == nullptr) asked.push_back({jobs[idx].view.spec, alloc->type, alloc->gpus(), alloc->nodes()});
  truth.Prefetch(asked);
  std::unordered_map<int, const std::vector<PlanChoice>*> plan_sets;
  if (log != nullptr)
    for (const auto& [idx, set] : d.plans) plan_sets[idx] = &set;
  for (const auto& [idx, alloc] : grants) {
    JobState& j = jobs[idx];
    const JobSpec& s = *j.view.spec;
    AppJob* a = app[idx].get();
    const JobRate* rate = nullptr;
    if (a == nullptr) {
      rate = &truth.Rate(s, alloc->type, alloc->gpus(), alloc->nodes());
      if (!rate->fits) {
        // The truth has no answer for this shape (a table without it, or
        // one that measured it out of memory): the belief's rate stands in.
        rate = &belief.Rate(s, alloc->type, alloc->gpus(), alloc->nodes());
        if (!rate->fits) {
          // Out of memory on these GPUs as placed (e.g. a job priced on
          // one node and spread over two, where the measured table says
          // that split does not fit): it does not start, and waits for
          // the next decision (the Arena artifact's out-of-memory event).
          ++oom_placements;
          if (log != nullptr)
            Log("oom job=" + s.id + " on=" + alloc->ToString(cluster) + " reason=" + rate->reason);
          continue;
        }
        ++truth_fallbacks;
      }
    }
    for (const Placement& p : alloc->parts) free[p.node] -= p.gpus;
    j.alloc_epoch = ++next_alloc_epoch;
    j.ring.clear();
    j.duty = -1;
    if (alloc->nodes() > 1) {
      MarkContention(idx);
      j.ring = network.RingPaths(*alloc);
    }
    bool first = !j.view.started();
    double delay = StartDelay(j, *alloc);
    if (!first) ++j.view.restarts;
    j.view.alloc = *alloc;
    std::string how;  // for the event log only
    if (a != nullptr) {
      SetAppRate(j, *a, *alloc);
      if (log != nullptr) {
        how = " batch=" + std::to_string(a->choice.batch) + " atomic=" + std::to_string(a->choice.atomic_bsz) +
              " accum=" + std::to_string(a->choice.accum_steps);
      }
    } else {
      SetRate(j, *rate);
      j.network_s = j.network_exposed_s = 0;
      if (alloc->nodes() > 1) NetworkOf(j, *rate, *alloc);
      if (log != nullptr) how = " plan=" + rate->plan.ToString();
    }
    // The policy's plan set for the executor: a launcher runs its first
    // plan, the rest are its memory fallbacks. The rate stays the truth's.
    if (log != nullptr) {
      if (auto it = plan_sets.find(idx); it != plan_sets.end() && !it->second->empty()) {
        how += " plan_set=" + std::to_string(it->second->size()) + " first=" + it->second->front().plan.ToString();
      }
    }
    j.needs_save = false;
    AddRunning(idx);
    if (first) j.view.first_start = now;
    if (log != nullptr) Log(std::string(first ? "start" : "restart") + " job=" + s.id + " on=" + alloc->ToString(cluster) + how +
        " iter_s=" + FormatIter(j.iteration_time_s) + " delay_s=" + FormatIter(delay));
    StartOrDelay(j, delay);
  }
  return Status::Ok();
}

// A job's truth rate from a ThroughputModel answer.
void SimBackend::Impl::SetRate(JobState& j, const JobRate& r) {
  j.alone_iteration_s = j.base_iteration_s = r.iteration_time_s;
  j.iteration_time_s = r.iteration_time_s * Slowdown(j);
  j.samples_per_iter = r.samples_per_s * r.iteration_time_s;
  j.tokens_per_iter = r.tokens_per_s * r.iteration_time_s;
}

void SimBackend::Impl::StartOrDelay(JobState& j, double delay) {
  RowChanged(j);
  if (delay > 0) {
    j.view.phase = JobPhase::kStarting;
    j.ready_at = now + Seconds(delay);
    Push(j.ready_at, EventKind::kReady, j.view.index, j.version);
  } else {
    BeginProgress(j);
  }
}

// A multi-node job's traffic for the network model. A truth without a
// breakdown (measured tables) takes the belief's: the same fractions of
// its own iteration.
void SimBackend::Impl::NetworkOf(JobState& j, const JobRate& truth_rate, const Allocation& alloc) {
  const JobRate* r = &truth_rate;
  double scale = 1;
  if (r->network_s <= 0) {
    const JobRate& b = belief.Rate(*j.view.spec, alloc.type, alloc.gpus(), alloc.nodes());
    if (!b.fits || b.iteration_time_s <= 0) return;
    r = &b;
    scale = truth_rate.iteration_time_s / b.iteration_time_s;
  }
  j.network_s = std::min(r->network_s * scale, j.alone_iteration_s);
  j.network_exposed_s = std::min(r->network_exposed_s * scale, j.network_s);
}

// The flow-level network model (network/network_model.h): after
// allocations change, every group of running multi-node jobs that share
// links and changed since it was last rated is re-rated together. Jobs
// played from profiles keep their measured rates.
void SimBackend::Impl::UpdateContention() {
  contention_dirty = false;
  std::vector<int> touched;
  touched.swap(contention_touched);
  if (!config.network.enabled) return;
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (int i : touched) {
    const JobState& j = jobs[i];
    link_groups.Remove(i);
    if (app[i] == nullptr && j.view.phase == JobPhase::kRunning && j.view.alloc.nodes() > 1 && j.network_s > 0)
      link_groups.Add(i, j.ring);
  }
  std::vector<std::pair<int, uint64_t>> key;
  std::vector<CommJob> group;
  for (const std::vector<int>& members : link_groups.TakeChanged()) {
    key.clear();
    for (int m : members) key.push_back({m, jobs[m].alloc_epoch});
    // Rated as this very group before: each member's key is the last
    // group it was rated in, and epochs change with every allocation.
    if (jobs[members.front()].rated_group == key) continue;
    group.clear();
    for (int m : members) {
      JobState& j = jobs[m];
      j.rated_group = key;
      group.push_back({static_cast<uint64_t>(m), &j.view.alloc, j.alone_iteration_s, j.network_s, j.network_exposed_s,
                       &j.ring, j.duty});
    }
    std::vector<double> duty;
    std::vector<double> times = network.IterationTimes(group, &duty);
    for (size_t k = 0; k < members.size(); ++k) {
      jobs[members[k]].duty = duty[k];
      Rerate(jobs[members[k]], times[k]);
    }
  }
}

void SimBackend::Impl::UpdateInterference() {
  if (config.interference <= 0) return;
  // Jobs spread over nodes, per node: those holding GPUs (a job restarting
  // there counts, as an allocation does in the Pollux artifact).
  std::vector<int> spread(cluster.nodes().size(), 0);
  std::vector<int> holding(running.begin(), running.end());
  std::sort(holding.begin(), holding.end());
  for (int i : holding) {
    const Allocation& a = jobs[i].view.alloc;
    if (a.nodes() > 1)
      for (const Placement& p : a.parts) ++spread[p.node];
  }
  for (int i : holding) {
    JobState& j = jobs[i];
    const Allocation& a = j.view.alloc;
    bool shared = false;
    if (a.nodes() > 1)
      for (const Placement& p : a.parts) shared = shared || spread[p.node] > 1;
    if (shared == j.interfered) continue;
    Touch(j);
    j.interfered = shared;
    j.iteration_time_s = j.base_iteration_s * Slowdown(j);
    RowChanged(j);
    if (log != nullptr)
      Log(std::string("interference job=") + j.view.spec->id + (shared ? " on" : " off") +
          " iter_s=" + FormatIter(j.iteration_time_s));
    // A running job's completion moves; a restarting one starts at the new
    // rate when it is ready (its ready event stays valid).
    if (j.view.phase == JobPhase::kRunning) {
      ++j.version;
      BeginProgress(j, /*continues=*/true);
    }
  }
}

void SimBackend::Impl::Rerate(JobState& j, double iteration_s) {
  // Changes under 1% are the model's own noise (its fixed point and
  // measured window), not worth an event.
  const double slowed = iteration_s * Slowdown(j);
  if (std::abs(slowed - j.iteration_time_s) <= 1e-2 * j.iteration_time_s) return;
  Touch(j);
  j.base_iteration_s = iteration_s;
  j.iteration_time_s = slowed;
  if (log != nullptr)
    Log("rate job=" + j.view.spec->id + " network_slowdown=" + FormatIter(iteration_s / j.alone_iteration_s) +
        " iter_s=" + FormatIter(j.iteration_time_s));
  ++j.version;
  BeginProgress(j, /*continues=*/true);
}

void SimBackend::Impl::Observe(Snapshot* snap) {
  // Running jobs' progress and service must be current in the snapshot,
  // and no policy sees a job whose work is done: it completes first (its
  // completion event may be up to a tick later), so a preemption or
  // resize at the instant a job finishes cannot leave it pending.
  TouchRunningAndCompleteDone();
  snap->now = now;
  snap->cluster = &cluster;
  snap->free_gpus = free;
  snap->node_up = up;
  snap->jobs = active;
  if (config.complete_at_rounds && EndOfRound(now) != now) {
    // A job whose work is done keeps its GPUs until the round's end, out of
    // the policy's sight (it can neither move it nor count its GPUs free).
    visible.clear();
    for (const JobView* v : active)
      if (!(v->phase == JobPhase::kRunning && WorkDone(jobs[v->index]))) visible.push_back(v);
    if (visible.size() < active.size()) snap->jobs = visible;
  }
  snap->belief = &belief;
  snap->placement = config.placement;
}

}  // namespace tessel
