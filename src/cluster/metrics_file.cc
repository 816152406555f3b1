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

// Brackets nested deeper than this are not a metrics line (they are flat
// objects); refused before parsing, so garbage cannot nest a parse deep.
constexpr int kMaxNesting = 8;

bool NestsTooDeep(const std::string& line) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNesting) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

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
  if (static_cast<int64_t>(line.size()) > kMetricsMaxLineBytes || NestsTooDeep(line)) {
    ++u->malformed;
    return;
  }
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
  if (double loss = 0; GetNumber(j, "loss", &loss)) s.loss = loss;
  u->steps.push_back(s);
}

Result<MetricsUpdate> MetricsTail::Read() {
  MetricsUpdate u;
  std::ifstream f(path_, std::ios::binary);
  if (!f) return u;  // not written yet
  f.seekg(0, std::ios::end);
  const int64_t size = f.tellg();
  if (size < offset_) {  // truncated or replaced: read it again
    offset_ = 0;
    skipping_ = false;
  }
  if (size == offset_) return u;
  const int64_t end = std::min(size, offset_ + kMetricsReadBudget);
  u.more = end < size;
  f.seekg(offset_);
  std::string chunk, line;  // line: the start of a line a chunk cut
  int64_t pos = offset_;     // file offset of chunk[0]
  int64_t consumed = offset_;
  while (pos < end) {
    const int64_t want = std::min(kMetricsChunkBytes, end - pos);
    chunk.resize(static_cast<size_t>(want));
    f.read(chunk.data(), want);
    if (f.gcount() != want) return Unavailable(path_ + ": read failed: " + std::strerror(errno));
    size_t start = 0;
    while (start < chunk.size()) {
      const size_t nl = chunk.find('\n', start);
      const size_t stop = nl == std::string::npos ? chunk.size() : nl;
      if (!skipping_) {
        if (static_cast<int64_t>(line.size() + (stop - start)) > kMetricsMaxLineBytes) {
          // Too long for a metrics line: counted, and dropped up to its newline.
          ++u.malformed;
          skipping_ = true;
          line.clear();
          line.shrink_to_fit();
        } else {
          line.append(chunk, start, stop - start);
        }
      }
      if (nl == std::string::npos) break;
      if (skipping_) {
        skipping_ = false;
      } else {
        ParseMetricsLine(line, &u);
        line.clear();
      }
      consumed = pos + static_cast<int64_t>(nl) + 1;
      start = nl + 1;
    }
    pos += want;
  }
  // Whole lines are consumed; an unfinished one is read again next time
  // (the job is writing it), unless it is being skipped (never parsed).
  offset_ = skipping_ ? pos : consumed;
  return u;
}

}  // namespace tessel
