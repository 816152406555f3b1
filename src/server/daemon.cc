#include "server/daemon.h"

#include <malloc.h>

#include <functional>
#include <thread>
#include <tuple>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include <nlohmann/json.hpp>

#include "cluster/command_runner.h"
#include "cluster/launch.h"
#include "cluster/slurm_backend.h"
#include "cluster/slurm_client.h"
#include "cluster/store.h"
#include "cluster/submission_batcher.h"
#include "policy/corrected_throughput.h"
#include "policy/policy.h"
#include "sched/clock.h"
#include "sched/loop.h"
#include "server/auth.h"
#include "server/cluster_history.h"
#include "server/http_server.h"
#include "workload/job_spec.h"

namespace tessel {
namespace fs = std::filesystem;
namespace {

// Read-only store connections opened at start (Daemon::Impl::readers); more
// are opened when more API threads read at once.
constexpr int kReaders = 4;

// glibc's malloc hands freed memory back to the kernel as soon as a heap's
// top passes 128 KiB (and maps blocks over its dynamic threshold one by one):
// with a list response or a spec freed per request, each API request then
// paid an madvise or munmap, and each one a TLB shootdown on every core
// (perf: 20% of the daemon's time under `tessel loadtest`). The daemon keeps
// up to this much free memory for reuse instead; its footprint stays bounded
// by its peak (the soak in docs/daemon.md measures it).
// Fewer arenas than glibc's 8 per core: each API thread's requests otherwise
// settle in an arena of their own, each holding its share of free memory (a
// 3-minute soak: 121 MiB resident with 4 arenas; ~16 arenas were still
// growing past 150 MiB at one minute).
void KeepFreedMemoryForReuse() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: 32 MiB
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_ARENA_MAX, 4);
}

std::string ThisExecutable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tessel") : p.string();
}

// "dp=2 tp=1 pp=1 mb=4x2 full fp32" from a stored plan.
std::string PlanSummary(const std::string& plan_json) {
  if (plan_json.empty()) return "";
  nlohmann::json j = nlohmann::json::parse(plan_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? std::to_string(j[k].get<int>()) : "?"; };
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "?"; };
  return "dp=" + num("dp") + " tp=" + num("tp") + " pp=" + num("pp") + " mb=" + num("micro_batch") + "x" +
         num("num_micro_batches") + " " + str("recompute") + " " + str("precision");
}

// A top-level integer of the stored spec's JSON (workload/job_spec.h's
// DaemonJobSpecToJson, compact), found without parsing the whole spec (a
// list of 1,000 jobs reads 1,000 specs). `"key":` with its quotes unescaped
// is a key (inside a string a quote is \"); followed by a digit it is not
// one of env's keys (env's values are strings). 0 when absent.
int64_t SpecInteger(std::string_view spec_json, std::string_view key) {
  std::string pattern = "\"" + std::string(key) + "\":";
  for (size_t at = spec_json.find(pattern); at != std::string_view::npos;
       at = spec_json.find(pattern, at + 1)) {
    size_t v = at + pattern.size();
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(spec_json.data() + v, spec_json.data() + spec_json.size(), n);
    if (ec == std::errc()) return n;
  }
  return 0;
}

JobInfo ToInfo(const StoredJob& j) {
  JobInfo i;
  i.id = j.id;
  i.name = j.name;
  i.user = j.user;
  i.state = JobStateName(j.state);
  i.gpu_type = j.allocation.gpu_type;
  i.gpus = j.allocation.gpus;
  i.nodes = j.allocation.nodes;
  i.plan = PlanSummary(j.allocation.plan_json);
  i.restarts = j.restarts;
  i.submitted_us = j.submitted_us;
  i.started_us = j.started_us;
  i.finished_us = j.finished_us;
  i.reason = j.reason;
  if (int64_t deadline_s = SpecInteger(j.spec_json, "deadline_s"); deadline_s > 0)
    i.deadline_us = j.submitted_us + deadline_s * 1'000'000;
  i.iterations = SpecInteger(j.spec_json, "iterations");
  return i;
}

}  // namespace

