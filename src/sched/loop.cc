#include "sched/loop.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tessel {
namespace {

const JobView* FindActive(const Snapshot& snap, int index) {
  auto it = std::lower_bound(snap.jobs.begin(), snap.jobs.end(), index,
                             [](const JobView* j, int i) { return j->index < i; });
  return it != snap.jobs.end() && (*it)->index == index ? *it : nullptr;
}

}  // namespace

Status CheckDecision(const Snapshot& snap, const Decision& d, std::string_view policy_name) {
  const std::string policy(policy_name);
  const Cluster& cluster = *snap.cluster;
  std::vector<int> free(snap.free_gpus.begin(), snap.free_gpus.end());
  auto release = [&](const Allocation& a) {
    for (const Placement& p : a.parts) {
      if (p.node >= 0 && p.node < static_cast<int>(free.size()) && snap.node_up[p.node]) free[p.node] += p.gpus;
    }
  };
  std::unordered_set<int> rejected;
  for (const auto& [idx, why] : d.reject) {
    const JobView* j = FindActive(snap, idx);
    if (j == nullptr || !rejected.insert(idx).second) {
      return Internal("policy " + policy + " rejected job index " + std::to_string(idx) + ", which is not active");
    }
    release(j->alloc);
  }
  // Releases first, so a decision may hand GPUs from one job to another. A
  // job named twice is compared with what the first naming left it.
  std::unordered_map<int, Allocation> held;
  std::vector<std::pair<const JobView*, const Allocation*>> grants;
  for (const auto& [idx, alloc] : d.assign) {
    const JobView* j = FindActive(snap, idx);
    if (j == nullptr || rejected.count(idx)) {
      return Internal("policy " + policy + " assigned job index " + std::to_string(idx) + ", which is not active");
    }
    auto named = held.find(idx);
    // Most jobs keep what they hold: no copy of it is needed for those.
    if (named == held.end() && j->alloc == alloc) continue;
    if (named == held.end()) named = held.emplace(idx, j->alloc).first;
    Allocation& current = named->second;
    if (current == alloc) continue;
    release(current);
    current = Allocation{};
    if (!alloc.empty()) grants.push_back({j, &alloc});
  }
  for (const auto& [j, alloc] : grants) {
    if (alloc->type < 0 || alloc->type >= static_cast<int>(cluster.types().size())) {
      return Internal("policy " + policy + " gave job " + j->spec->id + " an allocation without a valid GPU type");
    }
    for (const Placement& p : alloc->parts) {
      bool valid_node = p.node >= 0 && p.node < static_cast<int>(free.size());
      if (!valid_node || cluster.nodes()[p.node].type != alloc->type || p.gpus <= 0 || free[p.node] < p.gpus) {
        return Internal("policy " + policy + " gave job " + j->spec->id + " " + alloc->ToString(cluster) +
                        ", but node " + std::to_string(p.node) + " has " +
                        (valid_node ? std::to_string(free[p.node]) : std::string("no")) + " free GPUs of that type");
      }
      free[p.node] -= p.gpus;
    }
  }
  return Status::Ok();
}

SchedulerLoop::SchedulerLoop(Policy& policy, Backend& backend, Clock& clock, LoopConfig config)
    : policy_(policy),
      backend_(backend),
      clock_(clock),
      config_(config),
      uses_rounds_(policy.traits().uses_rounds),
      now_(clock.Now()) {}

void SchedulerLoop::ScheduleRound() {
  SimTime r = config_.round;
  next_round_ = (now_ / r + 1) * r;
}

void SchedulerLoop::Stop() {
  stop_ = true;
  clock_.Notify();
}

void SchedulerLoop::Poke() {
  poked_ = true;
  clock_.Notify();
}

Status SchedulerLoop::Run() {
  while (true) {
    Result<bool> more = Step();
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
  }
}

