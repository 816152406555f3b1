#include "cluster/metrics_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace tessel {
namespace {

// A file may grow without bound; read at most this much per poll.
constexpr int64_t kMaxReadBytes = 16 << 20;

template <typename T>
bool GetNumber(const nlohmann::json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return false;
  double v = it->get<double>();
  if (!std::isfinite(v)) return false;
  if constexpr (std::is_integral_v<T>) {
    static_assert(std::is_signed_v<T>);
    // A step of 1e300 is malformed, not an overflowing conversion: T's
    // range is [min, -min) for a two's-complement T of any width.
    if (!(v >= static_cast<double>(std::numeric_limits<T>::min()) &&
          v < -static_cast<double>(std::numeric_limits<T>::min())))
      return false;
  }
  *out = static_cast<T>(v);
  return true;
}

}  // namespace

void ParseMetricsLine(const std::string& line, MetricsUpdate* u) {
  if (line.empty()) return;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    ++u->malformed;
    return;
  }
  if (auto ev = j.find("event"); ev != j.end()) {
    int64_t step = 0;
    if (!ev->is_string() || !GetNumber(j, "step", &step)) {
      ++u->malformed;
      return;
    }
    if (*ev == "checkpoint") {
      u->checkpoint_step = step;
    } else if (*ev == "done") {
      u->done = true;
    }
    return;
  }
  MetricsStep s;
  if (!GetNumber(j, "step", &s.step) || !GetNumber(j, "step_time_s", &s.step_time_s) || s.step_time_s < 0 ||
      s.step < 0) {
    ++u->malformed;
    return;
  }
  GetNumber(j, "samples", &s.samples);
  GetNumber(j, "time", &s.time_s);
  if (auto p = j.find("profile"); p != j.end() && p->is_boolean()) s.profile = p->get<bool>();
  GetNumber(j, "micro_batch", &s.micro_batch);
  GetNumber(j, "layers", &s.layers);
  u->steps.push_back(s);
}

Result<MetricsUpdate> MetricsTail::Read() {
  MetricsUpdate u;
  std::ifstream f(path_, std::ios::binary);
  if (!f) return u;  // not written yet
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (size < offset_) offset_ = 0;  // truncated or replaced: read it again
  if (size == offset_) return u;
  int64_t want = std::min(size - offset_, kMaxReadBytes);
  std::string buf(static_cast<size_t>(want), '\0');
  f.seekg(offset_);
  f.read(buf.data(), want);
  if (f.gcount() != want) return Unavailable(path_ + ": read failed: " + std::strerror(errno));
  size_t start = 0;
  while (true) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    ParseMetricsLine(buf.substr(start, nl - start), &u);
    start = nl + 1;
  }
  if (start == 0 && want == kMaxReadBytes) {
    // One line longer than a whole read: skip it rather than stall.
    ++u.malformed;
    start = buf.size();
  }
  offset_ += static_cast<int64_t>(start);
  return u;
}

}  // namespace tessel
