// `tessel loadtest`: a benchmark of a running `tessel serve`'s API. Submits
// --submissions copies of --spec, then makes --queries status queries, from
// --concurrency threads, each with its own keep-alive connection; prints
// throughput and latency percentiles per kind of request and errors by
// code. Request order is deterministic: thread t makes requests t, t+C,
// t+2C, ... of each phase; query i is GET /v1/jobs ("list jobs") when
// i % 10 == 9, else GET /v1/jobs/{id} ("get job") of submitted job
// i mod (jobs submitted), in submission order. --cancel
// cancels the submitted jobs afterwards (timed as a third kind), so a real
// cluster is not left with them.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/client_flags.h"
#include "cli/commands.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "core/table.h"

namespace tessel {

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// One kind of request as one thread saw it.
struct KindTally {
  std::vector<double> latency_ms;         // of every request, answered or not
  std::map<std::string, int64_t> errors;  // "HTTP 503", "no reply"
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
};

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// Runs `count` requests over the clients, one thread each: thread t makes
// requests t, t+C, ... by calling request(i, client, tally). Appends one
// KindResult per kind seen, in `kinds` order.
template <typename Request>
std::vector<std::pair<int64_t, int64_t>> RunPhase(int64_t count, const std::vector<std::string>& kinds,
                                                  std::vector<ApiClient>& clients, Request request,
                                                  std::vector<KindResult>* results) {
  const int64_t threads = static_cast<int64_t>(clients.size());
  std::vector<Tally> tallies(clients.size());
  Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int64_t i = t; i < count; i += threads) request(i, clients[t], tallies[t]);
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
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
    }
    r.requests = static_cast<int64_t>(r.latency_ms.size());
    std::sort(r.latency_ms.begin(), r.latency_ms.end());
    results->push_back(std::move(r));
  }
  std::vector<std::pair<int64_t, int64_t>> ids;
  for (const Tally& t : tallies) ids.insert(ids.end(), t.ids.begin(), t.ids.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Sends one request of `kind`, timing it; counts a non-2xx reply or no
// reply as an error. Returns the reply on success.
std::optional<HttpReply> Timed(ApiClient& client, KindTally& tally, const std::string& method,
                               const std::string& path, const std::string& body) {
  Clock::time_point t0 = Clock::now();
  Result<HttpReply> reply = client.Send(method, path, body);
  tally.latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  if (!reply.ok()) {
    ++tally.errors["no reply"];
    return std::nullopt;
  }
  if (reply->code < 200 || reply->code >= 300) {
    ++tally.errors["HTTP " + std::to_string(reply->code)];
    return std::nullopt;
  }
  return *reply;
}

}  // namespace