struct Daemon::Impl {
  DaemonOptions opt;
  std::unique_ptr<Store> store;  // the writer: submissions, cancellations, the backend
  // Read-only connections the API reads through (WAL: they never wait on the
  // writer's transactions or fsyncs). A request borrows a free one for its
  // reads (a new one is opened when none is free, at most one per API
  // thread), so reads neither queue behind the scheduling loop nor behind
  // each other.
  std::mutex readers_mu;
  std::vector<std::unique_ptr<Store>> readers;  // free ones
  class ReaderLease {
   public:
    ReaderLease(Impl& m, std::unique_ptr<Store> s) : m_(m), s_(std::move(s)) {}
    ReaderLease(ReaderLease&& o) noexcept : m_(o.m_), s_(std::move(o.s_)) {}
    ~ReaderLease() {
      if (!s_) return;
      std::lock_guard lock(m_.readers_mu);
      m_.readers.push_back(std::move(s_));
    }
    Store* operator->() { return s_.get(); }
    Store& operator*() { return *s_; }

   private:
    Impl& m_;
    std::unique_ptr<Store> s_;
  };
  Result<ReaderLease> Reader() {
    {
      std::lock_guard lock(readers_mu);
      if (!readers.empty()) {
        std::unique_ptr<Store> s = std::move(readers.back());
        readers.pop_back();
        return ReaderLease(*this, std::move(s));
      }
    }
    auto s = Store::OpenReader(opt.state_dir + "/tessel.db");
    if (!s.ok()) return s.status();
    return ReaderLease(*this, std::move(*s));
  }
  SystemCommandRunner runner;
  std::unique_ptr<SlurmClient> slurm;
  SlurmInventory inventory;
  std::unique_ptr<EstimatorThroughput> estimator;
  std::unique_ptr<CorrectedThroughput> belief;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<SlurmBackend> backend;
  SystemClock clock;
  std::unique_ptr<SchedulerLoop> loop;
  std::unique_ptr<Autoscaler> autoscaler;
  std::unique_ptr<TokenStore> tokens;
  std::unique_ptr<HttpServer> http;
  std::thread loop_thread;
  std::atomic<bool> stopping{false};
  // Concurrent submissions share one transaction (one fsync) per commit.
  std::unique_ptr<SubmissionBatcher> submissions;

  // Loop figures for /metrics (written by the loop thread).
  std::atomic<int64_t> decisions{0};
  std::atomic<double> decision_s_sum{0};
  std::atomic<double> last_decision_s{0};
  // GPUs allocated per type, sampled at the loop's steps (its polls), for
  // GET /v1/cluster/history.
  GpuAllocationHistory gpu_history;
  void RecordGpuHistory() { gpu_history.Record(clock.Now(), backend->GpusAllocatedByType()); }

  void RunLoop() {
    int64_t seen = 0;
    RecordGpuHistory();
    loop->set_after_step([&](SimTime) {
      RecordGpuHistory();
      if (loop->decisions() != seen) {
        seen = loop->decisions();
        decisions = seen;
        last_decision_s = loop->last_decision_s();
        decision_s_sum = decision_s_sum + loop->last_decision_s();
      }
    });
    while (!stopping) {
      Result<bool> more = loop->Step();
      if (!more.ok()) {
        // A policy bug or a backend failure: say so and keep serving; the
        // jobs are in the store and Slurm, nothing is lost.
        std::fprintf(stderr, "tessel serve: scheduling step failed: %s\n", more.status().ToString().c_str());
        clock.WaitUntil(clock.Now() + Seconds(opt.poll_s));
      } else if (!*more) {
        break;
      }
    }
  }

