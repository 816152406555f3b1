#include "core/sim_time.h"

#include <cmath>
#include <cstdio>

#include "core/strings.h"

namespace tessel {

SimTime SecondsCeil(double s) {
  if (!(s < kMaxSimSeconds)) return kNever;
  if (s <= -kMaxSimSeconds) return -kNever;
  return static_cast<SimTime>(std::ceil(s * kMicrosPerSecond - 1e-6));
}

Result<SimTime> ParseDuration(std::string_view text, std::string_view what) {
  std::string t = Trim(text);
  double unit = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 's': unit = 1; t.pop_back(); break;
      case 'm': unit = 60; t.pop_back(); break;
      case 'h': unit = 3600; t.pop_back(); break;
      case 'd': unit = 86400; t.pop_back(); break;
      default: break;
    }
  }
  auto v = ParseDouble(t, what);
  if (!v.ok() || *v < 0) {
    return InvalidArgument(std::string(what) + ": expected a duration like 300, 300s, 5m, 12h or 7d, got '" +
                           std::string(text) + "'");
  }
  // Durations are bounded well inside what integer microseconds hold.
  if (!(*v * unit <= kMaxInputSeconds)) {
    return InvalidArgument(std::string(what) + ": " + std::string(text) + " is too long; at most 1e10 s (about 300 years)");
  }
  return Seconds(*v * unit);
}

std::string FormatDuration(SimTime t) {
  int64_t s = t / kMicrosPerSecond;
  bool neg = s < 0;
  if (neg) s = -s;
  char buf[64];
  int64_t d = s / 86400;
  if (d > 0) {
    std::snprintf(buf, sizeof buf, "%s%lldd %02lld:%02lld:%02lld", neg ? "-" : "", static_cast<long long>(d),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%s%02lld:%02lld:%02lld", neg ? "-" : "", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

}  // namespace tessel
