// Time as tessel's scheduler sees it: integer microseconds since the start
// of a run (simulation) or since the Unix epoch (daemon). Integer time keeps
// event ordering exact: no two runs can disagree on which of two events came
// first. Where time comes from is sched/clock.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessel {

using SimTime = int64_t;  // microseconds
inline constexpr SimTime kMicrosPerSecond = 1'000'000;
inline constexpr SimTime kNever = INT64_MAX;

// The largest magnitude in seconds a SimTime holds (about 292,000 years);
// conversions saturate beyond it (to kNever, or -kNever below), so no
// input can wrap a time negative (issue 14). NaN reads as kNever.
inline constexpr double kMaxSimSeconds = 9.2e12;
inline constexpr SimTime Seconds(double s) {
  if (!(s < kMaxSimSeconds)) return kNever;
  if (s <= -kMaxSimSeconds) return -kNever;
  return static_cast<SimTime>(s * kMicrosPerSecond + (s >= 0 ? 0.5 : -0.5));
}
inline constexpr double ToSeconds(SimTime t) {
  return static_cast<double>(t) / kMicrosPerSecond;
}
// Rounds up, so a job never finishes before its work is done; saturates
// as Seconds.
SimTime SecondsCeil(double s);

// The largest time or duration any input may give (trace times, work in
// seconds, --horizon and other durations, generated arrivals), seconds:
// about 300 years, far beyond any schedule and far below what integer
// microseconds hold.
inline constexpr double kMaxInputSeconds = 1e10;
// "300", "300s", "5m", "12h", "7d", "1.5h" -> microseconds (at most
// kMaxInputSeconds). `what` names the field in errors.
Result<SimTime> ParseDuration(std::string_view text, std::string_view what);
// 93784 s -> "1d 02:03:04"; under a day "02:03:04".
std::string FormatDuration(SimTime t);

}  // namespace tessel
