// The simulator backend's pending events: what they are and the queue
// that hands them out in order (sim/sim_backend_impl.h uses it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/sim_time.h"

namespace tessel {
namespace sim_detail {

// Event kinds in the order simultaneous events are handled: state changes
// that free resources first, then arrivals (kArrival only separates them:
// arrivals come from the workload, not the queue). Rounds and wake-ups are
// the loop's timers and come after all of these.
enum class EventKind : int {
  kComplete = 0,
  kReady = 1,      // a reconfiguration finished: the job starts progressing
  kEpoch = 2,      // an app job crossed an epoch boundary: its rate changes
  kNodeRepair = 3,
  kNodeFail = 4,
  kProfiled = 5,   // a new job's profiling finished: the policy may place it
  kArrival = 6,
  kNodeBoot = 7,   // a node powered up by the autoscaler joins
};

struct Event {
  SimTime time;
  EventKind kind;
  int target;        // job index, node id, or -1
  uint64_t version;  // job events: stale when the job's version moved on
  uint64_t seq;      // insertion order breaks remaining ties

  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    if (target != o.target) return target > o.target;
    return seq > o.seq;
  }
};

// The pending events, earliest first (Event's order: time, kind, target,
// insertion). A job event whose version has moved on does nothing when it
// comes up, but it still counts as an event processed at its time (the
// summary's `events`). Most are completions of jobs re-sized since, far in
// the future: when they would crowd the heap (past twice what it held after
// the last purge), Purge moves them out to a list of their times only,
// counted once the clock has passed them. The live events' order is unchanged
// (it is a total order), and so is the count.
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  void push(const Event& e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<Event>{});
  }
  void pop() {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Event>{});
    heap_.pop_back();
  }
  // Called at the start of processing every event due at `now`. `stale`
  // says whether an event can no longer do anything. Returns how many
  // events it counted as processed by this pass's clock: purged ones due
  // by `now`, and some earlier-purged ones the clock has reached (PurgedBy
  // counts the rest).
  template <typename Stale>
  int64_t Purge(SimTime now, Stale stale) {
    if (heap_.size() < purge_at_) return 0;
    int64_t passed = 0;
    size_t kept = 0;
    for (const Event& e : heap_) {
      if (!stale(e)) {
        heap_[kept++] = e;
      } else if (e.time <= now) {
        ++passed;  // due now: this pass would pop it and count it
      } else {
        purged_.push_back(e.time);
      }
    }
    heap_.resize(kept);
    std::make_heap(heap_.begin(), heap_.end(), std::greater<Event>{});
    purge_at_ = std::max<size_t>(kMinPurge, 2 * heap_.size());
    // The purged times the clock has passed are counted and dropped when
    // the list has doubled since it was last cut down.
    if (purged_.size() >= compact_at_) {
      size_t left = 0;
      for (SimTime t : purged_) {
        if (t <= now) {
          ++passed;
        } else {
          purged_[left++] = t;
        }
      }
      purged_.resize(left);
      compact_at_ = std::max<size_t>(kMinPurge, 2 * left);
    }
    return passed;
  }
  // Purged events due by `t`, not yet counted.
  int64_t PurgedBy(SimTime t) const {
    return std::count_if(purged_.begin(), purged_.end(), [t](SimTime x) { return x <= t; });
  }

 private:
  static constexpr size_t kMinPurge = 4096;
  std::vector<Event> heap_;
  std::vector<SimTime> purged_;  // times of purged events not yet counted
  size_t purge_at_ = kMinPurge;
  size_t compact_at_ = kMinPurge;
};

}  // namespace sim_detail
}  // namespace tessel
