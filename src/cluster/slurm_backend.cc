#include "cluster/slurm_backend.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "cluster/framework_args.h"
#include "cluster/launch.h"
#include "cluster/metrics_file.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "hardware/gpu.h"
#include "policy/placement.h"
#include "workload/job_spec.h"

namespace tessel {
namespace fs = std::filesystem;
namespace {

constexpr const char* kNamePrefix = "tessel-";
// Step times a correction averages (the latest ones).
constexpr int kCorrectionWindow = 20;
// Plans of the base plan set a running plan's estimate is looked up in
// (more than a policy hands over, so the running plan is likely there).
constexpr int kCorrectionPlans = 16;
// Re-planning on the same GPUs: a new plan replaces a running one that is
// still in the decision's plan set only when its estimated iteration is at
// least this much shorter. A relaunch costs a checkpoint, a stop and a
// start-up (tens of seconds to minutes) and a 5% gain repays that within
// tens of minutes of training; smaller gains are within the estimator's
// error between neighbouring plans and would relaunch a job back and forth
// as corrections move.
constexpr double kReplanGain = 0.05;

// Correction scopes in the store (Correction::scope) and the belief's
// level each restores (policy/corrected_throughput.h): '' the type's,
// 'stages=<p>' a p-stage pipeline's profile, 'plan=<ParallelPlan::ToString()>'
// that plan measured.
constexpr std::string_view kStageScope = "stages=";
constexpr std::string_view kPlanScope = "plan=";
std::string StageScope(int stages) { return std::string(kStageScope) + std::to_string(stages); }
std::string PlanScope(const ParallelPlan& plan) { return std::string(kPlanScope) + plan.ToString(); }

std::string SlurmName(int64_t id) { return kNamePrefix + std::to_string(id); }

// The tessel id a Slurm job name carries, or -1.
int64_t IdFromName(const std::string& name) {
  if (name.rfind(kNamePrefix, 0) != 0) return -1;
  std::string rest = name.substr(std::string(kNamePrefix).size());
  if (rest.empty() || rest.size() > 18 || !std::all_of(rest.begin(), rest.end(), ::isdigit)) return -1;
  return std::stoll(rest);
}



Status WriteFileAtomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Unavailable("cannot write " + tmp);
    f << text;
    if (!f.flush()) return Unavailable("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Unavailable("cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

std::string AllocJson(const Allocation& a, const SlurmInventory& inv) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const Placement& p : a.parts) j.push_back({{"node", inv.names[p.node]}, {"gpus", p.gpus}});
  return JsonText(j);
}

Result<Allocation> AllocFromJson(const std::string& text, const std::string& gpu_type, const SlurmInventory& inv) {
  Allocation a;
  a.type = inv.cluster.FindType(gpu_type);
  if (a.type < 0) return FailedPrecondition("GPU type " + gpu_type + " is no longer in the cluster");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return FailedPrecondition("stored allocation is not a list: " + text);
  for (const auto& part : j) {
    if (!part.is_object() || !part.contains("node") || !part.contains("gpus")) {
      return FailedPrecondition("stored allocation part is malformed: " + JsonText(part));
    }
    std::string name = part["node"].get<std::string>();
    auto it = std::find(inv.names.begin(), inv.names.end(), name);
    if (it == inv.names.end()) return FailedPrecondition("node " + name + " is no longer in the cluster");
    a.parts.push_back({static_cast<int>(it - inv.names.begin()), part["gpus"].get<int>()});
  }
  std::sort(a.parts.begin(), a.parts.end(), [](const Placement& x, const Placement& y) { return x.node < y.node; });
  return a;
}

// The plan a stored allocation's plan_json (launch.h PlanJson) names. It
// does not carry the expert-parallel degree: ep comes back as 1.
Result<ParallelPlan> PlanFromStoredJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return FailedPrecondition("stored plan is not an object: " + text);
  ParallelPlan p;
  try {
    p.dp = j.at("dp").get<int>();
    p.tp = j.at("tp").get<int>();
    p.pp = j.at("pp").get<int>();
    p.micro_batch = j.at("micro_batch").get<int>();
    p.num_micro_batches = j.at("num_micro_batches").get<int>();
    p.virtual_stages = j.value("virtual_stages", 1);
    p.zero = j.at("zero_stage").get<int>();
    auto rc = ParseRecompute(j.at("recompute").get<std::string>());
    auto prec = ParsePrecision(j.at("precision").get<std::string>());
    if (!rc.ok()) return rc.status();
    if (!prec.ok()) return prec.status();
    p.recompute = *rc;
    p.precision = *prec;
  } catch (const nlohmann::json::exception& e) {
    return FailedPrecondition(std::string("stored plan is malformed: ") + e.what());
  }
  return p;
}

}  // namespace

Result<SlurmInventory> DiscoverInventory(const std::vector<SlurmNode>& nodes,
                                         const std::map<std::string, std::string>& gpu_map) {
  // (catalog GPU, GPUs per node) -> nodes, in name order.
  std::map<std::pair<std::string, int>, std::vector<const SlurmNode*>> pools;
  std::map<std::string, std::string> gres_of;
  for (const SlurmNode& n : nodes) {
    for (const SlurmGpus& g : n.gpus) {
      const std::string& gres = g.type;
      int count = g.total;
      if (count <= 0 || gres.empty()) continue;
      auto m = gpu_map.find(gres);
      std::string name = m != gpu_map.end() ? m->second : gres;
      auto gpu = FindGpu(name);
      if (!gpu.ok()) {
        return InvalidArgument("node " + n.name + ": GPU type '" + gres +
                               "' is not a catalog GPU; map it with --gpu-map " + gres + "=<catalog name> (" +
                               gpu.status().message() + ")");
      }
      pools[{(*gpu)->name, count}].push_back(&n);
      gres_of[n.name] = gres;
      break;  // one GPU type per node
    }
  }
  if (pools.empty()) return InvalidArgument("no Slurm node has GPUs (gres gpu:<type>:<count>)");
  SlurmInventory inv;
  ClusterSpec spec;
  spec.name = "slurm";
  spec.description = "discovered from Slurm";
  for (auto& [key, members] : pools) {
    std::sort(members.begin(), members.end(), [](const SlurmNode* a, const SlurmNode* b) { return a->name < b->name; });
    NodePool pool;
    pool.name = key.first + "x" + std::to_string(key.second);
    pool.gpu = FindGpu(key.first).value();
    pool.nodes = static_cast<int>(members.size());
    pool.gpus_per_node = key.second;
    spec.pools.push_back(pool);
    for (const SlurmNode* n : members) {
      inv.names.push_back(n->name);
      inv.gres_types.push_back(gres_of[n->name]);
      inv.addrs.push_back(n->name);
    }
  }
  auto cluster = Cluster::Build(spec);
  if (!cluster.ok()) return cluster.status();
  inv.cluster = std::move(*cluster);
  return inv;
}

