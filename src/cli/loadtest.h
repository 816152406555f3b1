// What `tessel loadtest`'s two modes share (src/cli/cmd_loadtest.cc: fixed
// phases of submissions, queries and cancels; src/cli/loadtest_soak.cc: a
// timed mix while jobs run): timing one request, tallying requests by kind,
// and the report (a table or JSON).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/api_client.h"

namespace tessel {
namespace loadtest {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// One kind of request as one thread saw it.
struct KindTally {
  std::vector<double> latency_ms;         // of every request, answered or not
  std::map<std::string, int64_t> errors;  // "HTTP 503", "no reply"
  std::map<std::string, int64_t> expected;  // non-2xx answers the caller expected ("HTTP 409")
};

// One thread's record of one phase.
struct Tally {
  std::map<std::string, KindTally> kinds;
  std::vector<std::pair<int64_t, int64_t>> ids;  // (submission index, job id)
};

// One kind over all threads.
struct KindResult {
  std::string kind;
  int64_t requests = 0;
  int64_t errors = 0;
  double seconds = 0;  // its phase's wall time
  std::vector<double> latency_ms;  // sorted
  std::map<std::string, int64_t> errors_by_code;
  std::map<std::string, int64_t> expected_by_code;
};

std::string Fixed(double v, int decimals);

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p);

// Sends one request, timing it into `tally`. A reply outside 2xx is an
// error unless its code is in `expected` (then counted apart); no reply is
// an error. Returns the reply when it is 2xx.
std::optional<HttpReply> Timed(ApiClient& client, KindTally& tally, const std::string& method,
                               const std::string& path, const std::string& body,
                               const std::set<int>& expected = {});

// Appends one KindResult per name in `kinds` (in that order) to `results`,
// merging the threads' tallies of a phase that took `seconds`.
void Collect(const std::vector<std::string>& kinds, std::vector<Tally>& tallies, double seconds,
             std::vector<KindResult>* results);

// The report: a table (req/s, p50/p99/max ms per kind, errors by code) or,
// with `json`, one object; `extra` is merged into the JSON object, and its
// "notes" (strings) are printed under the table.
void Report(const std::vector<KindResult>& results, const std::string& server, size_t threads, bool json,
            const Json& extra, std::ostream& out);

}  // namespace loadtest
}  // namespace tessel
