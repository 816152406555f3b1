// The simulator backend's nodes: random and scheduled failures, repairs,
// and the auto-scaler's power changes (nodes booting after a delay, empty
// nodes powered down).
#include <algorithm>
#include <cmath>
#include <string>

#include "sim/sim_backend.h"
#include "sim/sim_backend_impl.h"

namespace tessel {

using namespace sim_detail;  // NOLINT: the backend's own internal types

void SimBackend::Impl::ScheduleFailure(int node) {
  if (config.failures.node_mtbf_s <= 0) return;
  double dt = -std::log(Uniform01(rng)) * config.failures.node_mtbf_s;
  Push(now + Seconds(dt), EventKind::kNodeFail, node);
}

void SimBackend::Impl::Fail(int node) {
  if (!up[node]) return;
  timeline_dirty = true;
  if (log != nullptr) Log("fail node=" + std::to_string(node));
  // Jobs on the node fall back to their last checkpoint.
  std::vector<int> hit;
  for (int idx : running) {
    for (const Placement& p : jobs[idx].view.alloc.parts) {
      if (p.node == node) {
        hit.push_back(idx);
        break;
      }
    }
  }
  std::sort(hit.begin(), hit.end());
  for (int idx : hit) {
    JobState& j = jobs[idx];
    Touch(j);
    if (j.view.phase == JobPhase::kRunning && WorkDone(j)) {
      Complete(j);  // it finished at the instant its node failed
      continue;
    }
    if (j.view.phase == JobPhase::kRunning) {
      double interval = config.failures.checkpoint_interval_s;
      SimTime run_start = j.run.empty() ? j.segment_start : j.run.front().start;
      double ran = ToSeconds(now - run_start);
      double kept = interval > 0 ? std::floor(ran / interval) * interval : 0;
      double ckpt = j.run.empty() ? j.segment_start_iters + kept / j.iteration_time_s
                                  : ProgressAtTime(j, run_start + Seconds(kept));
      j.lost_iterations += j.view.done_iterations - ckpt;
      j.view.done_iterations = std::min(j.view.done_iterations, ckpt);
      if (AppJob* a = app[idx].get()) a->epoch = a->profile->EpochAt(j.view.done_iterations);
    }
    Release(j);
    j.view.phase = JobPhase::kPending;
    j.view.alloc_since = now;
    j.needs_save = false;  // nothing to save: it restarts from the checkpoint
    ++j.failures;
    ++j.version;
    if (log != nullptr) Log("lose job=" + j.view.spec->id + " node=" + std::to_string(node));
  }
  up[node] = 0;
  free[node] = 0;
  down_gpus += cluster.nodes()[node].gpus;
  Push(now + Seconds(config.failures.repair_s), EventKind::kNodeRepair, node);
  found.decide = true;
}

void SimBackend::Impl::Repair(int node) {
  timeline_dirty = true;
  up[node] = 1;
  free[node] = cluster.nodes()[node].gpus;
  down_gpus -= cluster.nodes()[node].gpus;
  if (log != nullptr) Log("repair node=" + std::to_string(node));
  ScheduleFailure(node);
  found.decide = true;
}

// Powers nodes up (lowest ids first; they join after the boot delay) or
// down (highest ids first, only nodes up and holding no job) toward
// `target` powered nodes.
Status SimBackend::Impl::PowerNodes(int target) {
  const int n = static_cast<int>(cluster.nodes().size());
  if (target < 0 || target > n) return InvalidArgument("power target " + std::to_string(target) + " outside 0.." + std::to_string(n));
  AccruePower(now);
  for (int node = 0; node < n && powered_count < target; ++node) {
    if (powered[node]) continue;
    powered[node] = 1;
    ++powered_count;
    ++booting;
    ++power_changes;
    if (log != nullptr) Log("power-up node=" + std::to_string(node));
    if (config.autoscale.boot_delay_s > 0) {
      Push(now + Seconds(config.autoscale.boot_delay_s), EventKind::kNodeBoot, node);
    } else {
      Boot(node);
    }
  }
  for (int node = n - 1; node >= 0 && powered_count > target; --node) {
    if (!powered[node] || !up[node] || free[node] != cluster.nodes()[node].gpus) continue;
    timeline_dirty = true;
    powered[node] = 0;
    --powered_count;
    up[node] = 0;
    free[node] = 0;
    off_gpus += cluster.nodes()[node].gpus;
    ++power_changes;
    if (log != nullptr) Log("power-down node=" + std::to_string(node));
    found.decide = true;
  }
  return Status::Ok();
}

void SimBackend::Impl::Boot(int node) {
  if (!powered[node] || up[node]) return;
  timeline_dirty = true;
  --booting;
  up[node] = 1;
  free[node] = cluster.nodes()[node].gpus;
  off_gpus -= cluster.nodes()[node].gpus;
  if (log != nullptr) Log("boot node=" + std::to_string(node));
  found.decide = true;
}

}  // namespace tessel