// A tessel job the backend tracks (every non-terminal one).
struct Tracked {
  int64_t id = 0;
  DaemonJobSpec dspec;
  JobSpec spec;  // what policies see
  JobView view;
  JobState state = JobState::kPending;
  std::optional<SlurmJobId> slurm_id;
  int launch = 0;     // launches so far
  int failures = 0;   // launches that failed on their own
  // The allocation the current Slurm job holds (empty when none runs).
  Allocation running;
  ParallelPlan plan;
  // Whether `plan` is the one `running` runs: set by a launch; by Recover
  // from the stored plan, whose expert-parallel degree is unknown
  // (plan_ep_known false: plans are compared without it).
  bool plan_known = false;
  bool plan_ep_known = false;
  // Set while reconfiguring: what to relaunch on once the job stopped
  // (empty: back to pending).
  std::optional<Allocation> next;
  std::optional<ParallelPlan> next_plan;
  SimTime stop_asked = kNever;
  bool cancelled_by_us = false;
  std::unique_ptr<MetricsTail> metrics;
  std::vector<double> recent;  // latest step times on the running allocation
  int64_t last_step = -1;
  SimTime touched = kNever;  // attained service counted up to here
  // The job reported all its iterations done (its metrics' "done" line):
  // complete whatever the exit code (a late signal may hit it on exit).
  bool done_reported = false;
  // Profiling runs in flight: (cluster type, pipeline stages) -> its
  // one-GPU Slurm job.
  std::map<std::pair<int, int>, SlurmJobId> profiling;
};

struct SlurmBackend::Impl {
  SlurmClient& slurm;
  Store& store;
  const SlurmInventory& inv;
  const Cluster& cluster;
  CorrectedThroughput& belief;
  PolicyTraits traits;
  SlurmBackendOptions opt;

  std::map<int64_t, std::unique_ptr<Tracked>> jobs;  // by id
  std::vector<const JobView*> active;                // sorted by index
  std::vector<int> free;
  std::vector<uint8_t> up;
  std::vector<int> slurm_used;  // GPUs Slurm counts as used, per node
  SimTime next_poll = 0;
  int64_t processed = 0;
  int next_index = 0;  // JobView::index: stable per tracked job in this process

  mutable std::mutex inbox_mu;
  std::vector<int64_t> inbox_submitted;
  std::vector<int64_t> inbox_cancelled;

  mutable std::mutex status_mu;
  std::vector<NodeStatus> node_status;
  std::map<std::string, int64_t> allocated_by_type;

  BackendEvents found;

  Impl(SlurmClient& s, Store& st, const SlurmInventory& i, CorrectedThroughput& b, const PolicyTraits& t,
       SlurmBackendOptions o)
      : slurm(s), store(st), inv(i), cluster(i.cluster), belief(b), traits(t), opt(std::move(o)) {
    free.resize(cluster.nodes().size());
    up.assign(cluster.nodes().size(), 1);
    slurm_used.assign(cluster.nodes().size(), 0);
  }

  std::string JobDir(int64_t id) const { return opt.state_dir + "/jobs/" + std::to_string(id); }
  std::string CheckpointDir(const Tracked& t) const {
    return t.dspec.checkpoint_dir.empty() ? opt.state_dir + "/checkpoints/" + std::to_string(t.id)
                                          : t.dspec.checkpoint_dir;
  }
  std::string MetricsPath(int64_t id) const { return JobDir(id) + "/metrics.jsonl"; }
  std::string ExitPath(int64_t id, int launch) const { return JobDir(id) + "/exit." + std::to_string(launch); }

  // A store or Slurm call whose failure must not stop the loop: the next
  // poll resynchronises. Logged for the operator.
  static void Warn(const Status& s) {
    if (!s.ok()) std::fprintf(stderr, "tessel serve: %s\n", s.ToString().c_str());
  }

  // --- state changes, always through the store first ------------------------

  // False when the store refused (the job was cancelled meanwhile: its
  // cancellation is in the inbox and ends it at the next step).
  bool SetState(Tracked& t, JobState to, SimTime now, const std::string& reason) {
    if (t.state == to) return true;
    Status s = store.Transition(t.id, to, now, reason);
    if (!s.ok()) {
      if (s.code() != StatusCode::kFailedPrecondition) Warn(s);
      return false;
    }
    t.state = to;
    return true;
  }

  // Loads a job from the store into tracking (pending, not yet active).
  Result<Tracked*> Load(int64_t id) {
    auto row = store.Job(id);
    if (!row.ok()) return row.status();
    auto dspec = DaemonJobSpecFromJson(row->spec_json);
    if (!dspec.ok()) return dspec.status();
    auto spec = ToJobSpec(*dspec);
    if (!spec.ok()) return spec.status();
    auto t = std::make_unique<Tracked>();
    t->id = id;
    t->dspec = std::move(*dspec);
    t->spec = std::move(*spec);
    t->spec.id = std::to_string(id);
    t->spec.user = row->user;
    t->spec.submit = row->submitted_us;
    if (t->dspec.deadline_s > 0) t->spec.deadline = t->spec.submit + Seconds(static_cast<double>(t->dspec.deadline_s));
    t->state = row->state;
    if (row->slurm_job_id) {
      try {
        t->slurm_id = std::stoll(*row->slurm_job_id);
      } catch (...) {
        return FailedPrecondition("job " + std::to_string(id) + ": stored Slurm id '" + *row->slurm_job_id +
                                  "' is not a number");
      }
    }
    t->launch = row->launch_count;
    t->failures = row->failures;
    t->view.index = next_index++;
    t->view.spec = &t->spec;
    t->view.total_iterations = static_cast<double>(t->dspec.iterations);
    t->view.attained_gpu_s_by_type.assign(cluster.types().size(), 0.0);
    t->view.first_start = row->started_us.value_or(kNever);
    t->view.alloc_since = row->allocated_us.value_or(row->submitted_us);
    t->view.restarts = row->restarts;
    t->metrics = std::make_unique<MetricsTail>(MetricsPath(id));
    if (auto corrections = store.Corrections(id); corrections.ok()) {
      for (const Correction& c : *corrections) Restore(t->spec.id, c);
    }
    Tracked* raw = t.get();
    jobs[id] = std::move(t);
    return raw;
  }

  // A stored correction back into the belief, at the level its scope names.
  void Restore(const std::string& job_id, const Correction& c) {
    int type = cluster.FindType(c.gpu_type);
    if (type < 0) return;
    std::string_view scope = c.scope;
    if (scope.empty()) {
      belief.SetFactor(job_id, type, c.factor);
    } else if (scope.substr(0, kPlanScope.size()) == kPlanScope) {
      belief.SetPlanFactor(job_id, type, scope.substr(kPlanScope.size()), c.factor);
    } else if (auto stages = ParseInt(scope.substr(std::min(scope.size(), kStageScope.size())), "stages");
               scope.substr(0, kStageScope.size()) == kStageScope && stages.ok() && *stages >= 1) {
      belief.SetStageFactor(job_id, type, static_cast<int>(*stages), c.factor);
    } else {
      Warn(FailedPrecondition("job " + job_id + ": correction on " + c.gpu_type + " has an unknown scope '" +
                              c.scope + "'; ignored"));
    }
  }

  // Whether `p` is the plan `t` runs (without ep when that is unknown).
  static bool IsRunningPlan(const Tracked& t, ParallelPlan p) {
    if (!t.plan_known) return false;
    if (!t.plan_ep_known) p.ep = t.plan.ep;
    return p == t.plan;
  }

  void Activate(Tracked& t) {
    const JobView* p = &t.view;
    auto it = std::lower_bound(active.begin(), active.end(), p,
                               [](const JobView* a, const JobView* b) { return a->index < b->index; });
    active.insert(it, p);
    found.decide = found.activated = true;
  }

