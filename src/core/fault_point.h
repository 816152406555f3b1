// Fault points: named places where a test can make the process die, exactly
// there, to check what a crash at that moment leaves behind (the daemon's
// fault-injection suite, tests/integration/faults_test.sh).
//
//   TESSEL_FAULT_POINT=NAME[:N]   at the N-th time (default 1st) the process
//                                 reaches FaultPoint("NAME"), it dies at once
//                                 with SIGKILL (no destructors, no flushing:
//                                 what a kill -9 or a power cut leaves).
//
// Read once, at the first call. Unset (every production run) costs one
// branch on a cached flag. The names are listed in docs/daemon.md.
#pragma once

#include <string_view>

namespace tessel {

// Dies here when TESSEL_FAULT_POINT names this point (and its count is reached).
void FaultPoint(std::string_view name);

// The name and count parsed from TESSEL_FAULT_POINT ("" when unset), for tests.
struct FaultPointSetting {
  std::string_view name;
  int count = 1;
};
FaultPointSetting ParseFaultPoint(std::string_view value);

}  // namespace tessel
