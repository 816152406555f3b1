#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessel {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

Result<double> ParseDouble(std::string_view s, std::string_view what) {
  std::string t = Trim(s);
  if (t.empty()) return InvalidArgument(std::string(what) + ": expected a number, got an empty value");
  double v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(v)) {
    return InvalidArgument(std::string(what) + ": expected a number, got '" + t + "'");
  }
  return v;
}

Result<long long> ParseInt(std::string_view s, std::string_view what) {
  std::string t = Trim(s);
  if (t.empty()) return InvalidArgument(std::string(what) + ": expected an integer, got an empty value");
  long long v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size()) {
    return InvalidArgument(std::string(what) + ": expected an integer, got '" + t + "'");
  }
  return v;
}

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]))
                    ? 0
                    : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string UnknownNameMessage(std::string_view kind, std::string_view name,
                               const std::vector<std::string>& known) {
  std::string msg = "unknown " + std::string(kind) + " '" + std::string(name) + "'";
  std::vector<std::string> close;
  for (const auto& k : known) {
    int d = EditDistance(name, k);
    if (d <= std::max<int>(2, static_cast<int>(name.size()) / 4)) close.push_back(k);
  }
  if (!close.empty()) msg += " (did you mean " + Join(close, ", ") + "?)";
  msg += "; known: " + Join(known, ", ");
  return msg;
}

std::string FormatDouble(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
  return buf;
}

}  // namespace tessel