  void Drop(Tracked& t) {
    auto it = std::find(active.begin(), active.end(), &t.view);
    if (it != active.end()) active.erase(it);
    belief.Forget(t.spec.id);
    jobs.erase(t.id);
    found.decide = true;
  }

  // "a100-80g x3 on n1:2,n2:1", with Slurm's node names.
  std::string Describe(const Allocation& a) const {
    std::string out = cluster.TypeName(a.type) + " x" + std::to_string(a.gpus()) + " on ";
    for (size_t i = 0; i < a.parts.size(); ++i) {
      out += (i ? "," : "") + inv.names[a.parts[i].node] + ":" + std::to_string(a.parts[i].gpus);
    }
    return out;
  }

  // --- launching ---------------------------------------------------------------

  // A plan for `alloc` that the job's framework can express: the first such
  // of the decision's plans when it gave a set (fastest first, each later
  // one leaner), else the belief's plan for the allocation. The
  // framework's refusal (naming it and why) when none can be expressed.
  Result<ParallelPlan> PlanFor(const Tracked& t, const Allocation& alloc, const std::vector<PlanChoice>* set) {
    const JobFramework fw = t.dspec.framework;
    const int layers = t.dspec.model.NumLayers();
    if (set != nullptr && !set->empty()) {
      Status first_refusal;
      for (const PlanChoice& c : *set) {
        Status s = CheckFrameworkPlan(fw, c.plan, layers);
        if (s.ok()) return c.plan;
        if (first_refusal.ok()) first_refusal = s;
      }
      return first_refusal;
    }
    const JobRate& r = belief.Rate(t.spec, alloc.type, alloc.gpus(), alloc.nodes());
    if (!r.fits) return FailedPrecondition("does not fit on " + Describe(alloc) + ": " + r.reason);
    TESSEL_RETURN_IF_ERROR(CheckFrameworkPlan(fw, r.plan, layers));
    return r.plan;
  }

  // The files of one submission, under the job's folder.
  struct SubmissionFiles {
    std::string launch, script, output, exit;
  };

  // Writes `ls`'s launch file and the batch script that runs it as `files`,
  // and returns the submission of exactly ls.nodes (one gres type, one task
  // per GPU).
  Result<SubmitRequest> Prepare(const LaunchSpec& ls, const std::string& slurm_name, const std::string& gres,
                                const SubmissionFiles& files) {
    Result<LaunchFiles> rendered = RenderLaunch(ls, files.launch);
    if (!rendered.ok()) return rendered.status();  // the framework cannot express the plan
    if (!rendered->config_path.empty()) {
      TESSEL_RETURN_IF_ERROR(WriteFileAtomic(rendered->config_path, rendered->config_text));
    }
    TESSEL_RETURN_IF_ERROR(WriteFileAtomic(files.launch, rendered->launch_text));
    TESSEL_RETURN_IF_ERROR(WriteFileAtomic(
        files.script, BatchScript(opt.tessel_binary, {"--kill-on-bad-exit=0"}, files.launch, files.exit)));
    std::error_code ec;
    fs::permissions(files.script, fs::perms::owner_all, fs::perm_options::add, ec);
    SubmitRequest req;
    req.job_name = slurm_name;
    req.gpu_type = gres;
    for (const auto& [node, gpus] : ls.nodes) req.nodes.push_back({node, gpus});
    req.working_dir = JobDir(ls.job_id);
    req.output_path = files.output;
    req.batch_script = files.script;
    req.requeue = false;  // tessel relaunches, from the job's checkpoint
    return req;
  }

  // Records the intent, then submits: a crash between the two leaves a
  // `starting` job without a Slurm id, which Recover relaunches (or adopts,
  // if Slurm has it under the job's name).
  Status Launch(Tracked& t, const Allocation& alloc, const ParallelPlan& plan, SimTime now) {
    std::error_code ec;
    fs::create_directories(JobDir(t.id), ec);
    fs::create_directories(CheckpointDir(t), ec);
    if (ec) return Unavailable("cannot create " + CheckpointDir(t) + ": " + ec.message());
    int launch = t.launch;
    LaunchSpec ls;
    ls.job_id = t.id;
    ls.job_name = t.dspec.name;
    ls.launch = launch;
    ls.gpu_type = cluster.TypeName(alloc.type);
    for (const Placement& p : alloc.parts) ls.nodes.push_back({inv.names[p.node], p.gpus});
    ls.plan = plan;
    ls.global_batch = t.dspec.global_batch;
    ls.total_iterations = t.dspec.iterations;
    ls.checkpoint_dir = CheckpointDir(t);
    ls.checkpoint_interval_s = opt.checkpoint_interval_s;
    ls.metrics_file = MetricsPath(t.id);
    ls.rendezvous_addr = opt.rendezvous_addr.empty() ? inv.addrs[alloc.parts.front().node] : opt.rendezvous_addr;
    ls.rendezvous_port = opt.rendezvous_port_base + static_cast<int>((t.id * 16 + launch) % 10000);
    ls.argv = t.dspec.command;
    ls.workdir = t.dspec.workdir;
    ls.user_env = t.dspec.env;
    ls.framework = t.dspec.framework;
    ls.model_layers = t.dspec.model.NumLayers();
    ls.python_dir = opt.python_dir;
    std::string dir = JobDir(t.id), n = std::to_string(launch);
    Result<SubmitRequest> req = Prepare(ls, SlurmName(t.id), inv.gres_types[alloc.parts.front().node],
                                        {dir + "/launch." + n + ".json", dir + "/batch." + n + ".sh",
                                         dir + "/slurm." + n + ".out", ExitPath(t.id, launch)});
    if (!req.ok() && req.status().code() == StatusCode::kInvalidArgument) {
      // The job's framework cannot express the plan (PlanFor checks first,
      // so a plan stored before it): this job fails, the loop goes on.
      SetState(t, JobState::kFailed, now, req.status().message());
      Drop(t);
      return Status::Ok();
    }
    if (!req.ok()) return req.status();

    StoredAllocation stored;
    stored.gpu_type = ls.gpu_type;
    stored.gpus = alloc.gpus();
    for (const Placement& p : alloc.parts) stored.nodes.push_back(inv.names[p.node]);
    stored.alloc_json = AllocJson(alloc, inv);
    stored.plan_json = PlanJson(ls);
    TESSEL_RETURN_IF_ERROR(store.SetAllocation(t.id, stored, now));
    TESSEL_RETURN_IF_ERROR(store.AddCounters(t.id, CounterDelta{t.view.started() ? 1 : 0, 0, 1}));
    t.launch = launch + 1;
    if (t.view.started()) ++t.view.restarts;
    if (!SetState(t, JobState::kStarting, now,
                  "launching on " + Describe(alloc) + " plan " + plan.ToString())) {
      Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
      return Status::Ok();  // cancelled meanwhile: never submitted
    }
    Result<SlurmJobId> id = slurm.Submit(*req);
    if (!id.ok()) {
      // Not launched: back to pending; the policy decides again.
      Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
      SetState(t, JobState::kPending, now, "sbatch failed: " + id.status().message());
      t.view.alloc = Allocation{};
      t.view.phase = JobPhase::kPending;
      found.decide = true;
      return Status::Ok();
    }
    TESSEL_RETURN_IF_ERROR(store.SetSlurmJob(t.id, std::to_string(*id)));
    t.slurm_id = *id;
    t.running = alloc;
    t.plan = plan;
    t.plan_known = t.plan_ep_known = true;
    t.recent.clear();
    t.view.alloc = alloc;
    t.view.phase = JobPhase::kStarting;
    t.view.alloc_since = now;
    return Status::Ok();
  }

