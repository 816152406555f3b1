// `tessel loadtest --duration S`: a soak of a running `tessel serve`. For S
// seconds, --concurrency threads each make a fixed cycle of 20 requests:
// 2 submissions, 10 job statuses, 4 lists (one page), 2 cancels (of this
// thread's oldest job not yet cancelled; 409 when it already ended is
// expected), 1 /metrics and 1 /healthz. A sampler reads the daemon's
// process figures from /metrics (resident memory, open descriptors,
// threads) at the start, every --sample-every seconds and at the end, and
// with --drain-node drains that Slurm node a third of the way through and
// resumes it at two thirds (`scontrol update`, run without a shell). The
// report is the usual table plus the figures at start, end and their peak.
#include "cli/loadtest_soak.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>

#include "cluster/command_runner.h"

namespace tessel {
namespace loadtest {
namespace {

// One reading of the daemon's process figures (-1: not in /metrics).
struct Figures {
  double at_s = 0;
  int64_t resident_bytes = -1;
  int64_t open_fds = -1;
  int64_t threads = -1;
};

int64_t Sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) {
      try {
        return static_cast<int64_t>(std::stod(line.substr(name.size() + 1)));
      } catch (...) {
        return -1;
      }
    }
  }
  return -1;
}

Figures Read(ApiClient& client, double at_s) {
  Figures f;
  f.at_s = at_s;
  Result<HttpReply> r = client.Send("GET", "/metrics");
  if (!r.ok() || r->code != 200) return f;
  f.resident_bytes = Sample(r->body, "process_resident_memory_bytes");
  f.open_fds = Sample(r->body, "process_open_fds");
  f.threads = Sample(r->body, "process_threads");
  return f;
}

Json ToJson(const Figures& f) {
  return Json{{"at_s", f.at_s},
              {"resident_bytes", f.resident_bytes},
              {"open_fds", f.open_fds},
              {"threads", f.threads}};
}

std::string Mib(int64_t bytes) { return bytes < 0 ? "?" : Fixed(static_cast<double>(bytes) / (1 << 20), 1) + " MiB"; }
std::string Count(int64_t n) { return n < 0 ? "?" : std::to_string(n); }

}  // namespace

