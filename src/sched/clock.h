// Where time comes from. The scheduling loop reads time only through a
// Clock and waits through it: the simulator's clock jumps to the next event,
// the daemon's is the system clock and really waits. Implementations must be
// monotonic (Now never goes back).
#pragma once

#include <condition_variable>
#include <mutex>

#include "core/sim_time.h"

namespace tessel {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual SimTime Now() const = 0;
  // Returns once Now() >= `t` (kNever: until Notify), or earlier when
  // another thread calls Notify. Returns Now() then.
  virtual SimTime WaitUntil(SimTime t) = 0;
  // Ends a WaitUntil early (something happened that the waiter must see).
  // Thread-safe. A Notify with no waiter makes the next WaitUntil return at
  // once, so a wake-up is never lost.
  virtual void Notify() {}
  // True when time moves only when the loop says so (simulation, tests):
  // an event in the past is then a bug, not a late wake-up.
  virtual bool simulated() const = 0;
};

// Simulated time: WaitUntil jumps straight to `t`.
class ManualClock : public Clock {
 public:
  SimTime Now() const override { return now_; }
  SimTime WaitUntil(SimTime t) override {
    if (t != kNever && t > now_) now_ = t;
    return now_;
  }
  bool simulated() const override { return true; }

 private:
  SimTime now_ = 0;
};

// Wall-clock time in microseconds since the Unix epoch (system_clock, as the
// daemon stores it); waits on a condition variable so Notify cuts a wait
// short. Thread-safe.
class SystemClock : public Clock {
 public:
  SimTime Now() const override;
  SimTime WaitUntil(SimTime t) override;
  void Notify() override;
  bool simulated() const override { return false; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace tessel