  Result<StoredJob> Visible(Store& reader, const Caller& caller, int64_t id) {
    auto j = reader.Job(id);
    if (!j.ok()) return j.status();
    if (!caller.admin && j->user != caller.user) {
      return PermissionDenied("job " + std::to_string(id) + " belongs to another user");
    }
    return j;
  }
};

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Daemon::~Daemon() { Stop(); }

Result<std::unique_ptr<Daemon>> Daemon::Start(const DaemonOptions& options) {
  auto m = std::make_unique<Impl>();
  m->opt = options;
  if (m->opt.tessel_binary.empty()) m->opt.tessel_binary = ThisExecutable();
  if (m->opt.tokens_file.empty()) return InvalidArgument("--tokens: required (lines 'TOKEN USER [admin]')");
  // Refused before anything is stored.
  if (m->opt.autoscale.empty() && (m->opt.autoscale_window != 15 || m->opt.autoscale_by != "goodput"))
    return InvalidArgument("--autoscale-window and --autoscale-by apply with --autoscale only");
  TESSEL_RETURN_IF_ERROR(CheckSpeedupBasis(m->opt.autoscale_by));
  auto tokens = TokenStore::Load(m->opt.tokens_file);
  if (!tokens.ok()) return tokens.status();
  m->tokens = std::make_unique<TokenStore>(std::move(*tokens));
  std::error_code ec;
  fs::create_directories(m->opt.state_dir, ec);
  if (ec) return InvalidArgument("--state-dir " + m->opt.state_dir + ": " + ec.message());
  m->opt.state_dir = fs::absolute(m->opt.state_dir).lexically_normal().string();
  KeepFreedMemoryForReuse();
  auto store = Store::Open(m->opt.state_dir + "/tessel.db");
  if (!store.ok()) return store.status();
  m->store = std::move(*store);
  m->submissions = std::make_unique<SubmissionBatcher>(m->store.get());
  for (int i = 0; i < kReaders; ++i) {
    auto reader = Store::OpenReader(m->opt.state_dir + "/tessel.db");
    if (!reader.ok()) return reader.status();
    m->readers.push_back(std::move(*reader));
  }

  SlurmClientOptions so;
  if (const char* conf = std::getenv("SLURM_CONF")) so.slurm_conf = conf;
  m->slurm = std::make_unique<SlurmClient>(m->runner, so);
  auto nodes = m->slurm->ListNodes();
  if (!nodes.ok()) return Unavailable("cannot read Slurm's nodes: " + nodes.status().message());
  auto inv = DiscoverInventory(*nodes, m->opt.gpu_map);
  if (!inv.ok()) return inv.status();
  m->inventory = std::move(*inv);

  PolicyContext ctx;
  auto policy = PolicyRegistry::Builtin().Create(m->opt.policy, ctx);
  if (!policy.ok()) return policy.status();
  m->policy = std::move(*policy);
  PolicyTraits traits = m->policy->traits();
  m->estimator = std::make_unique<EstimatorThroughput>(m->inventory.cluster, traits.plan_mode);
  m->belief = std::make_unique<CorrectedThroughput>(*m->estimator);

  SlurmBackendOptions bo;
  bo.state_dir = m->opt.state_dir;
  bo.tessel_binary = m->opt.tessel_binary;
  bo.poll_interval = Seconds(m->opt.poll_s);
  bo.stop_timeout = Seconds(m->opt.stop_timeout_s);
  bo.checkpoint_interval_s = m->opt.checkpoint_interval_s;
  bo.max_failures = m->opt.max_failures;
  bo.rendezvous_addr = m->opt.rendezvous_addr;
  bo.python_dir = JobPythonDir();
  m->backend = std::make_unique<SlurmBackend>(*m->slurm, *m->store, m->inventory, *m->belief, traits, bo);
  TESSEL_RETURN_IF_ERROR(m->backend->Recover(m->clock.Now()));
  LoopConfig lc;
  lc.round = Seconds(m->opt.round_s);
  m->loop = std::make_unique<SchedulerLoop>(*m->policy, *m->backend, m->clock, lc);
  if (!m->opt.autoscale.empty()) {
    auto a = ParseAutoscale(m->opt.autoscale, static_cast<int>(m->inventory.cluster.nodes().size()),
                            m->opt.autoscale_window, m->opt.autoscale_by);
    if (!a.ok()) return a.status();
    TESSEL_RETURN_IF_ERROR(CheckAutoscalePolicy(*m->policy));
    m->autoscaler = std::make_unique<Autoscaler>(*a, m->inventory.cluster);
    m->loop->set_autoscaler(m->autoscaler.get());
  }

  std::unique_ptr<Daemon> d(new Daemon(std::move(m)));
  Impl& impl = *d->impl_;
  // One line per request on stderr; never the Authorization header.
  AccessLog log = [](const AccessLogEntry& e) {
    std::fprintf(stderr, "tessel serve: %s %s %d %.1fms user=%s from %s\n", e.method.c_str(), e.path.c_str(), e.code,
                 e.latency_ms, e.user.empty() ? "-" : e.user.c_str(), e.remote.c_str());
  };
  impl.http = std::make_unique<HttpServer>(*d, *impl.tokens, HttpServerOptions{}, log);
  Status s = impl.http->Start(impl.opt.listen);
  if (!s.ok()) return s;
  impl.loop_thread = std::thread([&impl] { impl.RunLoop(); });
  return d;
}

