#include "cluster/slurm_backend_impl.h"

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
using namespace slurm_internal;

namespace slurm_internal {

std::string StageScope(int stages) { return std::string(kStageScope) + std::to_string(stages); }
std::string PlanScope(const ParallelPlan& plan) { return std::string(kPlanScope) + plan.ToString(); }

std::string SlurmName(int64_t id) { return kNamePrefix + std::to_string(id); }

std::string ProfileRunName(int64_t id, const std::string& gpu_type, int stages) {
  return SlurmName(id) + "-profile-" + gpu_type + "-" + std::to_string(stages);
}

int64_t IdFromName(const std::string& name) {
  if (name.rfind(kNamePrefix, 0) != 0) return -1;
  std::string rest = name.substr(std::string(kNamePrefix).size());
  size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
  if (digits == 0 || digits > 18 || (digits < rest.size() && rest[digits] != '-')) return -1;
  return std::stoll(rest.substr(0, digits));
}

bool IsLaunchName(const std::string& name) {
  int64_t id = IdFromName(name);
  return id >= 0 && name == SlurmName(id);
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

}  // namespace slurm_internal

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


std::string SlurmBackend::Impl::CheckpointDir(const Tracked& t) const {
  return t.dspec.checkpoint_dir.empty() ? opt.state_dir + "/checkpoints/" + std::to_string(t.id)
                                        : t.dspec.checkpoint_dir;
}


// --- state changes, always through the store first ------------------------

// False when the store refused (the job was cancelled meanwhile: its
// cancellation is in the inbox and ends it at the next step).
bool SlurmBackend::Impl::SetState(Tracked& t, JobState to, SimTime now, const std::string& reason) {
  if (t.state == to) return true;
  Status s = store.Transition(t.id, to, now, reason);
  if (!s.ok()) {
    if (s.code() != StatusCode::kFailedPrecondition) Warn(s);
    return false;
  }
  t.state = to;
  return true;
}


// A job's end: its allocation cleared and its final state stored, then the
// job dropped (kept in unstored_ends when the store refused for another
// reason than the job's state).
void SlurmBackend::Impl::End(Tracked& t, JobState to, SimTime now, const std::string& reason) {
  Status cleared = store.SetAllocation(t.id, StoredAllocation{}, now);
  Status ended = store.Transition(t.id, to, now, reason);
  if (ended.ok()) {
    t.state = to;
    if (!cleared.ok() || t.slurm_id_unstored) unstored_ends[t.id] = UnstoredEnd{to, now, reason};
  } else if (ended.code() != StatusCode::kFailedPrecondition) {
    // Not a refusal of the change itself (the job was cancelled meanwhile):
    // the store could not write (a full disk). The job's Slurm job is over;
    // its end is stored at a later poll.
    Warn(ended);
    std::fprintf(stderr, "tessel serve: job %lld: its end (%s) is kept and stored once the store writes again\n",
                 static_cast<long long>(t.id), JobStateName(to));
    unstored_ends[t.id] = UnstoredEnd{to, now, reason};
  }
  Drop(t);
}


void SlurmBackend::Impl::RetryUnstored() {
  for (auto it = unstored_ends.begin(); it != unstored_ends.end();) {
    const int64_t id = it->first;
    const UnstoredEnd& e = it->second;
    Status s = store.SetSlurmJob(id, std::nullopt);
    if (s.ok()) s = store.SetAllocation(id, StoredAllocation{}, e.at);
    if (s.ok()) {
      s = store.Transition(id, e.to, e.at, e.reason);
      // Final already: stored by an earlier try, or cancelled meanwhile.
      if (s.code() == StatusCode::kFailedPrecondition) s = Status::Ok();
    }
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      ++it;  // still refused: the next poll tries again
      continue;
    }
    std::fprintf(stderr, "tessel serve: job %lld: its end (%s) is stored now\n", static_cast<long long>(id),
                 JobStateName(e.to));
    it = unstored_ends.erase(it);
  }
  for (auto& [id, t] : jobs) {
    if (!t->slurm_id_unstored) continue;
    std::optional<std::string> sid;
    if (t->slurm_id) sid = std::to_string(*t->slurm_id);
    if (store.SetSlurmJob(id, sid).ok()) t->slurm_id_unstored = false;
  }
}


bool SlurmBackend::Impl::CancelByUs(Tracked& t) {
  if (!t.slurm_id) return false;
  Status s = slurm.Cancel(*t.slurm_id);
  if (!s.ok()) {
    Warn(s);
    return false;
  }
  t.cancelled_by_us = true;
  return true;
}