CommandAction SetupLoadtest(CLI::App& app, CommandIo io) {
  struct Options {
    ClientFlags client;
    std::string spec;
    int64_t submissions = 1000;
    int64_t queries = 10000;
    int concurrency = 8;
    bool cancel = false;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--spec", o->spec, "Job spec (YAML) to submit (required when --submissions > 0)");
  app.add_option("--submissions", o->submissions, "POST /v1/jobs requests (default 1000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--queries", o->queries, "Status queries: GET /v1/jobs/{id}, every 10th GET /v1/jobs (default 10000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--concurrency", o->concurrency, "Client threads, each with its own keep-alive connection (default 8)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--cancel", o->cancel, "Cancel the submitted jobs afterwards (timed as 'cancel')");
  app.add_flag("--json", o->json, "Print JSON");
  AddClientFlags(app, o->client);
  app.footer(
      "\nBenchmarks a running `tessel serve`: submissions first, then queries; thread t makes requests\n"
      "t, t+C, t+2C, ... of each phase. Prints req/s and p50/p99/max latency (ms) per kind and errors\n"
      "by code. Every submission creates a job: on a real cluster use a tiny spec and --cancel.\n"
      "Exit code 1 when any request failed.");
  return [io, o] {
    std::string body;
    if (o->submissions > 0) {
      if (o->spec.empty()) {
        io.err << "error: --spec FILE is required when --submissions > 0\n";
        return 2;
      }
      std::ifstream in(o->spec, std::ios::binary);
      if (!in) {
        io.err << "error: cannot read '" << o->spec << "': " << std::strerror(errno) << "\n";
        return 2;
      }
      std::stringstream text;
      text << in.rdbuf();
      std::error_code ec;
      std::filesystem::path abs = std::filesystem::absolute(o->spec, ec).lexically_normal();
      body = JsonText(Json{{"spec_yaml", text.str()}, {"file", o->spec}, {"base_dir", abs.parent_path().string()}});
    }
    std::vector<ApiClient> clients;
    for (int t = 0; t < o->concurrency; ++t) {
      Result<ApiClient> c = ConnectClient(o->client, ApiClientOptions{.keep_alive = true});
      if (!c.ok()) return ReportError(c.status(), io.err);
      clients.push_back(std::move(*c));
    }
    const size_t threads = clients.size();
    std::vector<KindResult> results;

    std::vector<std::pair<int64_t, int64_t>> indexed = RunPhase(
        o->submissions, {"submit"}, clients,
        [&](int64_t i, ApiClient& c, Tally& tally) {
          std::optional<HttpReply> r = Timed(c, tally.kinds["submit"], "POST", "/v1/jobs", body);
          if (!r) return;
          Json j = Json::parse(r->body, nullptr, false);
          if (!j.is_discarded() && j.is_object() && j.contains("id") && j["id"].is_number_integer())
            tally.ids.emplace_back(i, j["id"].get<int64_t>());
        },
        &results);
    std::vector<int64_t> ids;  // in submission order
    for (const auto& [i, id] : indexed) ids.push_back(id);

    RunPhase(
        o->queries, {"get job", "list jobs"}, clients,
        [&](int64_t i, ApiClient& c, Tally& tally) {
          if (ids.empty() || i % 10 == 9) {
            Timed(c, tally.kinds["list jobs"], "GET", "/v1/jobs", "");
          } else {
            Timed(c, tally.kinds["get job"], "GET",
                  "/v1/jobs/" + std::to_string(ids[static_cast<size_t>(i) % ids.size()]), "");
          }
        },
        &results);

    if (o->cancel) {
      RunPhase(
          static_cast<int64_t>(ids.size()), {"cancel"}, clients,
          [&](int64_t i, ApiClient& c, Tally& tally) {
            Timed(c, tally.kinds["cancel"], "POST", "/v1/jobs/" + std::to_string(ids[i]) + "/cancel", "");
          },
          &results);
    }

    int64_t total_errors = 0;
    for (const KindResult& r : results) total_errors += r.errors;
    auto rate = [](const KindResult& r) { return r.seconds > 0 ? static_cast<double>(r.requests) / r.seconds : 0.0; };
    auto max = [](const KindResult& r) { return r.latency_ms.empty() ? 0.0 : r.latency_ms.back(); };
    if (o->json) {
      Json out = Json::object();
      out["server"] = clients.front().url();
      out["concurrency"] = threads;
      Json kinds = Json::array();
      for (const KindResult& r : results) {
        Json e = Json::object();
        for (const auto& [k, n] : r.errors_by_code) e[k] = n;
        kinds.push_back({{"kind", r.kind}, {"requests", r.requests}, {"errors", r.errors},
                         {"phase_seconds", r.seconds}, {"requests_per_s", rate(r)},
                         {"p50_ms", Percentile(r.latency_ms, 50)}, {"p99_ms", Percentile(r.latency_ms, 99)},
                         {"max_ms", max(r)}, {"errors_by_code", e}});
      }
      out["kinds"] = kinds;
      io.out << JsonText(out, 2) << "\n";
    } else {
      io.out << "server " << clients.front().url() << ", " << threads << " threads (keep-alive)\n";
      TextTable t({"kind", "requests", "errors", "phase s", "req/s", "p50 ms", "p99 ms", "max ms"});
      for (const KindResult& r : results)
        t.AddRow({r.kind, std::to_string(r.requests), std::to_string(r.errors), Fixed(r.seconds, 3),
                  Fixed(rate(r), 1), Fixed(Percentile(r.latency_ms, 50), 3), Fixed(Percentile(r.latency_ms, 99), 3),
                  Fixed(max(r), 3)});
      io.out << t.Render();
      io.out << "req/s: a kind's requests over its phase's wall time (get job and list jobs share one phase)\n";
      for (const KindResult& r : results) {
        std::vector<std::string> parts;
        for (const auto& [k, n] : r.errors_by_code) parts.push_back(k + " x" + std::to_string(n));
        if (!parts.empty()) io.out << "errors (" << r.kind << "): " << Join(parts, ", ") << "\n";
      }
    }
    return total_errors > 0 ? 1 : 0;
  };
}

}  // namespace tessel
