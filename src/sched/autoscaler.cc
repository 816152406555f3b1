#include "sched/autoscaler.h"

#include <cmath>

#include "core/strings.h"

namespace tessel {

Result<AutoscaleConfig> ParseAutoscale(std::string_view text, int cluster_nodes, int window, std::string_view by) {
  if (window < 1 || window > 10000)
    return InvalidArgument("--autoscale-window: expected 1 to 10000 rounds, got " + std::to_string(window));
  TESSEL_RETURN_IF_ERROR(CheckSpeedupBasis(by));
  const std::string what = "--autoscale '" + std::string(text) +
                           "': expected MIN:MAX or MIN:MAX:LOW,HIGH (nodes 1 <= MIN <= MAX <= " +
                           std::to_string(cluster_nodes) + ", the cluster's; utilities 0 <= LOW < HIGH, default "
                           "0.35,0.65)";
  std::vector<std::string> parts = Split(std::string(text), ':');
  if (parts.size() != 2 && parts.size() != 3) return InvalidArgument(what);
  AutoscaleConfig c;
  c.window = window;
  c.basis = by == "throughput" ? SpeedupBasis::kThroughput : SpeedupBasis::kGoodput;
  auto whole = [](const std::string& s, int* out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *out = std::stoi(s);
    return true;
  };
  if (!whole(Trim(parts[0]), &c.min_nodes) || !whole(Trim(parts[1]), &c.max_nodes)) return InvalidArgument(what);
  if (c.min_nodes < 1 || c.min_nodes > c.max_nodes || c.max_nodes > cluster_nodes) return InvalidArgument(what);
  if (parts.size() == 3) {
    std::vector<std::string> band = Split(parts[2], ',');
    if (band.size() != 2) return InvalidArgument(what);
    auto lo = ParseDouble(Trim(band[0]), "--autoscale");
    auto hi = ParseDouble(Trim(band[1]), "--autoscale");
    if (!lo.ok() || !hi.ok() || !std::isfinite(*lo) || !std::isfinite(*hi) || *lo < 0 || *lo >= *hi)
      return InvalidArgument(what);
    c.low = *lo;
    c.high = *hi;
  }
  return c;
}

Status CheckSpeedupBasis(std::string_view by) {
  if (by == "goodput" || by == "throughput") return Status::Ok();
  return InvalidArgument("--autoscale-by '" + std::string(by) +
                         "': expected goodput (Pollux) or throughput (a throughput-based auto-scaler)");
}

Status CheckAutoscalePolicy(const Policy& policy) {
  const PolicyTraits traits = policy.traits();
  if (traits.uses_rounds && traits.prices_cluster_size) return Status::Ok();
  return InvalidArgument("--autoscale sizes the cluster by the jobs' goodput at each round; policy " +
                         std::string(policy.name()) + " does not price a cluster size (use pollux)");
}

Autoscaler::Autoscaler(AutoscaleConfig config, const Cluster& cluster)
    : config_(config), cluster_(cluster), target_(config.min_nodes) {}

namespace {

// GPUs per type on the cluster's first `nodes` nodes.
std::vector<int> FirstNodesCapacity(const Cluster& cluster, int nodes) {
  std::vector<int> capacity(cluster.types().size(), 0);
  for (int n = 0; n < nodes && n < static_cast<int>(cluster.nodes().size()); ++n)
    capacity[cluster.nodes()[n].type] += cluster.nodes()[n].gpus;
  return capacity;
}

int Sum(const std::vector<int>& v) {
  int s = 0;
  for (int x : v) s += x;
  return s;
}

Status CannotPrice(const Policy& policy) {
  return FailedPrecondition("--autoscale prices a cluster size by the jobs' goodput; policy " +
                            std::string(policy.name()) + " has no goodput model (use pollux)");
}

}  // namespace

Result<double> Autoscaler::UtilityAt(const Snapshot& snap, Policy& policy, int nodes) const {
  std::vector<int> capacity = FirstNodesCapacity(cluster_, nodes);
  const int gpus = Sum(capacity);
  if (gpus == 0) return 0.0;
  if (snap.jobs.empty()) return 0.0;
  std::optional<double> s = policy.TotalSpeedup(snap, capacity, config_.basis);
  if (!s) return CannotPrice(policy);
  return *s / gpus;
}

Result<int> Autoscaler::Round(const Snapshot& snap, Policy& policy, int powered) {
  if (!config_.enabled() || config_.max_nodes == config_.min_nodes) return target_;
  double utility = 0;
  if (!snap.jobs.empty()) {
    std::optional<double> s = policy.TotalSpeedup(snap, {}, config_.basis);
    if (!s) return CannotPrice(policy);
    const int gpus = Sum(FirstNodesCapacity(cluster_, powered));
    utility = gpus > 0 ? *s / gpus : 0;
  }
  window_.push_back(utility);
  if (static_cast<int>(window_.size()) <= config_.window) return target_;
  window_.pop_front();
  double mean = 0;
  for (double u : window_) mean += u;
  mean /= static_cast<double>(window_.size());
  if (!((powered > config_.min_nodes && mean < config_.low) || (powered < config_.max_nodes && mean > config_.high)))
    return target_;
  if (snap.jobs.empty()) {  // idle: no allocation to price, the least nodes
    target_ = config_.min_nodes;
    window_.clear();
    return target_;
  }
  // Cluster.autoscale: bisection for the count nearest the band's middle.
  const double aim = (config_.low + config_.high) / 2;
  int lo = config_.min_nodes, hi = config_.max_nodes, n = powered;
  while (lo + 1 < hi) {
    auto u = UtilityAt(snap, policy, n);
    if (!u.ok()) return u.status();
    if (*u == aim) {
      // Exactly the middle: this count (the artifact breaks out here and
      // still picks between the bounds, which skips it).
      target_ = n;
      window_.clear();
      return target_;
    }
    if (*u < aim) {
      hi = n;
    } else {
      lo = n;
    }
    n = (lo + hi) / 2;
  }
  auto ulo = UtilityAt(snap, policy, lo);
  if (!ulo.ok()) return ulo.status();
  auto uhi = UtilityAt(snap, policy, hi);
  if (!uhi.ok()) return uhi.status();
  target_ = std::abs(aim - *ulo) < std::abs(aim - *uhi) ? lo : hi;
  window_.clear();
  return target_;
}

}  // namespace tessel
