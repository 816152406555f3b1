#include "sched/clock.h"

#include <chrono>

namespace tessel {

SimTime SystemClock::Now() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

SimTime SystemClock::WaitUntil(SimTime t) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!notified_) {
    SimTime now = Now();
    if (t != kNever && now >= t) break;
    if (t == kNever) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, std::chrono::microseconds(t - now));
    }
  }
  notified_ = false;
  return Now();
}

void SystemClock::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

}  // namespace tessel