// Whether `p` is the plan `t` runs (without ep when that is unknown).
bool SlurmBackend::Impl::IsRunningPlan(const Tracked& t, ParallelPlan p) {
  if (!t.plan_known) return false;
  if (!t.plan_ep_known) p.ep = t.plan.ep;
  return p == t.plan;
}


void SlurmBackend::Impl::Activate(Tracked& t) {
  const JobView* p = &t.view;
  auto it = std::lower_bound(active.begin(), active.end(), p,
                             [](const JobView* a, const JobView* b) { return a->index < b->index; });
  active.insert(it, p);
  found.decide = found.activated = true;
}


void SlurmBackend::Impl::Drop(Tracked& t) {
  // Profiling runs of a job that ends before they do (cancelled, rejected).
  for (const auto& [key, sid] : t.profiling) Warn(slurm.Cancel(sid));
  for (const auto& [key, sid] : t.profiling)
    Warn(store.RemoveSlurmRun(ProfileRunName(t.id, cluster.TypeName(key.first), key.second)));
  t.profiling.clear();
  auto it = std::find(active.begin(), active.end(), &t.view);
  if (it != active.end()) active.erase(it);
  belief.Forget(t.spec.id);
  jobs.erase(t.id);
  found.decide = true;
}


// "a100-80g x3 on n1:2,n2:1", with Slurm's node names.
std::string SlurmBackend::Impl::Describe(const Allocation& a) const {
  std::string out = cluster.TypeName(a.type) + " x" + std::to_string(a.gpus()) + " on ";
  for (size_t i = 0; i < a.parts.size(); ++i) {
    out += (i ? "," : "") + inv.names[a.parts[i].node] + ":" + std::to_string(a.parts[i].gpus);
  }
  return out;
}


// --- launching ---------------------------------------------------------------