int RunSoak(const SoakOptions& opt, std::vector<ApiClient>& clients, ApiClient& sampler, const std::string& submit_body,
            std::ostream& out, std::ostream& err) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::milliseconds(static_cast<int64_t>(opt.duration_s * 1000));
  auto now_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  // Jobs submitted so far (any thread's), for status queries.
  std::mutex ids_mu;
  std::vector<int64_t> all_ids;

  std::vector<Tally> tallies(clients.size());
  std::vector<std::deque<int64_t>> own(clients.size());  // each thread's jobs not yet cancelled
  std::vector<std::thread> workers;
  for (size_t t = 0; t < clients.size(); ++t) {
    workers.emplace_back([&, t] {
      ApiClient& c = clients[t];
      Tally& tally = tallies[t];
      for (int64_t i = 0; Clock::now() < end; ++i) {
        const int64_t slot = i % 20;
        if (slot < 2) {
          std::optional<HttpReply> r = Timed(c, tally.kinds["submit"], "POST", "/v1/jobs", submit_body);
          if (!r) continue;
          Json j = Json::parse(r->body, nullptr, false);
          if (j.is_discarded() || !j.is_object() || !j.contains("id") || !j["id"].is_number_integer()) continue;
          const int64_t id = j["id"].get<int64_t>();
          own[t].push_back(id);
          std::lock_guard lock(ids_mu);
          all_ids.push_back(id);
        } else if (slot < 12) {
          int64_t id = 0;
          {
            std::lock_guard lock(ids_mu);
            if (!all_ids.empty())
              id = all_ids[static_cast<size_t>(i * 7919 + static_cast<int64_t>(t) * 104729) % all_ids.size()];
          }
          if (id == 0) {
            Timed(c, tally.kinds["list jobs"], "GET", "/v1/jobs", "");
          } else {
            Timed(c, tally.kinds["get job"], "GET", "/v1/jobs/" + std::to_string(id), "");
          }
        } else if (slot < 16) {
          Timed(c, tally.kinds["list jobs"], "GET", "/v1/jobs", "");
        } else if (slot < 18) {
          if (own[t].empty()) continue;
          const int64_t id = own[t].front();
          own[t].pop_front();
          Timed(c, tally.kinds["cancel"], "POST", "/v1/jobs/" + std::to_string(id) + "/cancel", "", {409});
        } else if (slot == 18) {
          Timed(c, tally.kinds["metrics"], "GET", "/metrics", "");
        } else {
          Timed(c, tally.kinds["healthz"], "GET", "/healthz", "");
        }
      }
    });
  }

  // The sampler: figures now and then, and the node drained and resumed.
  std::vector<Figures> figures{Read(sampler, 0)};
  std::vector<std::string> notes;
  SystemCommandRunner runner;
  auto scontrol = [&](const std::string& state) {
    CommandRequest req;
    req.argv = {"scontrol", "update", "NodeName=" + opt.drain_node, "State=" + state};
    if (state == "DRAIN") req.argv.push_back("Reason=tessel-loadtest-soak");
    Result<CommandResult> r = runner.Run(req);
    const std::string what = "at " + Fixed(now_s(), 1) + " s: scontrol update NodeName=" + opt.drain_node +
                             " State=" + state;
    if (!r.ok()) {
      notes.push_back(what + " could not run: " + r.status().message());
    } else if (!r->Succeeded()) {
      notes.push_back(what + " failed: " + DescribeCommandFailure(req, *r));
    } else {
      notes.push_back(what);
    }
  };
  bool drained = false, resumed = false;
  double next_sample = opt.sample_every_s;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double t = now_s();
    if (!opt.drain_node.empty() && !drained && t >= opt.duration_s / 3) {
      scontrol("DRAIN");
      drained = true;
    }
    if (!opt.drain_node.empty() && drained && !resumed && t >= 2 * opt.duration_s / 3) {
      scontrol("RESUME");
      resumed = true;
    }
    if (opt.sample_every_s > 0 && t >= next_sample && Clock::now() < end) {
      figures.push_back(Read(sampler, t));
      next_sample += opt.sample_every_s;
    }
  }
  for (auto& w : workers) w.join();
  const double seconds = now_s();
  if (drained && !resumed) scontrol("RESUME");
  figures.push_back(Read(sampler, seconds));

  // Whatever this run submitted and did not cancel is cancelled now (409s:
  // jobs that ended), so the cluster is not left with them.
  std::vector<KindResult> results;
  Collect({"submit", "get job", "list jobs", "cancel", "metrics", "healthz"}, tallies, seconds, &results);
  int64_t left = 0, left_failed = 0;
  for (auto& q : own) {
    for (int64_t id : q) {
      Result<HttpReply> r = sampler.Send("POST", "/v1/jobs/" + std::to_string(id) + "/cancel");
      ++left;
      if (!r.ok() || (r->code != 200 && r->code != 409)) ++left_failed;
    }
  }

  int64_t errors = 0;
  for (const KindResult& r : results) errors += r.errors;
  const Figures& first = figures.front();
  const Figures& last = figures.back();
  Figures peak;
  for (const Figures& f : figures) {
    peak.resident_bytes = std::max(peak.resident_bytes, f.resident_bytes);
    peak.open_fds = std::max(peak.open_fds, f.open_fds);
    peak.threads = std::max(peak.threads, f.threads);
  }
  Json extra = Json::object();
  extra["duration_s"] = seconds;
  Json samples = Json::array();
  for (const Figures& f : figures) samples.push_back(ToJson(f));
  extra["daemon"] = {{"start", ToJson(first)}, {"end", ToJson(last)}, {"peak", ToJson(peak)}, {"samples", samples}};
  extra["cancelled_after"] = left;
  extra["events"] = notes;
  Json printed = Json::array();
  printed.push_back("soak of " + Fixed(seconds, 1) + " s; req/s: a kind's requests over the whole soak");
  printed.push_back("daemon resident memory: " + Mib(first.resident_bytes) + " at start, " + Mib(last.resident_bytes) +
                    " at end, peak " + Mib(peak.resident_bytes) + " (" + std::to_string(figures.size()) +
                    " samples)");
  printed.push_back("daemon open descriptors: " + Count(first.open_fds) + " at start, " + Count(last.open_fds) +
                    " at end, peak " + Count(peak.open_fds) + "; threads " + Count(first.threads) + " -> " +
                    Count(last.threads));
  for (const std::string& n : notes) printed.push_back(n);
  printed.push_back("cancelled " + std::to_string(left) + " jobs left by the soak" +
                    (left_failed ? " (" + std::to_string(left_failed) + " cancels failed)" : ""));
  extra["notes"] = printed;
  Report(results, sampler.url(), clients.size(), opt.json, extra, out);
  if (first.resident_bytes < 0) err << "warning: the daemon's /metrics has no process figures\n";
  return errors > 0 || left_failed > 0 ? 1 : 0;
}

}  // namespace loadtest
}  // namespace tessel
