#include "policy/throughput.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/helper_thread.h"
#include "model/catalog.h"
#include "plan/planner.h"

namespace tessel {

Result<PlanMode> ParsePlanMode(std::string_view s) {
  if (s == "dp") return PlanMode::kDataParallel;
  if (s == "best") return PlanMode::kBest;
  return InvalidArgument("parallelism '" + std::string(s) + "': expected dp or best");
}

const char* PlanModeName(PlanMode m) { return m == PlanMode::kDataParallel ? "dp" : "best"; }

namespace {

struct RateKey {
  std::string model;
  int batch, type, gpus, nodes;
  int share64 = 64;  // network share in 64ths
  bool operator<(const RateKey& o) const {
    return std::tie(model, batch, type, gpus, nodes, share64) <
           std::tie(o.model, o.batch, o.type, o.gpus, o.nodes, o.share64);
  }
  bool operator==(const RateKey& o) const = default;
};
// A RateKey to look up without copying the model's name.
struct RateKeyView {
  std::string_view model;
  int batch, type, gpus, nodes;
  int share64 = 64;
};
struct RateKeyHash {
  using is_transparent = void;
  size_t operator()(const RateKey& k) const { return Hash(k.model, {k.batch, k.type, k.gpus, k.nodes, k.share64}); }
  size_t operator()(const RateKeyView& k) const {
    return Hash(k.model, {k.batch, k.type, k.gpus, k.nodes, k.share64});
  }
  static size_t Hash(std::string_view model, std::initializer_list<int> values) {
    size_t h = std::hash<std::string_view>()(model);
    for (int v : values) h = h * 1000003u ^ static_cast<size_t>(v);
    return h;
  }
};
struct RateKeyEqual {
  using is_transparent = void;
  bool operator()(const RateKey& a, const RateKey& b) const { return a == b; }
  bool operator()(const RateKeyView& a, const RateKey& b) const {
    return a.model == b.model && a.batch == b.batch && a.type == b.type && a.gpus == b.gpus && a.nodes == b.nodes &&
           a.share64 == b.share64;
  }
  bool operator()(const RateKey& a, const RateKeyView& b) const { return (*this)(b, a); }
};

// The network share RateShared answers for, in 64ths: rounded, and whole
// (64) on one node, where the job crosses no network.
int Share64(double network_share, int nodes) {
  int share64 = std::clamp(static_cast<int>(std::lround(network_share * 64)), 1, 64);
  return nodes <= 1 ? 64 : share64;
}

// The key RateShared answers `q` under.
RateKeyView ViewOf(const RateQuery& q) {
  return {q.job->model, q.job->global_batch, q.type, q.gpus, q.nodes, Share64(q.network_share, q.nodes)};
}
RateKey Owned(const RateKeyView& v) {
  return {std::string(v.model), v.batch, v.type, v.gpus, v.nodes, v.share64};
}

// The precision a job trains in on `gpu`: the model's own, or fp16 where
// the GPU lacks it (bf16 before Ampere), as frameworks fall back.
Precision PrecisionOn(const ModelSpec& model, const GpuSpec& gpu) {
  if (gpu.PeakTflops(model.default_precision) > 0) return model.default_precision;
  return Precision::kFp16;
}

}  // namespace

struct EstimatorThroughput::Impl {
  const Cluster& cluster;
  PlanMode mode;
  PerfParams params;
  Estimator estimator{params};
  // Layer costs shared by every search (the same models on many GPU counts),
  // and by the searches Prefetch's helper thread runs.
  mutable EstimateMemo memo;
  mutable EstimateMemo helper_memo;
  // The second thread (started on first use, where the machine has a
  // second core): Prefetch's and PlanSet's other searches.
  mutable std::unique_ptr<HelperThread> helper_thread;
  HelperThread* Helper() const {
    if (!HelperThread::Useful()) return nullptr;
    if (!helper_thread) helper_thread = std::make_unique<HelperThread>();
    return helper_thread.get();
  }
  // Runs work(0 .. n-1, memo) with each item taken in turn by this thread
  // (the belief's memo) and, for two or more where the machine has a second
  // core, the helper (its own memo). Answers must depend on the item alone.
  // The background searches (Anticipate) pause meanwhile.
  void Split(size_t n, const std::function<void(size_t, EstimateMemo*)>& work) const {
    std::atomic<size_t> next{0};
    auto take = [&](EstimateMemo* layer_memo) {
      for (size_t i; (i = next.fetch_add(1)) < n;) work(i, layer_memo);
    };
    HelperThread* helper = n >= 2 ? Helper() : nullptr;
    if (helper != nullptr) {
      PauseAhead();
      helper->Start([&] { take(&helper_memo); });
    }
    take(&memo);
    if (helper != nullptr) {
      helper->Wait();
      ResumeAhead();
    }
  }

  // Questions answered ahead (EstimatorThroughput::Anticipate): the helper
  // searches them one after another, in the order given, while this thread
  // goes on; a question asked meanwhile takes its answer when it is done,
  // waits for it while it is being searched, or is searched here when the
  // helper has not reached it. Answers depend on the question alone.
  enum class AheadState { kQueued, kRunning, kDone };
  struct AheadSlot {
    AheadState state = AheadState::kQueued;
    JobRate answer;
  };
  mutable std::mutex ahead_mu;
  mutable std::condition_variable ahead_done;
  mutable std::deque<RateKey> ahead_queue;  // guarded by ahead_mu
  mutable std::unordered_map<RateKey, AheadSlot, RateKeyHash, RateKeyEqual> ahead_slots;  // guarded
  mutable bool ahead_stop = false;     // guarded: the piece returns after its current search
  mutable bool ahead_running = false;  // guarded: the piece is taking questions
  // This thread's own: a piece handed to the helper and not yet waited for;
  // any question anticipated since the belief was made.
  mutable bool ahead_started = false;
  mutable bool ahead_used = false;

  // Takes the next queued question still wanted (marking it searched), under
  // `lock`; false when none is left.
  bool NextAhead(RateKey& key) const {
    while (!ahead_queue.empty()) {
      key = std::move(ahead_queue.front());
      ahead_queue.pop_front();
      auto slot = ahead_slots.find(key);
      // Gone: asked meanwhile and searched by the asker.
      if (slot != ahead_slots.end() && slot->second.state == AheadState::kQueued) {
        slot->second.state = AheadState::kRunning;
        return true;
      }
    }
    return false;
  }
  // Searches `key` with `layer_memo`, outside `lock`, and files its answer.
  void SearchAhead(const RateKey& key, EstimateMemo* layer_memo, std::unique_lock<std::mutex>& lock) const {
    lock.unlock();
    JobSpec job;  // its model and global batch: all a search reads of it
    job.model = key.model;
    job.global_batch = key.batch;
    JobRate answer = Compute(job, key.type, key.gpus, key.nodes, key.share64 / 64.0, layer_memo);
    lock.lock();
    AheadSlot& slot = ahead_slots.find(key)->second;
    slot.answer = std::move(answer);
    slot.state = AheadState::kDone;
    ahead_done.notify_all();
  }
  // The helper's piece: searches queued questions until none is left or
  // it is told to stop.
  void AheadPiece() const {
    std::unique_lock<std::mutex> lock(ahead_mu);
    RateKey next;
    while (!ahead_stop && NextAhead(next)) SearchAhead(next, &helper_memo, lock);
    ahead_running = false;
  }
  // Hands the helper the piece when questions wait and it is not taking them.
  void ResumeAhead() const {
    if (!ahead_used) return;
    HelperThread* helper = Helper();
    {
      std::lock_guard<std::mutex> lock(ahead_mu);
      if (ahead_running || ahead_queue.empty()) return;
      ahead_running = true;
      ahead_stop = false;
    }
    if (ahead_started) helper->Wait();  // the last piece has returned (or is returning)
    helper->Start([this] { AheadPiece(); });
    ahead_started = true;
  }
  // Stops the piece after its current search and waits for it.
  void PauseAhead() const {
    if (!ahead_started) return;
    {
      std::lock_guard<std::mutex> lock(ahead_mu);
      ahead_stop = true;
    }
    helper_thread->Wait();
    ahead_started = false;
    std::lock_guard<std::mutex> lock(ahead_mu);
    ahead_stop = false;
    ahead_running = false;
  }
  // The answer to `key` searched ahead (waiting for it while it is being
  // searched); nothing when it was not, or not yet (then it is not searched
  // ahead any more: the caller searches it).
  std::optional<JobRate> TakeAhead(const RateKeyView& key) const {
    if (!ahead_used) return std::nullopt;
    std::unique_lock<std::mutex> lock(ahead_mu);
    auto slot = ahead_slots.find(key);
    if (slot == ahead_slots.end()) return std::nullopt;
    if (slot->second.state == AheadState::kQueued) {
      ahead_slots.erase(slot);
      return std::nullopt;
    }
    // Being searched: meanwhile this thread searches the next queued ones
    // (the questions come in about the order they are asked).
    RateKey next;
    while (ahead_slots.find(key)->second.state != AheadState::kDone) {
      if (NextAhead(next)) {
        SearchAhead(next, &memo, lock);
      } else {
        ahead_done.wait(lock, [&] { return ahead_slots.find(key)->second.state == AheadState::kDone; });
      }
    }
    slot = ahead_slots.find(key);
    std::optional<JobRate> answer(std::move(slot->second.answer));
    ahead_slots.erase(slot);
    return answer;
  }
  ~Impl() { PauseAhead(); }
  std::unordered_map<RateKey, JobRate, RateKeyHash, RateKeyEqual> cache;  // nodes: answers stay put
  std::map<std::pair<RateKey, int>, std::vector<PlanChoice>> plan_sets;
  std::map<RateKey, std::optional<PlanChoice>> pipelines;  // gpus = stages

