// The scheduling loop, the same code for the simulator and the Slurm
// daemon: wait for the next event or timer (through the Clock), let the
// backend handle what is due, and when something changed — or at a round
// (PolicyTraits::uses_rounds), or at a wake-up the policy asked for — take a
// snapshot, ask the policy, check its Decision against the policy contract,
// and hand it to the backend.
//
// Order within one instant: the backend's events first (in its own order),
// then the round and wake-up timers, then at most one decision, then
// Backend::Settle. (One exception: a decision that released GPUs or
// rejected jobs but left nothing running and nothing due — the backend
// quiescent — is followed by one more decision at the same instant, on the
// state it made, before the loop may stop.) Rounds fall on multiples of the round length and run
// while jobs are active; a round-based policy's first round is the next
// multiple after a job becomes active. With an autoscaler, each round
// first lets it set the node count (Backend::PowerNodes), and rounds go on
// while nodes above its minimum are powered, jobs or not.
//
// Not thread-safe, except Stop (any thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <queue>
#include <string_view>
#include <vector>

#include "core/duration_histogram.h"
#include "core/status.h"
#include "policy/policy.h"
#include "sched/autoscaler.h"
#include "sched/backend.h"
#include "sched/clock.h"

namespace tessel {

struct LoopConfig {
  SimTime round = 300 * kMicrosPerSecond;  // > 0
  SimTime horizon = kNever;  // events after this are not handled (simulation)
};

// Checks `decision` against the policy contract (policy/policy.h) on the
// snapshot it was made from: every named job is active (and rejected at
// most once, and not also assigned after its rejection); every changed
// allocation has a valid GPU type and takes, node by node, only GPUs of
// that type that are free in the snapshot or released by the same decision
// (rejections and changed allocations release theirs first). Internal
// error naming the policy and the offending job otherwise: a policy bug.
Status CheckDecision(const Snapshot& snapshot, const Decision& decision, std::string_view policy);

class SchedulerLoop {
 public:
  // All references must outlive the loop.
  SchedulerLoop(Policy& policy, Backend& backend, Clock& clock, LoopConfig config);

  // Steps until the backend has finished, the horizon passes, the backend
  // is quiescent after the policy had its chance, or Stop. Errors: a
  // contract violation (Internal), a backend error, nothing scheduled while
  // jobs remain (Internal), an event in the past on a simulated clock.
  Status Run();
  // One instant: waits for the next event or timer, handles it, decides if
  // needed. Returns false when the loop should end (see Run).
  Result<bool> Step();
  // Ends Run after the current step; wakes a waiting clock. Thread-safe.
  void Stop();
  // Asks for a decision at the next step (a real backend's asynchronous
  // event, e.g. a submission); wakes a waiting clock. Thread-safe.
  void Poke();

  // Called after every step (progress reporting).
  void set_after_step(std::function<void(SimTime)> fn) { after_step_ = std::move(fn); }
  // Called after every decision: its time, whether it was a round, the
  // active jobs it saw, the allocations it changed and its wall time (s).
  using DecisionHook = std::function<void(SimTime now, bool at_round, size_t jobs, size_t changes, double wall_s)>;
  void set_after_decision(DecisionHook fn) { after_decision_ = std::move(fn); }
  // Cluster auto-scaling at each round (optional; must outlive the loop;
  // the policy must use rounds and price cluster sizes).
  void set_autoscaler(Autoscaler* autoscaler) { autoscaler_ = autoscaler; }

  SimTime now() const { return now_; }
  int64_t decisions() const { return decisions_; }
  // Rounds and wake-ups handled (the simulator counts them as events).
  int64_t timer_events() const { return timer_events_; }
  // Wall time of the last decision (policy + check + apply), seconds.
  double last_decision_s() const { return last_decision_s_; }
  // Every decision's wall time so far.
  const DurationHistogram& decision_times() const { return decision_times_; }

 private:
  void ScheduleRound();

  Policy& policy_;
  Backend& backend_;
  Clock& clock_;
  LoopConfig config_;
  Autoscaler* autoscaler_ = nullptr;
  bool uses_rounds_;
  SimTime now_;
  SimTime next_round_ = kNever;
  SimTime next_wake_ = kNever;
  // Wake-up times asked for, earliest first (a superseded one still wakes).
  std::priority_queue<SimTime, std::vector<SimTime>, std::greater<SimTime>> wakes_;
  bool last_decision_at_round_ = true;
  int64_t decisions_ = 0;
  int64_t timer_events_ = 0;
  double last_decision_s_ = 0;
  DurationHistogram decision_times_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> poked_{false};
  bool again_ = false;  // decide once more at this instant (see Step)
  std::function<void(SimTime)> after_step_;
  DecisionHook after_decision_;
};

}  // namespace tessel
