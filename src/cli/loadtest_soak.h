// `tessel loadtest --duration`: a timed soak mixing every kind of request
// while the daemon's jobs run (src/cli/loadtest_soak.cc says the mix).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cli/loadtest.h"

namespace tessel {
namespace loadtest {

struct SoakOptions {
  double duration_s = 600;
  double sample_every_s = 10;  // /metrics readings of the daemon's process figures
  std::string drain_node;      // drained at 1/3 of the soak, resumed at 2/3 ("" = none)
  bool json = false;
};

// Runs the soak over `clients` (one thread each); `sampler` reads /metrics
// and cancels what is left at the end. Returns 1 when any request failed
// other than the expected 409s, else 0.
int RunSoak(const SoakOptions& opt, std::vector<ApiClient>& clients, ApiClient& sampler,
            const std::string& submit_body, std::ostream& out, std::ostream& err);

}  // namespace loadtest
}  // namespace tessel