  // A decision that keeps `t` on the GPUs it runs on, with the plan set
  // `set`: relaunches it under the set's first plan its framework can
  // express when that is not the running plan and either the running plan
  // is not in the set or the new plan's estimated iteration (both from the
  // set) is at least kReplanGain shorter. Nothing otherwise, and nothing
  // while it is already being reconfigured or without a set (idempotent).
  void Replan(Tracked& t, const std::vector<PlanChoice>* set, SimTime now) {
    if (set == nullptr || set->empty() || !t.slurm_id || t.running.empty() || !t.plan_known) return;
    if (t.next || t.stop_asked != kNever || !(t.view.alloc == t.running)) return;
    Result<ParallelPlan> next = PlanFor(t, t.running, set);
    if (!next.ok() || IsRunningPlan(t, *next)) return;
    const PlanChoice *current = nullptr, *chosen = nullptr;
    for (const PlanChoice& c : *set) {
      if (current == nullptr && IsRunningPlan(t, c.plan)) current = &c;
      if (chosen == nullptr && c.plan == *next) chosen = &c;
    }
    std::string why = "re-planning on the same GPUs: " + next->ToString() + " instead of " + t.plan.ToString();
    if (current != nullptr) {
      if (!(chosen->iteration_time_s <= (1 - kReplanGain) * current->iteration_time_s)) return;
      char gain[64];
      std::snprintf(gain, sizeof gain, " (estimated %.3g s per iteration instead of %.3g s)", chosen->iteration_time_s,
                    current->iteration_time_s);
      why += gain;
    } else {
      why += " (no longer in the policy's plan set)";
    }
    Reconfigure(t, t.running, *next, now, why);
  }

  // Asks the job to checkpoint and stop; relaunches on `next` once it has.
  void Reconfigure(Tracked& t, const Allocation& next, std::optional<ParallelPlan> plan, SimTime now,
                   const std::string& why) {
    t.next = next;
    t.next_plan = plan;
    t.view.alloc = next;
    t.view.phase = next.empty() ? JobPhase::kPending : JobPhase::kStarting;
    t.view.alloc_since = now;
    if (t.stop_asked == kNever && t.slurm_id) {
      if (t.state == JobState::kStarting) {
        // Not running yet: nothing to checkpoint.
        Warn(slurm.Cancel(*t.slurm_id));
        t.cancelled_by_us = true;
      } else {
        Warn(slurm.Signal(*t.slurm_id, "USR1"));
      }
      t.stop_asked = now;
    }
    SetState(t, JobState::kReconfiguring, now, why);
  }

  // --- a launch ended --------------------------------------------------------------

  std::optional<int> ReadExit(int64_t id, int launch) const {
    std::ifstream f(ExitPath(id, launch));
    int rc;
    if (f >> rc) return rc;
    return std::nullopt;
  }

  // `slurm_state`: how Slurm last showed the job (kUnknown: it forgot it).
  void Ended(Tracked& t, SimTime now, SlurmJobState slurm_state) {
    ReadMetrics(t, now);
    std::optional<int> rc = ReadExit(t.id, t.launch - 1);
    bool node_lost = slurm_state == SlurmJobState::kNodeFail || slurm_state == SlurmJobState::kBootFail;
    t.slurm_id.reset();
    Warn(store.SetSlurmJob(t.id, std::nullopt));
    t.running = Allocation{};
    t.plan_known = false;
    t.stop_asked = kNever;
    bool by_us = t.cancelled_by_us;
    t.cancelled_by_us = false;
    found.decide = true;
    // Done: it exited 0, said "done", or reported its last step before it
    // stopped for a checkpoint (asked to stop at the step it finished on:
    // that checkpoint holds all its work). The same rule whatever the order
    // of the last step and a stop request.
    bool last_step_reported = t.dspec.iterations > 0 && t.last_step >= t.dspec.iterations;
    if ((rc && *rc == 0) || t.done_reported || (rc && *rc == kExitCheckpointed && last_step_reported)) {
      Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
      SetState(t, JobState::kCompleted, now, "finished all " + std::to_string(t.dspec.iterations) + " iterations");
      Drop(t);
      return;
    }
    bool checkpointed = rc && *rc == kExitCheckpointed;
    if (!checkpointed && !by_us && !node_lost && t.next == std::nullopt) {
      ++t.failures;
      Warn(store.AddCounters(t.id, CounterDelta{0, 1, 0}));
      if (t.failures >= opt.max_failures) {
        Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
        SetState(t, JobState::kFailed, now,
                 "launch " + std::to_string(t.launch - 1) + " ended with " +
                     (rc ? "exit code " + std::to_string(*rc) : std::string("Slurm state ") + SlurmJobStateName(slurm_state)) + " (" +
                     std::to_string(t.failures) + " failures; see " + JobDir(t.id) + "/slurm.*.out)");
        Drop(t);
        return;
      }
    }
    if (node_lost) {
      Warn(store.AddCounters(t.id, CounterDelta{0, 1, 0}));
    }
    // Relaunch where the policy said, or wait for its next decision.
    if (t.next && !t.next->empty()) {
      Allocation next = *t.next;
      std::optional<ParallelPlan> plan = t.next_plan;
      t.next.reset();
      t.next_plan.reset();
      Result<ParallelPlan> p = plan ? Result<ParallelPlan>(*plan) : PlanFor(t, next, nullptr);
      bool free_now = true;
      for (const Placement& part : next.parts) free_now &= up[part.node] != 0;
      if (p.ok() && free_now) {
        Status s = Launch(t, next, *p, now);
        if (s.ok()) return;
      }
    }
    t.next.reset();
    t.next_plan.reset();
    Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
    std::string why = checkpointed ? "stopped at a checkpoint" : node_lost ? "lost its node" :
                      by_us       ? "cancelled after not stopping in time" :
                                    "launch ended with " + (rc ? "exit code " + std::to_string(*rc) : "no exit code");
    SetState(t, JobState::kPending, now, why + "; waiting for GPUs");
    t.view.alloc = Allocation{};
    t.view.phase = JobPhase::kPending;
    t.view.alloc_since = now;
  }

  // --- what jobs report -----------------------------------------------------------

  void ReadMetrics(Tracked& t, SimTime now) {
    Result<MetricsUpdate> u = t.metrics->Read();
    if (!u.ok()) return;
    if (u->done) t.done_reported = true;
    if (u->steps.empty()) return;
    std::vector<StepSample> samples;
    std::string type = t.running.empty() ? "" : cluster.TypeName(t.running.type);
    for (const MetricsStep& s : u->steps) {
      StepSample o;
      o.time_us = s.time_s > 0 ? static_cast<int64_t>(s.time_s * 1e6) : now;
      o.gpu_type = type;
      o.gpus = t.running.gpus();
      o.step = s.step;
      o.step_time_s = s.step_time_s;
      o.samples = s.samples;
      o.profile = s.profile;
      samples.push_back(o);
      if (!s.profile) {
        t.last_step = std::max(t.last_step, s.step);
        t.recent.push_back(s.step_time_s);
      }
    }
    Warn(store.AddStepTimes(t.id, samples).status());
    t.view.done_iterations = std::min(t.view.total_iterations, static_cast<double>(t.last_step));
    if (t.recent.size() > static_cast<size_t>(kCorrectionWindow))
      t.recent.erase(t.recent.begin(), t.recent.end() - kCorrectionWindow);
    Correct(t);
  }

