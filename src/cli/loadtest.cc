#include "cli/loadtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"

namespace tessel {
namespace loadtest {

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::optional<HttpReply> Timed(ApiClient& client, KindTally& tally, const std::string& method,
                               const std::string& path, const std::string& body, const std::set<int>& expected) {
  Clock::time_point t0 = Clock::now();
  Result<HttpReply> reply = client.Send(method, path, body);
  tally.latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  if (!reply.ok()) {
    ++tally.errors["no reply"];
    return std::nullopt;
  }
  if (reply->code < 200 || reply->code >= 300) {
    const std::string code = "HTTP " + std::to_string(reply->code);
    if (expected.count(reply->code)) {
      ++tally.expected[code];
    } else {
      ++tally.errors[code];
    }
    return std::nullopt;
  }
  return *reply;
}

void Collect(const std::vector<std::string>& kinds, std::vector<Tally>& tallies, double seconds,
             std::vector<KindResult>* results) {
  for (const std::string& kind : kinds) {
    KindResult r;
    r.kind = kind;
    r.seconds = seconds;
    for (Tally& t : tallies) {
      KindTally& k = t.kinds[kind];
      r.latency_ms.insert(r.latency_ms.end(), k.latency_ms.begin(), k.latency_ms.end());
      for (const auto& [code, n] : k.errors) {
        r.errors += n;
        r.errors_by_code[code] += n;
      }
      for (const auto& [code, n] : k.expected) r.expected_by_code[code] += n;
    }
    r.requests = static_cast<int64_t>(r.latency_ms.size());
    std::sort(r.latency_ms.begin(), r.latency_ms.end());
    results->push_back(std::move(r));
  }
}

void Report(const std::vector<KindResult>& results, const std::string& server, size_t threads, bool json,
            const Json& extra, std::ostream& out) {
  auto rate = [](const KindResult& r) { return r.seconds > 0 ? static_cast<double>(r.requests) / r.seconds : 0.0; };
  auto max = [](const KindResult& r) { return r.latency_ms.empty() ? 0.0 : r.latency_ms.back(); };
  if (json) {
    Json doc = Json::object();
    doc["server"] = server;
    doc["concurrency"] = threads;
    Json kinds = Json::array();
    for (const KindResult& r : results) {
      Json e = Json::object();
      for (const auto& [k, n] : r.errors_by_code) e[k] = n;
      Json x = Json::object();
      for (const auto& [k, n] : r.expected_by_code) x[k] = n;
      kinds.push_back({{"kind", r.kind}, {"requests", r.requests}, {"errors", r.errors},
                       {"phase_seconds", r.seconds}, {"requests_per_s", rate(r)},
                       {"p50_ms", Percentile(r.latency_ms, 50)}, {"p99_ms", Percentile(r.latency_ms, 99)},
                       {"max_ms", max(r)}, {"errors_by_code", e}, {"expected_by_code", x}});
    }
    doc["kinds"] = kinds;
    for (const auto& [k, v] : extra.items())
      if (k != "notes") doc[k] = v;
    out << JsonText(doc, 2) << "\n";
    return;
  }
  out << "server " << server << ", " << threads << " threads (keep-alive)\n";
  TextTable t({"kind", "requests", "errors", "phase s", "req/s", "p50 ms", "p99 ms", "max ms"});
  for (const KindResult& r : results)
    t.AddRow({r.kind, std::to_string(r.requests), std::to_string(r.errors), Fixed(r.seconds, 3), Fixed(rate(r), 1),
              Fixed(Percentile(r.latency_ms, 50), 3), Fixed(Percentile(r.latency_ms, 99), 3), Fixed(max(r), 3)});
  out << t.Render();
  for (const KindResult& r : results) {
    std::vector<std::string> parts;
    for (const auto& [k, n] : r.errors_by_code) parts.push_back(k + " x" + std::to_string(n));
    if (!parts.empty()) out << "errors (" << r.kind << "): " << Join(parts, ", ") << "\n";
    parts.clear();
    for (const auto& [k, n] : r.expected_by_code) parts.push_back(k + " x" + std::to_string(n));
    if (!parts.empty()) out << "expected answers (" << r.kind << "): " << Join(parts, ", ") << "\n";
  }
  if (extra.contains("notes"))
    for (const auto& n : extra["notes"]) out << n.get<std::string>() << "\n";
}

}  // namespace loadtest
}  // namespace tessel
