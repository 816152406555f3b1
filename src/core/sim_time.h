// Time as tessel's scheduler sees it: integer microseconds since the start
// of a run (simulation) or since the epoch (daemon), and the Clock interface
// every component reads time through. Integer time keeps event ordering
// exact: no two runs can disagree on which of two events came first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessel {

using SimTime = int64_t;  // microseconds
inline constexpr SimTime kMicrosPerSecond = 1'000'000;
inline constexpr SimTime kNever = INT64_MAX;

inline constexpr SimTime Seconds(double s) {
  return static_cast<SimTime>(s * kMicrosPerSecond + (s >= 0 ? 0.5 : -0.5));
}
inline constexpr double ToSeconds(SimTime t) {
  return static_cast<double>(t) / kMicrosPerSecond;
}
// Rounds up, so a job never finishes before its work is done.
SimTime SecondsCeil(double s);

// "300", "300s", "5m", "12h", "7d", "1.5h" -> microseconds. `what` names the
// field in errors.
Result<SimTime> ParseDuration(std::string_view text, std::string_view what);
// 93784 s -> "1d 02:03:04"; under a day "02:03:04".
std::string FormatDuration(SimTime t);

// Where time comes from. The simulator's clock is advanced by its event
// loop; the daemon's reads the system clock. Implementations must be
// monotonic.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SimTime Now() const = 0;
};

// A clock that only moves when told to (simulation, tests).
class ManualClock : public Clock {
 public:
  SimTime Now() const override { return now_; }
  void AdvanceTo(SimTime t) { now_ = t > now_ ? t : now_; }

 private:
  SimTime now_ = 0;
};

}  // namespace tessel