bool SlurmBackend::Impl::ReadMetrics(Tracked& t, SimTime now) {
  Result<MetricsUpdate> u = t.metrics->Read();
  if (!u.ok()) return false;
  if (u->done) t.done_reported = true;
  int64_t bad = u->malformed;
  std::vector<StepSample> samples;
  std::string type = t.running.empty() ? "" : cluster.TypeName(t.running.type);
  for (const MetricsStep& s : u->steps) {
    // A training step past the job's last one is not the job's progress
    // (garbage): it must not make the job look done.
    if (!s.profile && t.dspec.iterations > 0 && s.step > t.dspec.iterations) {
      ++bad;
      continue;
    }
    StepSample o;
    o.time_us = s.time_s > 0 ? static_cast<int64_t>(s.time_s * 1e6) : now;
    o.gpu_type = type;
    o.gpus = t.running.gpus();
    o.step = s.step;
    o.step_time_s = s.step_time_s;
    o.samples = s.samples;
    o.profile = s.profile;
    o.loss = s.loss;
    samples.push_back(o);
    if (!s.profile) {
      t.last_step = std::max(t.last_step, s.step);
      t.recent.push_back(s.step_time_s);
    }
  }
  if (bad > 0) {
    // Said once per job, then at each doubling: the file is the job's.
    if (t.malformed_metrics == 0 || (t.malformed_metrics + bad) / 2 >= t.malformed_metrics) {
      std::fprintf(stderr, "tessel serve: job %lld: %lld malformed lines of %s skipped so far\n",
                   static_cast<long long>(t.id), static_cast<long long>(t.malformed_metrics + bad),
                   t.metrics->path().c_str());
    }
    t.malformed_metrics += bad;
  }
  if (samples.empty()) return u->more;
  Warn(store.AddStepTimes(t.id, samples).status());
  t.view.done_iterations = std::min(t.view.total_iterations, static_cast<double>(t.last_step));
  if (t.recent.size() > static_cast<size_t>(kCorrectionWindow))
    t.recent.erase(t.recent.begin(), t.recent.end() - kCorrectionWindow);
  Correct(t);
  return u->more;
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
void SlurmBackend::Impl::Correct(Tracked& t) {
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


// --- polling ----------------------------------------------------------------------

Status SlurmBackend::Impl::Poll(SimTime now) {
  auto nodes = slurm.ListNodes();
  if (!nodes.ok()) return nodes.status();
  std::map<std::string, const SlurmNode*> by_name;
  for (const SlurmNode& n : *nodes) by_name[n.name] = &n;
  std::vector<NodeStatus> statuses;
  for (size_t i = 0; i < inv.names.size(); ++i) {
    auto it = by_name.find(inv.names[i]);
    // New work only where Slurm may start it; running work moves only off a
    // node that is lost (drained, down, failing: SlurmNode::Lost), not off
    // one whose slurmd missed a ping or that Slurm does not know yet (its
    // jobs go on; Slurm declares it down after SlurmdTimeout if it stays so).
    bool ok = it != by_name.end() && it->second->Usable();
    bool gone = it == by_name.end() || it->second->Lost();
    powered[i] = it != by_name.end() && !it->second->HasFlag("POWERED_DOWN") &&
                 !it->second->HasFlag("POWERING_DOWN") && !it->second->HasFlag("POWER_DOWN");
    if (ok != (up[i] != 0)) {
      up[i] = ok ? 1 : 0;
      found.decide = true;
    }
    if (gone != (lost[i] != 0)) {
      lost[i] = gone ? 1 : 0;
      if (gone) NodeLost(static_cast<int>(i), now, it == by_name.end() ? "gone" : it->second->StateString());
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
  slurm_reachable = true;  // before what this poll may launch (Ended)
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
      // Asked to stop (SIGUSR1) and still running after --stop-timeout:
      // cancelled (SIGTERM, then SIGKILL after Slurm's KillWait); it
      // relaunches from its latest checkpoint. Retried at the next poll if
      // scancel failed.
      std::fprintf(stderr, "tessel serve: job %lld did not stop within %.0f s of being asked; cancelling Slurm job %lld\n",
                   static_cast<long long>(t->id), ToSeconds(opt.stop_timeout), static_cast<long long>(*t->slurm_id));
      CancelByUs(*t);
    }
    ReadMetrics(*t, now);
  }
  // Slurm jobs named after a tessel job that are neither its launch nor
  // one of its profiling runs: orphans (one naming rule for all of them).
  for (const SlurmJob& j : *sjobs) {
    if (IsFinished(j.state)) continue;
    int64_t id = IdFromName(j.name);
    if (id < 0) continue;
    auto it = jobs.find(id);
    bool known = false;
    if (it != jobs.end()) {
      known = it->second->slurm_id == j.id;
      for (const auto& [key, sid] : it->second->profiling) known |= sid == j.id;
    }
    if (!known) Warn(slurm.Cancel(j.id));
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
void SlurmBackend::Impl::NodeLost(int node, SimTime now, const std::string& state) {
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


void SlurmBackend::Impl::DrainInbox(SimTime now) {
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
    Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
    Drop(t);  // cancels its profiling runs too
  }
}


void SlurmBackend::Impl::ComputeFree() {
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


Tracked* SlurmBackend::Impl::ByIndex(int index) {
  for (auto& [id, t] : jobs)
    if (t->view.index == index) return t.get();
  return nullptr;
}

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


SimTime SlurmBackend::NextEvent() const { return impl_->next_poll; }

Result<BackendEvents> SlurmBackend::Advance(SimTime now) {
  Impl& m = *impl_;
  m.DrainInbox(now);
  if (now >= m.next_poll) {
    ++m.processed;
    const bool was_reachable = m.slurm_reachable;
    Status s = m.Poll(now);
    m.next_poll = now + m.opt.poll_interval;
    if (!s.ok()) std::fprintf(stderr, "tessel serve: polling Slurm: %s\n", s.ToString().c_str());
    m.RetryUnstored();
    if (s.ok() && !was_reachable) {
      std::fprintf(stderr, "tessel serve: Slurm is reachable again\n");
      m.found.decide = true;  // what waited for Slurm (launches) is decided again
    }
    m.slurm_reachable = s.ok();
    std::lock_guard<std::mutex> lock(m.status_mu);
    if (s.ok()) {
      m.reach = SlurmReach{};
    } else {
      if (m.reach.reachable) m.reach.since = now;
      m.reach.reachable = false;
      m.reach.error = s.message();
    }
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
    m.End(*t, JobState::kFailed, now, "rejected by the policy: " + why);
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
        m.End(*t, JobState::kFailed, now, p.status().message());
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

SlurmBackend::SlurmReach SlurmBackend::SlurmReachability() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->reach;
}

std::map<std::string, int64_t> SlurmBackend::GpusAllocatedByType() const {
  std::lock_guard<std::mutex> lock(impl_->status_mu);
  return impl_->allocated_by_type;
}

}  // namespace tessel