void Daemon::Stop() {
  Impl& m = *impl_;
  if (m.stopping.exchange(true)) return;
  if (m.http) m.http->Stop();
  if (m.loop) m.loop->Stop();
  if (m.loop_thread.joinable()) m.loop_thread.join();
}

std::string Daemon::address() const {
  const std::string& l = impl_->opt.listen;
  std::string host = l.substr(0, l.rfind(':'));
  return impl_->http ? host + ":" + std::to_string(impl_->http->port()) : l;
}

Result<int64_t> Daemon::Submit(const Caller& caller, const std::string& spec_yaml, const std::string& file,
                               const std::string& base_dir) {
  Impl& m = *impl_;
  auto spec = ParseJobSpec(spec_yaml, file, base_dir);
  if (!spec.ok()) return spec.status();
  // The policy needs the model under its name (shape models register).
  auto job = ToJobSpec(*spec);
  if (!job.ok()) return job.status();
  NewJob n;
  n.name = spec->name;
  n.user = caller.user;
  n.spec_yaml = spec_yaml;
  n.spec_json = DaemonJobSpecToJson(*spec);
  n.file = file;
  n.priority = spec->priority;
  n.submitted_us = m.clock.Now();
  n.checkpoint_dir = spec->checkpoint_dir;
  Result<int64_t> id = m.submissions->Add(n);
  if (!id.ok()) return id.status();
  m.backend->Submitted(*id);
  m.loop->Poke();
  return id;
}

Result<std::vector<JobInfo>> Daemon::Jobs(const Caller& caller, const JobsPage& page) {
  JobFilter f;
  if (!caller.admin) f.user = caller.user;
  f.include_terminal = page.all;
  f.after = page.after;
  f.limit = page.limit;
  auto reader = impl_->Reader();
  if (!reader.ok()) return reader.status();
  auto rows = (*reader)->Jobs(f);
  if (!rows.ok()) return rows.status();
  std::vector<JobInfo> out;
  for (const StoredJob& j : *rows) out.push_back(ToInfo(j));
  return out;
}

