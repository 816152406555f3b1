// The daemon's Prometheus metrics (GET /metrics): the service's figures
// plus the API's own request counts, in the text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/):
//
//   tessel_queue_length                    gauge    pending + profiling jobs
//   tessel_jobs{state}                     gauge    jobs by state
//   tessel_gpus_allocated{gpu_type}        gauge    GPUs tessel's jobs hold
//   tessel_decisions_total                 counter  scheduling decisions
//   tessel_decision_seconds_{sum,count}    summary  time spent deciding
//   tessel_last_decision_seconds           gauge    the latest decision's time
//   tessel_restarts_total                  counter  job restarts
//   tessel_failures_total                  counter  job failures
//   tessel_api_requests_total{code}        counter  HTTP requests by status,
//                                                    401s and 404s included
//
// and the process's own figures under Prometheus's standard names (Linux,
// from /proc/self; absent where it cannot be read):
//
//   process_resident_memory_bytes          gauge    resident set size
//   process_virtual_memory_bytes           gauge    virtual memory size
//   process_open_fds                       gauge    open file descriptors
//   process_max_fds                        gauge    the descriptor limit
//   process_threads                        gauge    OS threads
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/service.h"

namespace tessel {

// HTTP responses by status code. Thread-safe.
class RequestCounter {
 public:
  void Count(int code);
  // (code, count), by code.
  std::vector<std::pair<int, int64_t>> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<int, int64_t> by_code_;
};

// The exposition text: each family with HELP and TYPE lines, then its
// samples `name{label="value"} number`. Label values are escaped (\\, \",
// \n); numbers are shortest round-trip decimals, NaN and +Inf/-Inf spelled
// as Prometheus reads them.
std::string RenderMetrics(const ServiceMetrics& m, const std::vector<std::pair<int, int64_t>>& requests_by_code);

// The daemon process's figures from /proc/self; -1 where unreadable.
struct ProcessFigures {
  int64_t resident_bytes = -1;
  int64_t virtual_bytes = -1;
  int64_t open_fds = -1;
  int64_t max_fds = -1;
  int64_t threads = -1;
};
ProcessFigures ReadProcessFigures();

// A label value with backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view value);

}  // namespace tessel