Result<bool> SchedulerLoop::Step() {
  if (stop_ || backend_.Finished()) return false;
  // The next time anything happens: the backend's next event or a timer.
  SimTime t = std::min(backend_.NextEvent(), next_round_);
  if (!wakes_.empty()) t = std::min(t, wakes_.top());
  if (again_) t = now_;
  if (t == kNever && clock_.simulated()) {
    return Internal("simulation stalled at " + FormatDuration(now_) + " with " + backend_.Outstanding() +
                    " and nothing scheduled");
  }
  if (t != kNever && t > config_.horizon) return false;
  if (t < now_) {
    if (clock_.simulated()) {
      return Internal("simulation event at " + FormatDuration(t) + " before the current time " +
                      FormatDuration(now_) + " (a delay too large to represent?)");
    }
    t = now_;  // a late wake-up on a real clock
  }
  now_ = std::max(now_, clock_.WaitUntil(t));
  if (stop_) return false;

  Result<BackendEvents> events = backend_.Advance(now_);
  if (!events.ok()) return events.status();
  bool decide = events->decide || poked_.exchange(false) || std::exchange(again_, false);
  if (events->activated && uses_rounds_ && next_round_ == kNever) ScheduleRound();
  bool round = false;
  if (next_round_ <= now_) {
    round = true;
    next_round_ = kNever;
    ++timer_events_;
  }
  while (!wakes_.empty() && wakes_.top() <= now_) {
    if (wakes_.top() == next_wake_) next_wake_ = kNever;
    wakes_.pop();
    ++timer_events_;
    decide = true;
  }
  if (round && autoscaler_ != nullptr) {
    Snapshot snap;
    backend_.Observe(now_, &snap);
    snap.now = now_;
    snap.round_length = config_.round;
    snap.at_round = true;
    Result<int> target = autoscaler_->Round(snap, policy_, backend_.PoweredNodes());
    if (!target.ok()) return target.status();
    TESSEL_RETURN_IF_ERROR(backend_.PowerNodes(*target, now_));
  }
  if (round && backend_.HasActiveJobs()) {
    decide = true;
    ScheduleRound();
  } else if (round && autoscaler_ != nullptr && backend_.PoweredNodes() > autoscaler_->config().min_nodes) {
    ScheduleRound();  // an idle cluster keeps being measured until it has shrunk
  }
  bool released = false;
  if (decide && backend_.HasActiveJobs()) {
    auto start = std::chrono::steady_clock::now();
    last_decision_at_round_ = round;
    Snapshot snap;
    backend_.Observe(now_, &snap);
    snap.now = now_;
    snap.round_length = config_.round;
    snap.at_round = round;
    Decision d = policy_.Decide(snap);
    ++decisions_;
    if (!d.error.ok()) return Status(d.error.code(), "policy " + std::string(policy_.name()) + ": " + d.error.message());
    TESSEL_RETURN_IF_ERROR(CheckDecision(snap, d, policy_.name()));
    // Released GPUs (suspended, shrank or moved a job holding some) or
    // rejected jobs: what a grant refused by the backend does not do. Read
    // before Apply, which changes the jobs the snapshot points to.
    released = !d.reject.empty();
    for (const auto& [idx, alloc] : d.assign) {
      const JobView* j = FindActive(snap, idx);
      released |= j != nullptr && !j->alloc.empty() && j->alloc != alloc;
    }
    TESSEL_RETURN_IF_ERROR(backend_.Apply(d, now_));
    if (d.wake_at != kNever && d.wake_at > now_ &&
        (next_wake_ == kNever || d.wake_at < next_wake_ || next_wake_ <= now_)) {
      next_wake_ = d.wake_at;
      wakes_.push(d.wake_at);
    }
    last_decision_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    decision_times_.Add(last_decision_s_);
    if (after_decision_) after_decision_(now_, round, snap.jobs.size(), d.assign.size() + d.reject.size(), last_decision_s_);
  }
  backend_.Settle(now_);
  if (after_step_) after_step_(now_);
  // Nothing will ever change: a round-based policy may still wait for its
  // next round to act; otherwise only rounds/failures would follow forever.
  // A decision that released GPUs or rejected jobs yet left nothing running
  // did not see the state it made: the policy gets one more decision at
  // this instant, on that state. (Finite: after it nothing holds GPUs, so
  // only rejections can call for yet another.)
  if (backend_.Quiescent()) {
    if (released) {
      again_ = true;
      return true;
    }
    if (!(uses_rounds_ && !last_decision_at_round_)) return false;
  }
  return true;
}

}  // namespace tessel
