#include "server/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessel {

void RequestCounter::Count(int code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++by_code_[code];
}

std::vector<std::pair<int, int64_t>> RequestCounter::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {by_code_.begin(), by_code_.end()};
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

ProcessFigures ReadProcessFigures() {
  ProcessFigures f;
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  {
    std::ifstream statm("/proc/self/statm");
    int64_t size = 0, resident = 0;
    if (statm >> size >> resident && page > 0) {
      f.virtual_bytes = size * page;
      f.resident_bytes = resident * page;
    }
  }
  {
    std::error_code ec;
    int64_t n = 0;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++n;
    if (!ec) f.open_fds = n - 1;  // less the descriptor this listing holds open
  }
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
    f.max_fds = static_cast<int64_t>(lim.rlim_cur);
  {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Threads:", 0) == 0) {
        std::istringstream in(line.substr(8));
        int64_t n = 0;
        if (in >> n) f.threads = n;
        break;
      }
    }
  }
  return f;
}

namespace {

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}
std::string Number(int64_t v) { return std::to_string(v); }

class Exposition {
 public:
  void Family(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  template <typename T>
  void Sample(const std::string& name, T value) {
    out_ += name + " " + Number(value) + "\n";
  }
  template <typename T>
  void Sample(const std::string& name, const char* label, std::string_view label_value, T value) {
    out_ += name + "{" + label + "=\"" + EscapeLabelValue(label_value) + "\"} " + Number(value) + "\n";
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string RenderMetrics(const ServiceMetrics& m, const std::vector<std::pair<int, int64_t>>& requests_by_code) {
  Exposition e;
  e.Family("tessel_queue_length", "gauge", "Jobs waiting to run (pending and profiling).");
  e.Sample("tessel_queue_length", m.queue_length);
  e.Family("tessel_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, n] : m.jobs_by_state) e.Sample("tessel_jobs", "state", state, n);
  e.Family("tessel_gpus_allocated", "gauge", "GPUs allocated to tessel's jobs, by GPU type.");
  for (const auto& [type, n] : m.gpus_allocated_by_type) e.Sample("tessel_gpus_allocated", "gpu_type", type, n);
  e.Family("tessel_decisions_total", "counter", "Scheduling decisions made.");
  e.Sample("tessel_decisions_total", m.decisions);
  e.Family("tessel_decision_seconds", "summary", "Time spent making scheduling decisions.");
  e.Sample("tessel_decision_seconds_sum", m.decision_seconds_sum);
  e.Sample("tessel_decision_seconds_count", m.decisions);
  e.Family("tessel_last_decision_seconds", "gauge", "Time the latest scheduling decision took.");
  e.Sample("tessel_last_decision_seconds", m.last_decision_seconds);
  e.Family("tessel_restarts_total", "counter", "Job restarts (reconfigurations and recoveries).");
  e.Sample("tessel_restarts_total", m.restarts);
  e.Family("tessel_failures_total", "counter", "Job failures observed.");
  e.Sample("tessel_failures_total", m.failures);
  e.Family("tessel_slurm_reachable", "gauge", "1 when the daemon's last poll reached Slurm, else 0.");
  e.Sample("tessel_slurm_reachable", int64_t{m.slurm.slurm_reachable ? 1 : 0});
  e.Family("tessel_api_requests_total", "counter", "HTTP API requests answered, by status code.");
  for (const auto& [code, n] : requests_by_code)
    e.Sample("tessel_api_requests_total", "code", std::to_string(code), n);
  const ProcessFigures p = ReadProcessFigures();
  auto gauge = [&](const char* name, const char* help, int64_t v) {
    if (v < 0) return;
    e.Family(name, "gauge", help);
    e.Sample(name, v);
  };
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.", p.resident_bytes);
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", p.virtual_bytes);
  gauge("process_open_fds", "Number of open file descriptors.", p.open_fds);
  gauge("process_max_fds", "Maximum number of open file descriptors.", p.max_fds);
  gauge("process_threads", "Number of OS threads in the process.", p.threads);
  return e.Take();
}

}  // namespace tessel
