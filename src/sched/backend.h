// The world a scheduling loop drives: the simulator (sim/sim_backend.h) or a
// real cluster manager (the Slurm daemon). The loop (sched/loop.h) owns
// *when* to decide (rounds, wake-ups, events) and checks every Decision
// against the policy contract before it reaches the backend; the backend
// owns the jobs, the nodes and what carrying out a decision means.
//
// Contract for implementations:
//  - Time is given by the loop (`now` never decreases between calls).
//  - Advance handles every event due at or before `now` exactly once, in a
//    fixed order (deterministic for the simulator), and reports whether a
//    policy should be asked (something it can see changed).
//  - Observe fills a Snapshot that stays valid and unchanged until the next
//    call on the backend; its active jobs are sorted by JobView::index and
//    are exactly the jobs Apply accepts.
//  - Apply receives only decisions the loop checked (sched/loop.h
//    CheckDecision) against the snapshot Observe just gave. It applies
//    rejections first, then releases, then grants, so GPUs may pass from one
//    job to another within a decision. It is idempotent: a job named with
//    the allocation it already holds is left as it is, and applying the
//    same decision twice changes nothing the second time. Errors are for
//    the backend's own failures (a truth source with no answer, a cluster
//    manager that refused); a real backend reports transient ones as
//    Unavailable and leaves the job pending so a later decision retries.
//  - Settle runs once per loop step, after any decision: the simulator
//    re-rates jobs whose shared links changed and records its timeline.
//  - Not thread-safe: the loop calls one method at a time.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "policy/snapshot.h"

namespace tessel {

// What Advance found.
struct BackendEvents {
  bool decide = false;     // something a policy should see changed
  bool activated = false;  // a job became active (round-based policies start rounds)
};

class Backend {
 public:
  virtual ~Backend() = default;

  // When the backend's next own event is due, or kNever when none is
  // scheduled (a real backend returns its next poll).
  virtual SimTime NextEvent() const = 0;
  // Handles every event due at or before `now`.
  virtual Result<BackendEvents> Advance(SimTime now) = 0;
  // The snapshot a policy decides on (everything but at_round and
  // round_length, which the loop sets). Brings running jobs' progress and
  // attained service up to `now`.
  virtual void Observe(SimTime now, Snapshot* snapshot) = 0;
  // Carries out a checked decision (see the contract above).
  virtual Status Apply(const Decision& decision, SimTime now) = 0;
  // Once per loop step, after the decision if there was one.
  virtual void Settle(SimTime now) {}
  // Cluster auto-scaling (sched/autoscaler.h): how many nodes are powered
  // (up or booting), and moving toward `target` of them -- nodes powered
  // up join after the backend's boot delay; only nodes holding no job are
  // powered down, so the count may stay above `target` until some empty.
  // A backend that cannot power nodes answers -1 and FailedPrecondition.
  virtual int PoweredNodes() const { return -1; }
  virtual Status PowerNodes(int target, SimTime now) {
    (void)target;
    (void)now;
    return FailedPrecondition("this backend cannot power nodes up or down");
  }

  // Whether any job is active (waiting or holding GPUs): without one there
  // is nothing to decide.
  virtual bool HasActiveJobs() const = 0;
  // Every job has left the system; the loop ends (a daemon never finishes).
  virtual bool Finished() const = 0;
  // Nothing will change unless the policy acts: no arrivals ahead, nothing
  // running or being profiled, no capacity coming back. With a policy that
  // already had its chance, the loop stops instead of spinning (jobs that
  // can never be placed remain pending).
  virtual bool Quiescent() const = 0;
  // "3 jobs unfinished", for the loop's error when nothing is scheduled
  // but jobs remain.
  virtual std::string Outstanding() const = 0;
  // Events the backend handled so far (the simulator's summary counts them
  // with the loop's rounds and wake-ups).
  virtual int64_t events() const = 0;
};

}  // namespace tessel
