// `tessel loadtest`: a benchmark of a running `tessel serve`'s API. Submits
// --submissions copies of --spec, then makes --queries status queries, then
// --lists list requests, each kind in its own phase, from --concurrency
// threads, each with its own keep-alive connection; prints throughput and
// latency percentiles per kind of request and errors by code. Request order
// is deterministic: thread t makes requests t, t+C, t+2C, ... of each phase;
// status query i is GET /v1/jobs/{id} ("get job") of submitted job
// i mod (jobs submitted), in submission order (no phase when none was
// submitted); list request i is GET /v1/jobs ("list jobs": the first page,
// the daemon's default size). --cancel
// cancels the submitted jobs afterwards (timed as a third kind), so a real
// cluster is not left with them. --duration S runs a soak instead
// (src/cli/loadtest_soak.cc).
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
#include "cli/loadtest.h"
#include "cli/loadtest_soak.h"
#include "core/json_text.h"

namespace tessel {

namespace {

using namespace loadtest;

// Runs `count` requests over the clients, one thread each: thread t makes
// requests t, t+C, ... by calling request(i, client, tally). Appends one
// KindResult per kind seen, in `kinds` order; returns the (submission index,
// job id) pairs the requests recorded, sorted.
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
  Collect(kinds, tallies, std::chrono::duration<double>(Clock::now() - start).count(), results);
  std::vector<std::pair<int64_t, int64_t>> ids;
  for (const Tally& t : tallies) ids.insert(ids.end(), t.ids.begin(), t.ids.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

CommandAction SetupLoadtest(CLI::App& app, CommandIo io) {
  struct Options {
    ClientFlags client;
    std::string spec;
    int64_t submissions = 1000;
    int64_t queries = 10000;
    int64_t lists = 2000;
    int concurrency = 8;
    bool cancel = false;
    bool json = false;
    double duration_s = 0;
    double sample_every_s = 10;
    std::string drain_node;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--spec", o->spec, "Job spec (YAML) to submit (required when --submissions > 0)");
  app.add_option("--submissions", o->submissions, "POST /v1/jobs requests (default 1000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--queries", o->queries,
                 "Status queries: GET /v1/jobs/{id} of the submitted jobs in turn (default 10000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lists", o->lists, "List requests: GET /v1/jobs, the first page (default 2000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--concurrency", o->concurrency, "Client threads, each with its own keep-alive connection (default 8)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--cancel", o->cancel, "Cancel the submitted jobs afterwards (timed as 'cancel')");
  app.add_flag("--json", o->json, "Print JSON");
  app.add_option("--duration", o->duration_s,
                 "Soak for this many seconds instead of the phases: each thread cycles through 2 submits, "
                 "10 statuses, 4 lists, 2 cancels, /metrics and /healthz")
      ->check(CLI::PositiveNumber);
  app.add_option("--sample-every", o->sample_every_s,
                 "Soak: read the daemon's memory, descriptors and threads from /metrics this often (s, default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--drain-node", o->drain_node,
                 "Soak: drain this Slurm node a third of the way through and resume it at two thirds "
                 "(scontrol update; needs Slurm's commands and SLURM_CONF here)");
  AddClientFlags(app, o->client);
  app.footer(
      "\nBenchmarks a running `tessel serve`: submissions, then status queries, then lists, each in its\n"
      "own phase; thread t makes requests t, t+C, t+2C, ... of each phase. Prints req/s and p50/p99/max latency (ms) per kind and errors\n"
      "by code. Every submission creates a job: on a real cluster use a tiny spec and --cancel.\n"
      "With --duration: a soak that mixes every kind of request, reports the daemon's memory and open\n"
      "descriptors at start, end and peak, and cancels the jobs it leaves. 409 on a cancel (the job had\n"
      "ended) is expected, not an error. Exit code 1 when any other request failed.\n"
      "Figures and how to run it on a local Slurm: docs/daemon.md (Load test and soak).");
  return [io, o] {
    std::string body;
    if (o->submissions > 0 || o->duration_s > 0) {
      if (o->spec.empty()) {
        io.err << "error: --spec FILE is required when --submissions > 0 or with --duration\n";
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
    if (o->duration_s > 0) {
      Result<ApiClient> sampler = ConnectClient(o->client, ApiClientOptions{.keep_alive = true});
      if (!sampler.ok()) return ReportError(sampler.status(), io.err);
      SoakOptions so{o->duration_s, o->sample_every_s, o->drain_node, o->json};
      return RunSoak(so, clients, *sampler, body, io.out, io.err);
    }
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

    std::vector<std::string> notes = {"req/s: a kind's requests over its phase's wall time"};
    if (ids.empty() && o->queries > 0) {
      notes.push_back("no job was submitted: no status queries");
    } else {
      RunPhase(
          o->queries, {"get job"}, clients,
          [&](int64_t i, ApiClient& c, Tally& tally) {
            Timed(c, tally.kinds["get job"], "GET",
                  "/v1/jobs/" + std::to_string(ids[static_cast<size_t>(i) % ids.size()]), "");
          },
          &results);
    }
    RunPhase(
        o->lists, {"list jobs"}, clients,
        [&](int64_t, ApiClient& c, Tally& tally) { Timed(c, tally.kinds["list jobs"], "GET", "/v1/jobs", ""); },
        &results);

    if (o->cancel) {
      RunPhase(
          static_cast<int64_t>(ids.size()), {"cancel"}, clients,
          [&](int64_t i, ApiClient& c, Tally& tally) {
            // 409: the job had already ended (a tiny job completes quickly).
            Timed(c, tally.kinds["cancel"], "POST", "/v1/jobs/" + std::to_string(ids[i]) + "/cancel", "", {409});
          },
          &results);
    }

    int64_t total_errors = 0;
    for (const KindResult& r : results) total_errors += r.errors;
    Json extra = Json::object();
    extra["notes"] = notes;
    Report(results, clients.front().url(), threads, o->json, extra, io.out);
    return total_errors > 0 ? 1 : 0;
  };
}

}  // namespace tessel