Result<JobDetail> Daemon::Job(const Caller& caller, int64_t id, int steps) {
  Impl& m = *impl_;
  auto lease = m.Reader();
  if (!lease.ok()) return lease.status();
  Store& reader = **lease;
  auto j = m.Visible(reader, caller, id);
  if (!j.ok()) return j.status();
  JobDetail d;
  d.job = ToInfo(*j);
  d.plan_json = j->allocation.plan_json;
  d.spec_yaml = j->spec_yaml;
  d.failures = j->failures;
  d.launches = j->launch_count;
  d.slurm_job_id = j->slurm_job_id;
  auto history = reader.History(id);
  if (!history.ok()) return history.status();
  for (const TransitionRecord& t : *history) {
    d.history.push_back({t.time_us, t.from ? JobStateName(*t.from) : "", JobStateName(t.to), t.reason});
  }
  auto measured = reader.Steps(id, steps);
  if (!measured.ok()) return measured.status();
  for (const StepSample& s : *measured) {
    d.steps.push_back({s.time_us, s.step, s.step_time_s, s.gpu_type, s.gpus, s.profile, s.loss});
  }
  auto corrections = reader.Corrections(id);
  if (!corrections.ok()) return corrections.status();
  for (const Correction& c : *corrections) d.corrections.push_back({c.gpu_type, c.factor, c.samples, c.scope});
  return d;
}

Status Daemon::Cancel(const Caller& caller, int64_t id) {
  Impl& m = *impl_;
  Result<StoredJob> j = [&]() -> Result<StoredJob> {
    auto lease = m.Reader();
    if (!lease.ok()) return lease.status();
    return m.Visible(**lease, caller, id);
  }();
  if (!j.ok()) return j.status();
  if (IsTerminal(j->state)) {
    return FailedPrecondition("job " + std::to_string(id) + " is already " + JobStateName(j->state));
  }
  TESSEL_RETURN_IF_ERROR(m.store->Transition(id, JobState::kCancelled, m.clock.Now(), "cancelled by " + caller.user));
  m.backend->CancelRequested(id);
  m.loop->Poke();
  return Status::Ok();
}

Result<std::vector<NodeInfo>> Daemon::Nodes(const Caller& caller) {
  std::vector<NodeInfo> out;
  for (const NodeStatus& n : impl_->backend->NodeStatuses()) {
    out.push_back({n.name, n.gpu_type, n.gres_type, n.gpus, n.gpus_used, n.state});
  }
  return out;
}

ServiceHealth Daemon::Health() {
  SlurmBackend::SlurmReach r = impl_->backend->SlurmReachability();
  return ServiceHealth{r.reachable, r.reachable ? 0 : r.since, r.error};
}

ServiceMetrics Daemon::Metrics() {
  Impl& m = *impl_;
  ServiceMetrics out;
  out.slurm = Health();
  auto lease = m.Reader();
  if (!lease.ok()) return out;  // /metrics still says whether Slurm answers
  Store& reader = **lease;
  auto counts = reader.CountByState();
  if (counts.ok()) {
    for (const auto& [state, n] : *counts) {
      out.jobs_by_state.push_back({JobStateName(state), n});
      if (state == JobState::kPending || state == JobState::kProfiling) out.queue_length += n;
    }
  }
  for (const auto& [type, n] : m.backend->GpusAllocatedByType()) out.gpus_allocated_by_type.push_back({type, n});
  out.decisions = m.decisions;
  out.decision_seconds_sum = m.decision_s_sum;
  out.last_decision_seconds = m.last_decision_s;
  // One aggregate, not every job read (a scrape stays cheap at 100,000 jobs).
  auto totals = reader.RestartAndFailureTotals();
  if (totals.ok()) std::tie(out.restarts, out.failures) = *totals;
  return out;
}

Result<ClusterHistoryInfo> Daemon::ClusterHistory(const Caller&) {
  Impl& m = *impl_;
  std::map<std::string, int64_t> capacity;
  for (const NodeStatus& n : m.backend->NodeStatuses()) capacity[n.gpu_type] += n.gpus;
  return m.gpu_history.Snapshot(m.clock.Now(), m.backend->GpusAllocatedByType(), capacity);
}

}  // namespace tessel