  // The belief's correction for this job from its latest steps (the first
  // step of a launch is warm-up and skipped when there are others): the
  // median measured step / the base estimate of the plan it runs on its
  // allocation (found in the base plan set, or the base rate when that is
  // its plan) sets that plan's factor and the type's fallback (the job's
  // latest measurement there under any plan). When the running plan has no
  // base estimate (a plan the base would not choose, or one restored
  // without its expert-parallel degree), the median / the base rate sets
  // the type's factor only.
  void Correct(Tracked& t) {
    if (t.running.empty() || t.recent.size() < 3) return;
    std::vector<double> v(t.recent.begin() + 1, t.recent.end());
    std::sort(v.begin(), v.end());
    double median = v[v.size() / 2];
    ThroughputModel& base = belief.base();
    const int type = t.running.type, gpus = t.running.gpus(), nodes = t.running.nodes();
    std::optional<double> plan_s;
    for (const PlanChoice& c : base.PlanSet(t.spec, type, gpus, nodes, kCorrectionPlans)) {
      if (IsRunningPlan(t, c.plan)) {
        plan_s = c.iteration_time_s;
        break;
      }
    }
    const JobRate& r = base.Rate(t.spec, type, gpus, nodes);
    if (!plan_s && r.fits && IsRunningPlan(t, r.plan)) plan_s = r.iteration_time_s;
    double estimate = plan_s ? *plan_s : r.fits ? r.iteration_time_s : 0.0;
    if (!(estimate > 0)) return;
    double factor = median / estimate;
    if (!std::isfinite(factor) || factor <= 0) return;
    const std::string gpu = cluster.TypeName(type);
    const auto samples = static_cast<int64_t>(v.size());
    if (plan_s) {
      belief.SetPlanFactor(t.spec.id, type, t.plan, factor);
      Warn(store.SetCorrection(t.id, Correction{gpu, factor, samples, PlanScope(t.plan)}));
    }
    belief.SetFactor(t.spec.id, type, factor);
    Warn(store.SetCorrection(t.id, Correction{gpu, factor, samples, ""}));
  }

  // --- profiling (Arena's disaggregated profiles, for real) ---------------------------
  //
  // Before a new job's first placement, when the policy profiles
  // (PolicyTraits::profiling), the job's own command runs a few timed steps
  // (TESSEL_PROFILE=1) of one pipeline stage on one GPU, once per GPU type
  // it may use and per stage count p its grids admit there
  // (ProfilingModel::StageCountsFor: 1, 2, 4, ... up to max_stages, its
  // layers and the GPUs it may hold), all at once. Each measured stage time
  // sets the job's factor for p-stage plans on that type (the belief's
  // level 2); profiles are stored per (model, type, stage layers,
  // micro-batch) and reused by later jobs of the same model: a stored one is
  // not measured again.

  std::string ProfileKey(const Tracked& t) const { return t.spec.model; }

  // What one profiling run measures: the first stage of a p-stage pipeline.
  struct StageShape {
    int layers = 0;     // the stage's layers
    ParallelPlan plan;  // what the run is launched with (its micro-batch)
  };

  // The profiled stage of a p-stage pipeline on `type`. Layers: the first
  // stage's under the split rule the job library and the estimator share
  // (stage k of p holds floor(L/p) layers, one more when k < L mod p: the
  // first holds ceil(L/p)). Micro-batch (and recompute, precision): those
  // of the base estimator's fastest pure pipeline of p stages on p GPUs of
  // the type (p = 1: the one-GPU plan, the rule before stage counts were
  // profiled), so the profile's micro-batch is the one its factor compares
  // with and needs no scaling. nullopt when no pure p-stage pipeline fits p
  // GPUs of the type: its profile could give no factor.
  std::optional<StageShape> ShapeFor(const Tracked& t, int type, int stages) const {
    std::optional<PlanChoice> grid =
        belief.base().PipelinePlan(t.spec, type, stages, MinNodes(cluster, type, stages));
    if (!grid || !(grid->iteration_time_s > 0)) return std::nullopt;
    int layers = std::max(1, t.dspec.model.NumLayers());
    StageShape s;
    s.layers = (layers + stages - 1) / stages;
    s.plan = grid->plan;
    s.plan.dp = s.plan.tp = s.plan.pp = s.plan.ep = 1;
    s.plan.virtual_stages = 1;
    s.plan.num_micro_batches = 1;
    s.plan.zero = 0;
    return s;
  }

  // A profile of one stage of a `stages`-stage pipeline as the job's factor
  // for `stages`-stage plans on `type`. The base's fastest pure pipeline of
  // p = `stages` stages on p GPUs (d = t = 1) takes T_grid for M
  // micro-batches of mb samples with ceil(L/p) layers in its first stage;
  // the profile predicts
  //   (M + p - 1) * t_stage * (mb / mb_profiled) * (ceil(L/p) / stage layers profiled)
  // and the factor is predicted / T_grid (p = 1: global batch / mb_profiled
  // * t_stage * L / stage layers against the one-GPU estimate, the rule
  // before stage counts were profiled). Approximate where the estimator is
  // finer (perf/estimator.cc, the stage costs and the pipeline schedule):
  // it times M * s_max + (p - 1) * s_avg with each stage's own layers, the
  // embedding on the first stage and the head on the last only, while the
  // profiled stage carries both (each of the M + p - 1 slots is charged a
  // little more: the factor errs high by about the embedding's or the
  // head's share of a stage); T_grid includes the point-to-point activation
  // transfers between stages and the optimizer step, which the profiled
  // stage time does not (the factor errs low by their share of T_grid);
  // micro-batch scaling is linear (exact at the rule's micro-batch, which a
  // fresh profile uses).
  void CorrectFromProfile(Tracked& t, int type, int stages, const ProfileRecord& p) {
    if (!(p.step_time_s > 0) || p.micro_batch <= 0 || p.stage_layers <= 0) return;
    std::optional<PlanChoice> grid =
        belief.base().PipelinePlan(t.spec, type, stages, MinNodes(cluster, type, stages));
    if (!grid || !(grid->iteration_time_s > 0)) return;
    const ParallelPlan& g = grid->plan;
    int layers = std::max(1, t.dspec.model.NumLayers());
    double plan_stage_layers = (layers + g.pp - 1) / g.pp;
    double predicted = (g.num_micro_batches + g.pp - 1) * p.step_time_s *
                       (static_cast<double>(g.micro_batch) / p.micro_batch) * (plan_stage_layers / p.stage_layers);
    double factor = predicted / grid->iteration_time_s;
    if (!std::isfinite(factor) || factor <= 0) return;
    belief.SetStageFactor(t.spec.id, type, stages, factor);
    Warn(store.SetCorrection(t.id, Correction{cluster.TypeName(type), factor, 0, StageScope(stages)}));
  }

