#include "plan/planner.h"

#include <algorithm>
#include <optional>
#include <cstdint>
#include <chrono>
#include <numeric>

namespace tessel {

Result<SearchMode> ParseSearchMode(std::string_view s) {
  if (s == "full") return SearchMode::kFull;
  if (s == "grid") return SearchMode::kGrid;
  return InvalidArgument("--search: unknown mode '" + std::string(s) + "'; known: full, grid");
}

namespace {

// Ascending divisors of n (none for n < 1), in O(sqrt n) steps with 64-bit
// arithmetic: a batch near INT_MAX neither overflows nor takes seconds.
std::vector<int> Divisors(int n) {
  std::vector<int> low, high;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    low.push_back(static_cast<int>(i));
    if (i * i != n) high.push_back(static_cast<int>(n / i));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// A plan as the search ranks it: by the time the framework's own search
// would see (the iteration time, unless the framework picks its plan itself
// and prices the gradient sync per micro-batch, or, for a CNN, sees its
// communication only), then the estimate's throughput, fewer pipeline
// stages, smaller t, larger micro-batch, less recompute, less sharding: a
// total, deterministic order.
struct Candidate {
  Estimate estimate;
  double ranked_s = 0;
};

double RankedSeconds(const Estimate& e, const FrameworkProfile& fw, bool cnn) {
  if (cnn && fw.search_sees_no_convolutions) return e.breakdown.CollectiveSeconds();
  if (!fw.search_prices_grad_sync_per_micro_batch) return e.iteration_time_s;
  return e.iteration_time_s + (e.plan.num_micro_batches - 1) * e.breakdown.dp_comm_s;
}

bool RanksByIterationTime(const FrameworkProfile& fw, bool cnn) {
  return !(cnn && fw.search_sees_no_convolutions) && !fw.search_prices_grad_sync_per_micro_batch;
}

bool Better(const Candidate& ca, const Candidate& cb) {
  if (ca.ranked_s != cb.ranked_s) return ca.ranked_s < cb.ranked_s;
  const Estimate &a = ca.estimate, &b = cb.estimate;
  if (a.samples_per_s != b.samples_per_s) return a.samples_per_s > b.samples_per_s;
  const ParallelPlan &x = a.plan, &y = b.plan;
  if (x.pp != y.pp) return x.pp < y.pp;
  if (x.tp != y.tp) return x.tp < y.tp;
  if (x.micro_batch != y.micro_batch) return x.micro_batch > y.micro_batch;
  if (x.virtual_stages != y.virtual_stages) return x.virtual_stages < y.virtual_stages;
  if (x.recompute != y.recompute) return x.recompute < y.recompute;
  if (x.zero != y.zero) return x.zero < y.zero;
  return x.ep < y.ep;
}

}  // namespace

Result<PlanResult> SearchPlans(const Estimator& estimator, const PlanRequest& req) {
  auto start = std::chrono::steady_clock::now();
  const ModelSpec& m = *req.model;
  const bool cnn = m.kind == ModelKind::kCnn;  // RankedSeconds: a search blind to convolutions
  const Topology& topo = req.topology;
  if (req.gpus <= 0) return InvalidArgument("--gpus: expected a positive integer");
  if (req.global_batch < 0 || (req.global_batch == 0 && req.micro_batch == 0))
    return InvalidArgument("--global-batch: expected a positive integer");
  if (req.top_k <= 0) return InvalidArgument("--top: expected a positive integer");
  if (topo.gpu->PeakTflops(req.precision) <= 0) {
    return InvalidArgument(std::string("--precision ") + PrecisionName(req.precision) +
                           ": not supported by " + topo.gpu->name);
  }
  if (req.mode == SearchMode::kGrid && req.pp <= 0)
    return InvalidArgument("--search grid: needs --pp P (the grid's number of pipeline stages)");
  if (req.pp < 0 || req.pp > req.gpus || (req.pp > 0 && req.gpus % req.pp != 0)) {
    return InvalidArgument("--pp " + std::to_string(req.pp) + ": must divide --gpus " +
                           std::to_string(req.gpus));
  }
  if (req.pp > m.NumLayers()) {
    return InvalidArgument("--pp " + std::to_string(req.pp) + ": more stages than the model's " +
                           std::to_string(m.NumLayers()) + " layers");
  }
  const bool grid = req.mode == SearchMode::kGrid;
  // With fused attention nothing is left for Megatron's selective
  // recompute to drop (it is the same plan as none); op-level selective
  // checkpointing (FSDP) still trades time for memory.
  // The default framework by (t, p, ZeRO) alone: the search does not turn a
  // ZeRO-1 pipeline into Megatron's by interleaving it (DefaultFrameworkFor's
  // v), so it never offers Megatron's distributed optimizer with
  // interleaving unless the request names the framework.
  auto FrameworkFor = [&](int t, int p, int z) -> const FrameworkProfile& {
    return req.framework ? *req.framework : DefaultFrameworkFor(estimator.params(), t, p, z);
  };
  auto selective_is_noop = [&](const FrameworkProfile& fw) {
    return m.kind == ModelKind::kTransformer && UsesFusedAttention(*topo.gpu, req.precision, fw) &&
           !fw.op_level_selective;
  };
  const bool transformer = m.kind == ModelKind::kTransformer;
  const int layers = m.NumLayers();

  PlanResult result;
  std::vector<Candidate> fitting;
  double least_memory = 1e300;
  std::optional<EstimateRequest> leanest;  // the failing plan needing least memory
  EstimateRequest er;
  er.model = req.model;
  er.topology = topo;
  er.gpus = req.gpus;
  er.global_batch = req.global_batch;
  er.framework = req.framework;
  // A failing plan matters only by its memory (the leanest failure).
  er.time_fitting_only = true;
  std::optional<EstimateMemo> own_memo;  // the candidates' shared layer costs
  er.memo = req.memo != nullptr ? req.memo : &own_memo.emplace();

  std::vector<int> pps;
  if (req.pp > 0) pps = {req.pp};
  else
    for (int p : Divisors(req.gpus))
      if (p <= layers) pps.push_back(p);
  std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  if (req.recompute) recomputes = {*req.recompute};

  for (int p : pps) {
    for (int t : Divisors(req.gpus / p)) {
      if (t > topo.gpus_per_node) break;
      if (req.tp > 0 && t != req.tp) continue;
      if (transformer && m.tf.heads % t != 0) continue;
      int d = req.gpus / (t * p);
      if (req.dp > 0 && d != req.dp) continue;
      int global_batch = req.global_batch;
      if (global_batch == 0) global_batch = req.micro_batch * std::max(1, req.num_micro_batches) * d;
      if (global_batch % d != 0) continue;
      int per_replica = global_batch / d;
      std::vector<int> eps = {1};
      if (transformer && m.tf.IsMoe()) {
        eps.clear();
        int g = std::gcd(d, m.tf.experts);
        for (int e = 1; e <= g; e *= 2)
          if (g % e == 0) eps.push_back(e);
        if (grid) eps = {eps.back()};  // the widest expert parallelism the grid allows
      }
      for (int mb : Divisors(per_replica)) {
        if (req.micro_batch > 0 && mb != req.micro_batch) continue;
        int M = per_replica / mb;
        if (req.micro_batch == 0 && req.num_micro_batches > 0 && M != req.num_micro_batches) continue;
        std::vector<int> vs = {1};
        if (p > 1 && M % p == 0) {
          std::vector<int> uneven;  // for frameworks that place layers unevenly
          for (int v = 2; v <= layers / p && v <= 8; ++v) (layers % (p * v) == 0 ? vs : uneven).push_back(v);
          // A grid tries every interleaving the full search does (even and
          // uneven splits): with p fixed it loses nothing to the full search.
          vs.insert(vs.end(), uneven.begin(), uneven.end());
        }
        if (req.virtual_stages > 0) {
          // A stated v is taken beyond the search's cap of 8 (NeMo's
          // recipes interleave one layer per virtual stage: v = 10, 20) when
          // the schedule allows it; divisibility is checked per framework below.
          const int v = req.virtual_stages;
          if (v > 1 && (p < 2 || M % p != 0 || v > layers / p)) continue;
          vs = {v};
        }
        for (int v : vs) {
          for (Recompute rc : recomputes) {
            int max_zero = std::min(req.max_zero, p == 1 ? 3 : 1);
            if (req.zero >= 0) max_zero = std::min(req.zero, 3);
            for (int z = req.zero >= 0 ? max_zero : 0; z <= max_zero; ++z) {
              if (z >= 1 && d == 1) break;
              const FrameworkProfile& fw = FrameworkFor(t, p, z);
              if (rc == Recompute::kSelective && recomputes.size() > 1 && selective_is_noop(fw)) continue;
              if (z > fw.max_zero) continue;
              if (req.zero < 0 && d > 1 && z < fw.min_zero_data_parallel) continue;
              if (v > 1 && !fw.interleaved_pipeline) continue;
              if (req.precision == Precision::kFp8 && !fw.fp8) continue;
              if (v > 1 && !fw.SplitsLayers(layers, p, v)) continue;
              for (int ep : eps) {
                ParallelPlan plan;
                plan.dp = d;
                plan.tp = t;
                plan.pp = p;
                plan.micro_batch = mb;
                plan.num_micro_batches = M;
                plan.virtual_stages = v;
                plan.recompute = rc;
                plan.zero = z;
                plan.ep = ep;
                plan.precision = req.precision;
                er.plan = plan;
                er.global_batch = global_batch;
                ++result.candidates_evaluated;
                er.explain = false;
                // Once top_k plans are kept, a plan ranked by its iteration
                // time needs pricing only if it may beat the last of them
                // (a margin of 1e-9 for rounding in the schedule's and the
                // bounds' sums).
                er.prune_above = !grid && static_cast<int>(fitting.size()) == req.top_k &&
                                         RanksByIterationTime(fw, cnn)
                                     ? fitting.back().ranked_s * (1 + 1e-9)
                                     : 0.0;
                Estimate e = estimator.RunUnchecked(er);
                // A pruned plan is slower than a kept one, so the search
                // has a plan and no use for the leanest failure.
                if (e.pruned) continue;
                if (e.fits) {
                  double ranked = RankedSeconds(e, fw, cnn);
                  Candidate cand{std::move(e), ranked};
                  if (grid) {
                    fitting.push_back(std::move(cand));
                  } else if (static_cast<int>(fitting.size()) < req.top_k || Better(cand, fitting.back())) {
                    // Only the best top_k are kept, in order (Better is a
                    // total order over distinct plans: the same as sorting all).
                    fitting.insert(std::upper_bound(fitting.begin(), fitting.end(), cand, Better), std::move(cand));
                    if (static_cast<int>(fitting.size()) > req.top_k) fitting.pop_back();
                  }
                } else if (fitting.empty() && e.memory_gib_per_gpu < least_memory) {
                  // (Once a plan fits the leanest failure goes unused.)
                  least_memory = e.memory_gib_per_gpu;
                  leanest = er;
                }
              }
            }
          }
        }
      }
    }
  }

  std::sort(fitting.begin(), fitting.end(), Better);
  if (grid) {
    // Pareto set over (throughput up, memory down), best throughput first.
    std::vector<Candidate> pareto;
    double min_mem = 1e300;
    for (auto& c : fitting) {
      if (c.estimate.memory_gib_per_gpu < min_mem - 1e-9) {
        min_mem = c.estimate.memory_gib_per_gpu;
        pareto.push_back(std::move(c));
      }
    }
    fitting = std::move(pareto);
  }
  if (static_cast<int>(fitting.size()) > req.top_k) fitting.resize(req.top_k);
  for (auto& c : fitting) result.plans.push_back(std::move(c.estimate));
  if (result.plans.empty()) {
    if (result.candidates_evaluated == 0 || !leanest) {
      result.reason = "no valid plan: no (t, p, d) divides the GPU count, heads and global batch";
    } else {
      leanest->explain = true;
      leanest->memo = nullptr;
      leanest->prune_above = 0;
      result.reason = "no plan fits in memory: the leanest plan tried (" + leanest->plan.ToString() + ") " +
                      estimator.RunUnchecked(*leanest).reason;
    }
  }
  result.search_time_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessel
