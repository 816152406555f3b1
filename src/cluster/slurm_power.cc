// Slurm's power saving for the auto-scaler (sched/autoscaler.h): how many
// nodes are powered, and powering nodes up or down through slurmctld.
#include <cstdio>

#include "cluster/slurm_backend_impl.h"

namespace tessel {

int SlurmBackend::PoweredNodes() const {
  int n = 0;
  for (uint8_t p : impl_->powered) n += p;
  return n;
}

Status SlurmBackend::PowerNodes(int target, SimTime now) { return impl_->PowerNodes(target, now); }

bool SlurmBackend::Impl::HoldsJob(int node) const {
  for (const auto& [id, t] : jobs) {
    for (const Placement& p : t->view.alloc.parts)
      if (p.node == node) return true;
    for (const Placement& p : t->running.parts)
      if (p.node == node) return true;
  }
  return false;
}

// Powers nodes up (lowest ids first) or down (highest first, only nodes up
// with no job on them) toward `target`. Best effort: a refusal (Slurm's
// answer to a node already on its way) is logged and the next round tries
// again.
Status SlurmBackend::Impl::PowerNodes(int target, SimTime now) {
  (void)now;
  int count = 0;
  for (uint8_t p : powered) count += p;
  const int n = static_cast<int>(powered.size());
  for (int i = 0; i < n && count < target; ++i) {
    if (powered[i]) continue;
    Status s = slurm.SetPower(inv.names[i], true);
    if (!s.ok()) {
      Warn(s);
      continue;
    }
    std::fprintf(stderr, "tessel serve: autoscale: powering up %s (%d of %d nodes wanted)\n", inv.names[i].c_str(),
                 target, n);
    powered[i] = 1;
    ++count;
  }
  for (int i = n - 1; i >= 0 && count > target; --i) {
    if (!powered[i] || !up[i] || slurm_used[i] > 0 || HoldsJob(i)) continue;
    Status s = slurm.SetPower(inv.names[i], false);
    if (!s.ok()) {
      Warn(s);
      continue;
    }
    std::fprintf(stderr, "tessel serve: autoscale: powering down %s (%d of %d nodes wanted)\n",
                 inv.names[i].c_str(), target, n);
    powered[i] = 0;
    up[i] = 0;
    free[i] = 0;
    found.decide = true;
    --count;
  }
  return Status::Ok();
}

}  // namespace tessel