  // The GPU types a job may run on: the one it requires, else those its
  // spec allows.
  std::vector<int> AllowedTypes(const Tracked& t) const {
    std::vector<int> types;
    int only = t.spec.requested_gpu_type.empty() ? -1 : cluster.FindType(t.spec.requested_gpu_type);
    for (int type = 0; type < static_cast<int>(cluster.types().size()); ++type) {
      if ((only < 0 || type == only) && t.spec.AllowsGpuType(cluster.TypeName(type))) types.push_back(type);
    }
    return types;
  }

  // Starts profiling `t`: one run per (allowed type, stage count) without a
  // stored profile, submitted at once, each on one GPU of its type (the
  // node with the most GPUs left free, so runs spread). False when the
  // policy does not profile or every profile needed is stored (then
  // applied).
  bool StartProfiling(Tracked& t, SimTime now) {
    if (traits.profiling.kind == ProfilingKind::kNone || t.view.started()) return false;
    std::map<std::tuple<std::string, int, int>, ProfileRecord> stored;
    if (auto profiles = store.Profiles(ProfileKey(t)); profiles.ok()) {
      for (const ProfileRecord& p : *profiles) stored[{p.gpu_type, p.stage_layers, p.micro_batch}] = p;
    }
    ComputeFree();
    std::vector<int> spare = free;
    int runs = 0;
    for (int type : AllowedTypes(t)) {
      for (int stages : traits.profiling.StageCountsFor(t.spec, cluster, type)) {
        std::optional<StageShape> shape = ShapeFor(t, type, stages);
        if (!shape) continue;
        auto it = stored.find({cluster.TypeName(type), shape->layers, shape->plan.micro_batch});
        if (it != stored.end()) {
          CorrectFromProfile(t, type, stages, it->second);
          continue;
        }
        int node = -1;
        for (int n : cluster.types()[type].nodes) {
          if (up[n] && (node < 0 || spare[n] > spare[node])) node = n;
        }
        if (node < 0) continue;
        LaunchSpec ls;
        ls.job_id = t.id;
        ls.job_name = t.dspec.name;
        ls.gpu_type = cluster.TypeName(type);
        ls.nodes = {{inv.names[node], 1}};
        ls.plan = shape->plan;
        ls.global_batch = t.dspec.global_batch;
        ls.total_iterations = t.dspec.iterations;
        ls.checkpoint_dir = CheckpointDir(t);
        ls.metrics_file = ProfilePath(t.id, type, stages);
        ls.rendezvous_addr = opt.rendezvous_addr.empty() ? inv.addrs[node] : opt.rendezvous_addr;
        // Ports apart from the job's launches' (which count up from 0) and
        // from each other, for runs that share a node.
        ls.rendezvous_port = opt.rendezvous_port_base + static_cast<int>((t.id * 16 + 15 - runs % 16) % 10000);
        ls.argv = t.dspec.command;
        ls.workdir = t.dspec.workdir;
        ls.user_env = t.dspec.env;
        ls.profile = true;
        ls.profile_layers = shape->layers;
        ls.framework = t.dspec.framework;  // a plan it cannot express: no profile of this shape
        ls.model_layers = shape->layers;
        ls.python_dir = opt.python_dir;
        std::string dir = JobDir(t.id), tag = ProfileTag(t.id, type, stages);
        std::error_code ec;
        fs::create_directories(dir, ec);
        fs::create_directories(CheckpointDir(t), ec);
        std::remove(ProfilePath(t.id, type, stages).c_str());
        Result<SubmitRequest> req = Prepare(ls, SlurmName(t.id) + "-profile", inv.gres_types[node],
                                            {tag + ".json", tag + ".sh", tag + ".out", tag + ".exit"});
        if (!req.ok()) {
          Warn(req.status());
          continue;
        }
        Result<SlurmJobId> id = slurm.Submit(*req);
        if (!id.ok()) {
          Warn(id.status());
          continue;
        }
        t.profiling[{type, stages}] = *id;
        --spare[node];
        ++runs;
      }
    }
    if (t.profiling.empty()) return false;
    SetState(t, JobState::kProfiling, now, "profiling one pipeline stage on one GPU: " + Profiling(t));
    return true;
  }

  // What is being profiled: "a100-80g (1, 2 stages), v100-32g (1 stage)".
  std::string Profiling(const Tracked& t) const {
    std::map<int, std::vector<int>> by_type;
    for (const auto& [key, id] : t.profiling) by_type[key.first].push_back(key.second);
    std::string out;
    for (const auto& [type, counts] : by_type) {
      out += (out.empty() ? "" : ", ") + cluster.TypeName(type) + " (";
      for (size_t i = 0; i < counts.size(); ++i) out += (i ? ", " : "") + std::to_string(counts[i]);
      out += counts.size() == 1 && counts[0] == 1 ? " stage)" : " stages)";
    }
    return out;
  }

  // profile.<type>.<stages>: the files of one profiling run, under the job's folder.
  std::string ProfileTag(int64_t id, int type, int stages) const {
    return JobDir(id) + "/profile." + std::to_string(type) + "." + std::to_string(stages);
  }
  std::string ProfilePath(int64_t id, int type, int stages) const { return ProfileTag(id, type, stages) + ".jsonl"; }

  // A profiling run ended: its steps become the model's stored profile and
  // the job's factor for that stage count on that type. Once all have, the
  // job is placed.
  void Profiled(Tracked& t, int type, int stages, SimTime now) {
    t.profiling.erase({type, stages});
    MetricsTail tail(ProfilePath(t.id, type, stages));
    Result<MetricsUpdate> u = tail.Read();
    std::vector<double> times;
    std::vector<StepSample> samples;
    int layers = 0, micro_batch = 0;
    if (u.ok()) {
      for (const MetricsStep& s : u->steps) {
        if (!s.profile) continue;
        times.push_back(s.step_time_s);
        layers = s.layers;
        micro_batch = s.micro_batch;
        StepSample o;
        o.time_us = s.time_s > 0 ? static_cast<int64_t>(s.time_s * 1e6) : now;
        o.gpu_type = cluster.TypeName(type);
        o.gpus = 1;
        o.step = s.step;
        o.step_time_s = s.step_time_s;
        o.profile = true;
        samples.push_back(o);
      }
    }
    if (!times.empty() && layers > 0 && micro_batch > 0) {
      Warn(store.AddStepTimes(t.id, samples).status());
      std::sort(times.begin(), times.end());
      ProfileRecord p{ProfileKey(t), cluster.TypeName(type), layers, micro_batch, times[times.size() / 2], now};
      Warn(store.PutProfile(p));
      CorrectFromProfile(t, type, stages, p);
    } else {
      std::fprintf(stderr, "tessel serve: job %lld: profiling %d stage(s) on %s measured nothing (see %s.out)\n",
                   static_cast<long long>(t.id), stages, cluster.TypeName(type).c_str(),
                   ProfileTag(t.id, type, stages).c_str());
    }
    if (t.profiling.empty() && t.state == JobState::kProfiling) {
      SetState(t, JobState::kPending, now, "profiled; waiting for GPUs");
      Activate(t);
    }
  }

  // --- polling ----------------------------------------------------------------------