  Impl(const Cluster& c, PlanMode m, PerfParams p) : cluster(c), mode(m), params(std::move(p)) {}

  // The best plan under `req`, or nothing (reason set).
  JobRate Search(PlanRequest req) const {
    JobRate rate;
    auto result = SearchPlans(estimator, req);
    if (!result.ok()) {
      rate.reason = result.status().message();
      return rate;
    }
    if (result->plans.empty()) {
      rate.reason = result->reason.empty() ? "no parallel plan fits" : result->reason;
      return rate;
    }
    const Estimate& e = result->plans.front();
    rate.fits = true;
    rate.iteration_time_s = e.iteration_time_s;
    rate.samples_per_s = e.samples_per_s;
    rate.tokens_per_s = e.tokens_per_s;
    rate.plan = e.plan;
    AddNetwork(req, e, rate);
    return rate;
  }

  // The plan's inter-node traffic for the network model: the same plan
  // estimated with NICs a thousand times faster. What the iteration loses
  // to the NICs is the exposed part; what the collectives lose is the time
  // the traffic occupies them (an under-estimate by the intra-node part of
  // hierarchical collectives, small beside a NIC).
  void AddNetwork(const PlanRequest& req, const Estimate& e, JobRate& rate) const {
    if (req.gpus <= req.topology.gpus_per_node) return;
    EstimateRequest fast_req;
    fast_req.model = req.model;
    fast_req.topology = req.topology;
    fast_req.topology.network_gbps *= 1000;
    fast_req.gpus = req.gpus;
    fast_req.global_batch = req.global_batch;
    fast_req.plan = e.plan;
    fast_req.framework = req.framework;
    Estimate fast = estimator.RunUnchecked(fast_req);
    auto comm = [](const TimeBreakdown& b) { return b.CollectiveSeconds() + b.pp_p2p_s; };
    double it = e.iteration_time_s;
    rate.network_exposed_s = std::clamp(it - fast.iteration_time_s, 0.0, it);
    rate.network_s = std::clamp(comm(e.breakdown) - comm(fast.breakdown), rate.network_exposed_s, it);
  }

  // The planner request for `job` on `gpus` GPUs of `type` over `nodes`
  // (layer costs shared through `layer_memo`, the belief's own by default).
  PlanRequest Request(const ModelSpec& model, int type, int gpus, int nodes, double network_share,
                      EstimateMemo* layer_memo = nullptr) const {
    const GpuTypeInfo& info = cluster.types()[type];
    PlanRequest req;
    req.model = &model;
    req.topology = info.topology;
    req.topology.network_gbps *= network_share;
    // The job's GPUs are spread evenly over its nodes.
    req.topology.gpus_per_node = std::max(1, (gpus + nodes - 1) / std::max(1, nodes));
    req.gpus = gpus;
    req.precision = PrecisionOn(model, *info.gpu);
    req.top_k = 1;
    req.memo = layer_memo != nullptr ? layer_memo : &memo;
    return req;
  }

