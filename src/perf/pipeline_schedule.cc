#include "perf/pipeline_schedule.h"

#include <algorithm>
#include <cmath>

namespace tessel {
namespace {

// Where forward (or backward) op k of a stage's order goes: Megatron-Core's
// interleaved order puts micro-batches in groups of p, each group's
// micro-batches through chunk 0, then chunk 1, ... (backwards in reverse
// chunk order); with v = 1 it is micro-batch order. Interleaving needs M to
// be a multiple of p (ValidatePlan); otherwise the last group is short.
struct Order {
  int p, m, v;
  template <bool Interleaved>
  void At(int k, int* mb, int* chunk) const {
    if (!Interleaved) {
      *mb = k;
      *chunk = 0;
      return;
    }
    const int full = p * v;
    const int g = k / full, in_group = m - g * p < p ? m - g * p : p;
    const int r = k - g * full;
    *chunk = r / in_group;
    *mb = g * p + r % in_group;
  }
};

// Finish times per (stage, chunk, micro-batch), reused between calls.
struct Scratch {
  std::vector<double> fdone, bdone;
  std::vector<int> next, warmup;
  std::vector<double> free_at;
};

// Interleaved is v > 1; 1F1B's order needs no divisions (compiled apart).
template <bool Interleaved>
double SimulateOrder(const std::vector<PipelineStageTime>& stages, int m, int v) {
  const int p = static_cast<int>(stages.size());
  const Order order{p, m, v};
  const int ops = m * v;  // forwards (and backwards) per stage
  thread_local Scratch sc;
  const size_t cells = static_cast<size_t>(p) * v * m;
  sc.fdone.assign(cells, -1.0);
  sc.bdone.assign(cells, -1.0);
  sc.next.assign(p, 0);
  sc.free_at.assign(p, 0.0);
  sc.warmup.resize(p);
  for (int i = 0; i < p; ++i)
    sc.warmup[i] = std::clamp(v == 1 ? p - i - 1 : (p - i - 1) * 2 + (v - 1) * p, 0, ops);
  auto at = [&](int stage, int chunk, int mb) { return (static_cast<size_t>(stage) * v + chunk) * m + mb; };
  // Stage i's program: its warm-up forwards, then one forward and one
  // backward in turn, then the cool-down backwards. Position j is forward
  // op k (returns k + 1) or backward op k (returns -(k + 1)).
  auto op_at = [&](int i, int j) {
    const int w = sc.warmup[i];
    if (j < w) return j + 1;
    const int steady = 2 * (ops - w);
    if (j < w + steady) {
      const int r = j - w;
      return (r & 1) == 0 ? w + (r >> 1) + 1 : -((r >> 1) + 1);
    }
    return -(j - w - steady + (ops - w) + 1);
  };
  const int length = 2 * ops;
  size_t remaining = static_cast<size_t>(p) * length;
  // Sweeps alternate direction: forwards flow from stage 0 down, backwards
  // from the last stage up, so each sweep places a run of each.
  for (bool down = true; remaining > 0; down = !down) {
    bool progressed = false;
    for (int step = 0; step < p; ++step) {
      const int i = down ? step : p - 1 - step;
      while (sc.next[i] < length) {
        const int op = op_at(i, sc.next[i]);
        int mb, chunk;
        double ready, cost;
        size_t slot;
        if (op > 0) {
          order.At<Interleaved>(op - 1, &mb, &chunk);
          if (i > 0) ready = sc.fdone[at(i - 1, chunk, mb)];
          else if (chunk > 0) ready = sc.fdone[at(p - 1, chunk - 1, mb)];
          else ready = 0.0;
          cost = stages[i].fwd_s / v;
        } else {
          order.At<Interleaved>(-op - 1, &mb, &chunk);
          chunk = v - 1 - chunk;
          if (i < p - 1) ready = sc.bdone[at(i + 1, chunk, mb)];
          else if (chunk < v - 1) ready = sc.bdone[at(0, chunk + 1, mb)];
          else ready = sc.fdone[at(p - 1, v - 1, mb)];
          cost = stages[i].bwd_s / v;
        }
        if (ready < 0) break;  // its input has not arrived: try another stage
        slot = at(i, chunk, mb);
        const double start = std::max(sc.free_at[i], ready);
        sc.free_at[i] = start + cost;
        (op > 0 ? sc.fdone : sc.bdone)[slot] = sc.free_at[i];
        ++sc.next[i];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) return -1.0;  // the order waits on itself
  }
  return *std::max_element(sc.free_at.begin(), sc.free_at.end());
}

double Simulate(const std::vector<PipelineStageTime>& stages, int m, int v) {
  if (stages.empty() || m <= 0 || v <= 0) return 0.0;
  return v == 1 ? SimulateOrder<false>(stages, m, v) : SimulateOrder<true>(stages, m, v);
}

}  // namespace

double PipelineIterationTimeExact(const std::vector<PipelineStageTime>& stages, int micro_batches,
                                  int virtual_stages) {
  return Simulate(stages, micro_batches, virtual_stages);
}

double PipelineIterationTime(const std::vector<PipelineStageTime>& stages, int micro_batches, int virtual_stages) {
  const int p = static_cast<int>(stages.size());
  // In the steady state the slowest stage is busy throughout, so each
  // further group of p micro-batches adds p times its time. Place k groups
  // (plus M's remainder mod p, so that the last group is the same) and
  // k - 1; once the difference is that, the groups left are added at that
  // rate. Unequal stages can take several groups to get there (a queue
  // builds before the slowest stage): k doubles until it is reached, up to
  // placing every micro-batch.
  double slowest = 0;
  for (const auto& s : stages) slowest = std::max(slowest, s.fwd_s + s.bwd_s);
  const double group = p * slowest;
  const int tail = micro_batches % std::max(1, p);
  for (int groups = 2; p > 1; groups *= 2) {
    const int placed = groups * p + tail;
    if (micro_batches <= placed + p) break;
    double shorter = Simulate(stages, placed - p, virtual_stages);
    double longer = Simulate(stages, placed, virtual_stages);
    if (shorter < 0 || longer < 0) return -1.0;
    if (std::abs(longer - shorter - group) <= 1e-12 * longer) return longer + (micro_batches - placed) / p * group;
  }
  return Simulate(stages, micro_batches, virtual_stages);
}

}  // namespace tessel