  Status Poll(SimTime now) {
    auto nodes = slurm.ListNodes();
    if (!nodes.ok()) return nodes.status();
    std::map<std::string, const SlurmNode*> by_name;
    for (const SlurmNode& n : *nodes) by_name[n.name] = &n;
    std::vector<NodeStatus> statuses;
    for (size_t i = 0; i < inv.names.size(); ++i) {
      auto it = by_name.find(inv.names[i]);
      bool ok = it != by_name.end() && it->second->Usable();
      if (ok != (up[i] != 0)) {
        up[i] = ok ? 1 : 0;
        found.decide = true;
        if (!ok) NodeLost(static_cast<int>(i), now, it == by_name.end() ? "gone" : it->second->StateString());
      }
      slurm_used[i] = 0;
      NodeStatus st;
      st.name = inv.names[i];
      st.gpu_type = cluster.TypeName(cluster.nodes()[i].type);
      st.gres_type = inv.gres_types[i];
      st.gpus = cluster.nodes()[i].gpus;
      if (it != by_name.end()) {
        for (const SlurmGpus& g : it->second->gpus) slurm_used[i] += g.used;
        st.gpus_used = slurm_used[i];
        st.state = ToLower(it->second->StateString());
      } else {
        st.state = "gone";
      }
      statuses.push_back(st);
    }
    auto sjobs = slurm.ListJobs(kNamePrefix);
    if (!sjobs.ok()) return sjobs.status();
    std::map<SlurmJobId, const SlurmJob*> by_id;
    for (const SlurmJob& j : *sjobs) by_id[j.id] = &j;
    std::vector<Tracked*> list;
    for (auto& [id, t] : jobs) list.push_back(t.get());
    for (Tracked* t : list) {
      std::vector<std::pair<int, int>> ended;
      for (const auto& [key, sid] : t->profiling) {
        auto it = by_id.find(sid);
        if (it == by_id.end() || IsFinished(it->second->state)) ended.push_back(key);
      }
      for (const auto& [type, stages] : ended) Profiled(*t, type, stages, now);
      if (!t->slurm_id) continue;
      auto it = by_id.find(*t->slurm_id);
      if (it == by_id.end() || IsFinished(it->second->state)) {
        Ended(*t, now, it == by_id.end() ? SlurmJobState::kUnknown : it->second->state);
        continue;
      }
      if (it->second->state == SlurmJobState::kRunning && t->state == JobState::kStarting) {
        if (t->view.first_start == kNever) t->view.first_start = now;
        t->view.phase = JobPhase::kRunning;
        SetState(*t, JobState::kRunning, now, "running as Slurm job " + std::to_string(*t->slurm_id));
      }
      if (t->stop_asked != kNever && now - t->stop_asked > opt.stop_timeout && !t->cancelled_by_us) {
        Warn(slurm.Cancel(*t->slurm_id));
        t->cancelled_by_us = true;
      }
      ReadMetrics(*t, now);
    }
    // Slurm jobs named after a tessel job tessel no longer runs: orphans.
    for (const SlurmJob& j : *sjobs) {
      if (IsFinished(j.state)) continue;
      int64_t id = IdFromName(j.name);
      if (id < 0) continue;
      auto it = jobs.find(id);
      if (it == jobs.end() || it->second->slurm_id != j.id) Warn(slurm.Cancel(j.id));
    }
    std::map<std::string, int64_t> by_type;
    for (auto& [id, t] : jobs) {
      if (!t->view.alloc.empty()) by_type[cluster.TypeName(t->view.alloc.type)] += t->view.alloc.gpus();
    }
    std::lock_guard<std::mutex> lock(status_mu);
    node_status = std::move(statuses);
    allocated_by_type = std::move(by_type);
    return Status::Ok();
  }

  // A node was drained or went down: its jobs checkpoint and wait for the
  // policy to place them elsewhere (a down node's jobs are gone; Slurm ends
  // them and they relaunch from their last checkpoint).
  void NodeLost(int node, SimTime now, const std::string& state) {
    for (auto& [id, t] : jobs) {
      bool here = false;
      for (const Placement& p : t->view.alloc.parts) here |= p.node == node;
      for (const Placement& p : t->running.parts) here |= p.node == node;
      if (!here) continue;
      if (t->slurm_id) {
        Reconfigure(*t, Allocation{}, std::nullopt, now, "node " + inv.names[node] + " is " + ToLower(state));
      } else {
        t->view.alloc = Allocation{};
        t->view.phase = JobPhase::kPending;
      }
    }
  }

  void DrainInbox(SimTime now) {
    std::vector<int64_t> sub, can;
    {
      std::lock_guard<std::mutex> lock(inbox_mu);
      sub.swap(inbox_submitted);
      can.swap(inbox_cancelled);
    }
    for (int64_t id : sub) {
      if (jobs.count(id)) continue;
      ++processed;
      auto t = Load(id);
      if (!t.ok()) {
        Warn(store.Transition(id, JobState::kFailed, now, "cannot load: " + t.status().message()));
        continue;
      }
      if (!StartProfiling(**t, now)) Activate(**t);
    }
    for (int64_t id : can) {
      ++processed;
      auto it = jobs.find(id);
      if (it == jobs.end()) continue;
      Tracked& t = *it->second;
      if (t.slurm_id) Warn(slurm.Cancel(*t.slurm_id));
      for (const auto& [key, sid] : t.profiling) Warn(slurm.Cancel(sid));
      Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
      Drop(t);
    }
  }

  void ComputeFree() {
    std::vector<int> ours(free.size(), 0), ours_running(free.size(), 0);
    for (auto& [id, t] : jobs) {
      for (const Placement& p : t->view.alloc.parts) ours[p.node] += p.gpus;
      for (const Placement& p : t->running.parts) ours_running[p.node] += p.gpus;
    }
    for (size_t i = 0; i < free.size(); ++i) {
      int foreign = std::max(0, slurm_used[i] - ours_running[i]);
      free[i] = up[i] ? std::max(0, cluster.nodes()[i].gpus - ours[i] - foreign) : 0;
    }
  }

  Tracked* ByIndex(int index) {
    for (auto& [id, t] : jobs)
      if (t->view.index == index) return t.get();
    return nullptr;
  }
};

SlurmBackend::SlurmBackend(SlurmClient& slurm, Store& store, const SlurmInventory& inventory,
                           CorrectedThroughput& belief, const PolicyTraits& traits, SlurmBackendOptions options)
    : impl_(std::make_unique<Impl>(slurm, store, inventory, belief, traits, std::move(options))) {}

SlurmBackend::~SlurmBackend() = default;

void SlurmBackend::Submitted(int64_t id) {
  std::lock_guard<std::mutex> lock(impl_->inbox_mu);
  impl_->inbox_submitted.push_back(id);
}

void SlurmBackend::CancelRequested(int64_t id) {
  std::lock_guard<std::mutex> lock(impl_->inbox_mu);
  impl_->inbox_cancelled.push_back(id);
}

Status SlurmBackend::Recover(SimTime now) {
  Impl& m = *impl_;
  auto rows = m.store.Jobs(JobFilter{std::nullopt, /*include_terminal=*/false});
  if (!rows.ok()) return rows.status();
  auto sjobs = m.slurm.ListJobs(kNamePrefix);
  if (!sjobs.ok()) return sjobs.status();
  // Live Slurm jobs per tessel id.
  std::map<int64_t, std::vector<const SlurmJob*>> live;
  for (const SlurmJob& j : *sjobs) {
    int64_t id = IdFromName(j.name);
    if (id >= 0 && !IsFinished(j.state)) live[id].push_back(&j);
  }
  std::set<int64_t> kept;
  for (const StoredJob& row : *rows) {
    auto loaded = m.Load(row.id);
    if (!loaded.ok()) {
      m.Warn(m.store.Transition(row.id, JobState::kFailed, now, "cannot reload: " + loaded.status().message()));
      continue;
    }
    Tracked& t = **loaded;
    kept.insert(row.id);
    // Which Slurm job is this tessel job's: the stored one if Slurm runs it,
    // else the one under its name (a crash between sbatch and the store).
    const SlurmJob* mine = nullptr;
    for (const SlurmJob* j : live[row.id]) {
      if (row.slurm_job_id && std::to_string(j->id) == *row.slurm_job_id) mine = j;
    }
    if (mine == nullptr && !live[row.id].empty() && !row.slurm_job_id) mine = live[row.id].back();
    for (const SlurmJob* j : live[row.id]) {
      if (j != mine) m.Warn(m.slurm.Cancel(j->id));  // never two Slurm jobs for one tessel job
    }
    bool had_alloc = row.allocation.gpus > 0;
    if (mine != nullptr && had_alloc) {
      auto alloc = AllocFromJson(row.allocation.alloc_json, row.allocation.gpu_type, m.inv);
      if (alloc.ok()) {
        t.slurm_id = mine->id;
        m.Warn(m.store.SetSlurmJob(t.id, std::to_string(mine->id)));
        t.running = *alloc;
        if (auto plan = PlanFromStoredJson(row.allocation.plan_json); plan.ok()) {
          t.plan = *plan;
          t.plan_known = true;  // its ep is not stored: plan_ep_known stays false
        }
        t.view.alloc = *alloc;
        t.view.phase = mine->state == SlurmJobState::kRunning ? JobPhase::kRunning : JobPhase::kStarting;
        if (t.state == JobState::kReconfiguring) t.stop_asked = now;  // it was asked to stop: wait for it
        t.recent.clear();
        m.Activate(t);
        continue;
      }
      m.Warn(m.slurm.Cancel(mine->id));
    } else if (mine != nullptr) {
      m.Warn(m.slurm.Cancel(mine->id));
    }
    if (row.slurm_job_id && mine == nullptr && had_alloc) {
      // It ended while the daemon was down: learn how from its exit file.
      auto alloc = AllocFromJson(row.allocation.alloc_json, row.allocation.gpu_type, m.inv);
      if (alloc.ok()) t.running = *alloc;
      m.Activate(t);
      m.Ended(t, now, SlurmJobState::kUnknown);
      continue;
    }
    // Nothing runs: it waits for the policy.
    if (had_alloc) m.Warn(m.store.SetAllocation(t.id, StoredAllocation{}, now));
    if (row.slurm_job_id) m.Warn(m.store.SetSlurmJob(t.id, std::nullopt));
    t.slurm_id.reset();
    if (m.StartProfiling(t, now)) continue;
    if (t.state != JobState::kPending) m.SetState(t, JobState::kPending, now, "daemon restarted; relaunching");
    m.Activate(t);
  }
  // Slurm jobs of tessel jobs that are finished or unknown: orphans.
  for (const auto& [id, list] : live) {
    if (kept.count(id)) continue;
    for (const SlurmJob* j : list) m.Warn(m.slurm.Cancel(j->id));
  }
  return Status::Ok();
}

SimTime SlurmBackend::NextEvent() const { return impl_->next_poll; }

Result<BackendEvents> SlurmBackend::Advance(SimTime now) {
  Impl& m = *impl_;
  m.DrainInbox(now);
  if (now >= m.next_poll) {
    ++m.processed;
    Status s = m.Poll(now);
    m.next_poll = now + m.opt.poll_interval;
    if (!s.ok()) std::fprintf(stderr, "tessel serve: polling Slurm: %s\n", s.ToString().c_str());
  }
  // What Recover, the inbox and the poll found since the last call.
  BackendEvents out = m.found;
  m.found = BackendEvents{};
  return out;
}

void SlurmBackend::Observe(SimTime now, Snapshot* snap) {
  Impl& m = *impl_;
  m.ComputeFree();
  // Attained service (GPU-seconds held) up to now.
  for (auto& [id, t] : m.jobs) {
    JobView& v = t->view;
    if (t->touched != kNever && !t->running.empty()) {
      double gpu_s = ToSeconds(std::max<SimTime>(0, now - t->touched)) * t->running.gpus();
      v.attained_gpu_s += gpu_s;
      v.attained_gpu_s_by_type[t->running.type] += gpu_s;
    }
    t->touched = now;
  }
  snap->now = now;
  snap->cluster = &m.cluster;
  snap->free_gpus = m.free;
  snap->node_up = m.up;
  snap->jobs = m.active;
  snap->belief = &m.belief;
}

Status SlurmBackend::Apply(const Decision& d, SimTime now) {
  Impl& m = *impl_;
  for (const auto& [idx, why] : d.reject) {
    Tracked* t = m.ByIndex(idx);
    if (t == nullptr) continue;
    if (t->slurm_id) m.Warn(m.slurm.Cancel(*t->slurm_id));
    m.Warn(m.store.SetAllocation(t->id, StoredAllocation{}, now));
    m.SetState(*t, JobState::kFailed, now, "rejected by the policy: " + why);
    m.Drop(*t);
  }
  std::map<int, const std::vector<PlanChoice>*> plans;
  for (const auto& [idx, set] : d.plans) plans[idx] = &set;
  for (const auto& [idx, alloc] : d.assign) {
    Tracked* t = m.ByIndex(idx);
    if (t == nullptr) continue;
    auto pit = plans.find(idx);
    const std::vector<PlanChoice>* set = pit == plans.end() ? nullptr : pit->second;
    if (t->view.alloc == alloc) {  // the same GPUs: perhaps another plan
      m.Replan(*t, set, now);
      continue;
    }
    std::optional<ParallelPlan> plan;
    if (!alloc.empty()) {
      Result<ParallelPlan> p = m.PlanFor(*t, alloc, set);
      if (!p.ok()) {
        m.SetState(*t, JobState::kFailed, now, p.status().message());
        m.Drop(*t);
        continue;
      }
      plan = *p;
    }
    if (t->slurm_id) {
      m.Reconfigure(*t, alloc, plan, now,
                    alloc.empty() ? "suspended by the policy" : "moving to " + m.Describe(alloc));
    } else if (!alloc.empty()) {
      TESSEL_RETURN_IF_ERROR(m.Launch(*t, alloc, *plan, now));
    }
  }
  return Status::Ok();
}

bool SlurmBackend::HasActiveJobs() const { return !impl_->active.empty(); }

std::string SlurmBackend::Outstanding() const { return std::to_string(impl_->jobs.size()) + " jobs tracked"; }

int64_t SlurmBackend::events() const { return impl_->processed; }

std::vector<NodeStatus> SlurmBackend::NodeStatuses() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->node_status;
}

std::map<std::string, int64_t> SlurmBackend::GpusAllocatedByType() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->allocated_by_type;
}

}  // namespace tessel