  // Grid searches for every stage count p dividing the GPU count, merged
  // into one Pareto set (time ascending, memory strictly falling). Uses
  // the job's global batch, rounded up to a multiple of the GPU count where
  // nothing fits otherwise (as Compute).
  std::vector<PlanChoice> PlanSet(const JobSpec& job, int type, int gpus, int nodes, int max_plans) const {
    auto model = FindModel(job.model);
    if (!model.ok()) return {};
    PlanRequest req = Request(**model, type, gpus, nodes, 1.0);
    req.mode = SearchMode::kGrid;
    req.top_k = std::max(1, max_plans);
    // One grid search per stage count, on two threads where the machine
    // has them (each its own layer memo), merged in stage-count order.
    auto search = [&](int batch) {
      std::vector<int> stages;
      for (int p = 1; p <= gpus && p <= (*model)->NumLayers(); p *= 2)
        if (gpus % p == 0) stages.push_back(p);
      std::vector<std::vector<Estimate>> found(stages.size());
      Split(stages.size(), [&](size_t i, EstimateMemo* layer_memo) {
        PlanRequest r = req;
        r.pp = stages[i];
        r.global_batch = batch;
        r.memo = layer_memo;
        auto result = SearchPlans(estimator, r);
        if (result.ok()) found[i] = std::move(result->plans);
      });
      std::vector<Estimate> all;
      for (auto& f : found) all.insert(all.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
      return all;
    };
    int batch = std::max(1, job.global_batch);
    double scale = 1;
    std::vector<Estimate> all = search(batch);
    if (all.empty() && batch % gpus != 0) {
      int rounded = (batch + gpus - 1) / gpus * gpus;
      all = search(rounded);
      scale = static_cast<double>(batch) / rounded;
    }
    std::stable_sort(all.begin(), all.end(), [](const Estimate& a, const Estimate& b) {
      if (a.iteration_time_s != b.iteration_time_s) return a.iteration_time_s < b.iteration_time_s;
      return a.memory_gib_per_gpu < b.memory_gib_per_gpu;
    });
    std::vector<PlanChoice> out;
    for (const Estimate& e : all) {
      if (!out.empty() && e.memory_gib_per_gpu >= out.back().memory_gib_per_gpu - 1e-9) continue;
      out.push_back({e.plan, e.iteration_time_s * scale, e.memory_gib_per_gpu});
      if (static_cast<int>(out.size()) == max_plans) break;
    }
    return out;
  }

  std::optional<PlanChoice> PipelinePlan(const JobSpec& job, int type, int stages, int nodes) const {
    auto model = FindModel(job.model);
    if (!model.ok() || stages < 1) return std::nullopt;
    PlanRequest req = Request(**model, type, stages, nodes, 1.0);
    req.global_batch = std::max(1, job.global_batch);
    req.pp = stages;
    req.dp = 1;
    req.tp = 1;
    req.virtual_stages = 1;
    auto result = SearchPlans(estimator, req);
    if (!result.ok() || result->plans.empty()) return std::nullopt;
    const Estimate& e = result->plans.front();
    return PlanChoice{e.plan, e.iteration_time_s, e.memory_gib_per_gpu};
  }

  JobRate Compute(const JobSpec& job, int type, int gpus, int nodes, double network_share = 1.0,
                  EstimateMemo* layer_memo = nullptr) const {
    JobRate rate;
    auto model = FindModel(job.model);
    if (!model.ok()) {
      rate.reason = model.status().message();
      return rate;
    }
    PlanRequest req = Request(**model, type, gpus, nodes, network_share, layer_memo);
    // A global batch the data-parallel degree cannot split evenly is rounded
    // up to the next multiple of the GPU count; the rate is scaled back.
    int batch = std::max(1, job.global_batch);
    auto attempt = [&](int b) {
      req.global_batch = b;
      if (mode == PlanMode::kDataParallel) {
        PlanRequest dp = req;
        dp.tp = 1;
        dp.pp = 1;
        dp.max_zero = 0;
        JobRate r = Search(dp);
        if (r.fits) return r;
      }
      return Search(req);
    };
    rate = attempt(batch);
    if (!rate.fits && batch % gpus != 0) {
      int rounded = (batch + gpus - 1) / gpus * gpus;
      JobRate r = attempt(rounded);
      if (r.fits) {
        // samples/s is what the hardware does; an iteration is `batch` samples.
        double scale = static_cast<double>(batch) / rounded;
        r.iteration_time_s *= scale;
        r.network_s *= scale;
        r.network_exposed_s *= scale;
        rate = r;
      }
    }
    return rate;
  }
};

EstimatorThroughput::EstimatorThroughput(const Cluster& cluster, PlanMode mode, PerfParams params)
    : impl_(std::make_unique<Impl>(cluster, mode, std::move(params))) {}

EstimatorThroughput::~EstimatorThroughput() = default;

const JobRate& EstimatorThroughput::Answer(const JobSpec& job, int type, int gpus, int nodes, int share64) {
  const RateKeyView view{job.model, job.global_batch, type, gpus, nodes, share64};
  auto it = impl_->cache.find(view);
  if (it != impl_->cache.end()) return it->second;
  ++misses_;
  std::optional<JobRate> ahead = impl_->TakeAhead(view);
  return impl_->cache
      .emplace(Owned(view), ahead ? std::move(*ahead) : impl_->Compute(job, type, gpus, nodes, share64 / 64.0))
      .first->second;
}

const JobRate& EstimatorThroughput::Rate(const JobSpec& job, int type, int gpus, int nodes) {
  return Answer(job, type, gpus, nodes, 64);
}

const JobRate& EstimatorThroughput::RateShared(const JobSpec& job, int type, int gpus, int nodes,
                                               double network_share) {
  return Answer(job, type, gpus, nodes, Share64(network_share, nodes));
}

void EstimatorThroughput::Anticipate(std::span<const RateQuery> queries) {
  if (queries.empty() || !HelperThread::Useful()) return;
  bool added = false;
  {
    std::lock_guard<std::mutex> lock(impl_->ahead_mu);
    for (const RateQuery& q : queries) {
      const RateKeyView view = ViewOf(q);
      if (impl_->cache.find(view) != impl_->cache.end() ||
          impl_->ahead_slots.find(view) != impl_->ahead_slots.end())
        continue;
      RateKey key = Owned(view);
      impl_->ahead_slots.emplace(key, Impl::AheadSlot{});
      impl_->ahead_queue.push_back(std::move(key));
      added = true;
    }
  }
  if (!added) return;
  impl_->ahead_used = true;
  impl_->ResumeAhead();
}

void EstimatorThroughput::Prefetch(std::span<const RateQuery> queries) {
  if (queries.size() < 2 || !HelperThread::Useful()) return;  // asked one by one, as soon
  // The questions RateShared would compute, each once, in order, with the
  // key and network share it uses.
  struct Todo {
    RateKey key;
    const RateQuery* q;
    double share;
  };
  std::vector<Todo> todo;
  for (const RateQuery& q : queries) {
    const RateKeyView view = ViewOf(q);
    if (impl_->cache.find(view) != impl_->cache.end()) continue;
    RateKey key = Owned(view);
    if (std::optional<JobRate> ahead = impl_->TakeAhead(view)) {
      ++misses_;
      impl_->cache.emplace(std::move(key), std::move(*ahead));
      continue;
    }
    if (std::any_of(todo.begin(), todo.end(), [&](const Todo& t) { return t.key == key; })) continue;
    todo.push_back({std::move(key), &q, view.share64 / 64.0});
  }
  if (todo.size() < 2) return;
  // Two threads take the next question in turn, the largest (most GPUs,
  // the longest searches) first so that they finish together; each answer
  // depends on its question alone, so which thread searched it changes nothing.
  std::vector<size_t> order(todo.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return todo[a].q->gpus > todo[b].q->gpus; });
  std::vector<JobRate> answers(todo.size());
  impl_->Split(order.size(), [&](size_t k, EstimateMemo* layer_memo) {
    const size_t i = order[k];
    const RateQuery& q = *todo[i].q;
    answers[i] = impl_->Compute(*q.job, q.type, q.gpus, q.nodes, todo[i].share, layer_memo);
  });
  for (size_t i = 0; i < todo.size(); ++i) {
    ++misses_;
    impl_->cache.emplace(std::move(todo[i].key), std::move(answers[i]));
  }
}

std::vector<PlanChoice> EstimatorThroughput::PlanSet(const JobSpec& job, int type, int gpus, int nodes,
                                                     int max_plans) {
  if (impl_->mode == PlanMode::kDataParallel) return ThroughputModel::PlanSet(job, type, gpus, nodes, max_plans);
  std::pair<RateKey, int> key{RateKey{job.model, job.global_batch, type, gpus, nodes}, max_plans};
  auto it = impl_->plan_sets.find(key);
  if (it != impl_->plan_sets.end()) return it->second;
  return impl_->plan_sets.emplace(std::move(key), impl_->PlanSet(job, type, gpus, nodes, max_plans)).first->second;
}

std::optional<PlanChoice> EstimatorThroughput::PipelinePlan(const JobSpec& job, int type, int stages, int nodes) {
  RateKey key{job.model, job.global_batch, type, stages, nodes};
  auto it = impl_->pipelines.find(key);
  if (it != impl_->pipelines.end()) return it->second;
  return impl_->pipelines.emplace(std::move(key), impl_->PipelinePlan(job, type, stages, nodes)).first->second;
}

}  // namespace tessel
