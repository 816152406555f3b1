#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <queue>
#include <random>

namespace tessel::sim_detail {
namespace {

// The queue hands out the live events in the order a plain priority queue
// does, and counts the same number of events by each clock, though it
// purged the stale ones long before their time: over 300,000 events, most
// of them completions made stale by a later re-size, with the clock
// advancing in uneven steps and events landing on the current instant.
TEST(EventQueue, SameLiveOrderAndCountAsAPlainHeap) {
  std::mt19937_64 rng(11);
  const int jobs = 2000;
  std::vector<uint64_t> version(jobs, 0);
  auto stale = [&](const Event& e) {
    return e.kind != EventKind::kNodeFail && e.kind != EventKind::kNodeRepair && version[e.target] != e.version;
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> plain;
  EventQueue queue;
  uint64_t seq = 0;
  int64_t plain_count = 0, queue_count = 0;
  int purges_with_future_stale = 0;
  SimTime now = 0;
  for (int step = 0; step < 20000; ++step) {
    now += static_cast<SimTime>(rng() % 3) * 1000;  // often the same instant
    // One pass over the events due now, as the backend's Advance does.
    size_t before = queue.size();
    queue_count += queue.Purge(now, stale);
    if (queue.size() < before) ++purges_with_future_stale;
    std::vector<Event> live_plain, live_queue;
    while (!plain.empty() && plain.top().time <= now) {
      Event e = plain.top();
      plain.pop();
      ++plain_count;
      if (!stale(e)) live_plain.push_back(e);
    }
    while (!queue.empty() && queue.top().time <= now) {
      Event e = queue.top();
      queue.pop();
      ++queue_count;
      if (!stale(e)) live_queue.push_back(e);
    }
    ASSERT_EQ(live_plain.size(), live_queue.size()) << "step " << step;
    for (size_t i = 0; i < live_plain.size(); ++i) ASSERT_EQ(live_plain[i].seq, live_queue[i].seq) << "step " << step;
    ASSERT_EQ(plain_count, queue_count + queue.PurgedBy(now)) << "step " << step;
    // Re-size some jobs: their pending events go stale; new ones follow,
    // far in the future, now, or soon; a node event now and then.
    for (int k = 0; k < 16; ++k) {
      int job = static_cast<int>(rng() % jobs);
      ++version[job];
      SimTime at = now + (rng() % 4 == 0 ? 0 : static_cast<SimTime>(rng() % 50'000'000));
      EventKind kind = rng() % 2 ? EventKind::kComplete : EventKind::kReady;
      Event e{at, kind, job, version[job], seq++};
      plain.push(e);
      queue.push(e);
    }
    if (rng() % 50 == 0) {
      Event e{now + static_cast<SimTime>(rng() % 1'000'000), EventKind::kNodeFail, static_cast<int>(rng() % 8), 0, seq++};
      plain.push(e);
      queue.push(e);
    }
  }
  EXPECT_GE(purges_with_future_stale, 2) << "the test must make the queue purge";
  // A run ending now counts the purged events the clock has passed only.
  EXPECT_EQ(plain_count, queue_count + queue.PurgedBy(now));
}

}  // namespace
}  // namespace tessel::sim_detail
