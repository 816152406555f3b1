#include "core/helper_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tessel {
namespace {

// Pieces split between the owner and the helper cover every item once, and
// the owner sees the helper's writes after Wait: while the helper spins,
// once it has gone to sleep between pieces, and when a piece outlasts the
// owner's own spin.
TEST(HelperThread, RunsEachPieceAndWaitSeesItsWrites) {
  HelperThread helper;
  std::vector<int> done(257, 0);
  for (int round = 0; round < 300; ++round) {
    std::atomic<size_t> next{0};
    std::vector<char> by_helper(done.size(), 0);
    auto work = [&](bool on_helper) {
      for (size_t i; (i = next.fetch_add(1)) < done.size();) {
        ++done[i];
        by_helper[i] = on_helper;
      }
    };
    helper.Start([&] {
      work(true);
      if (round % 100 == 50) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // outlasts Wait's spin
    });
    work(false);
    helper.Wait();
    for (size_t i = 0; i < done.size(); ++i) ASSERT_EQ(done[i], round + 1) << "item " << i << " round " << round;
    if (round % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the helper sleeps
  }
}

TEST(HelperThread, StopsWithNothingHandedOver) {
  HelperThread idle;  // started and destroyed without work: must not hang
  HelperThread used;
  int ran = 0;
  used.Start([&] { ran = 1; });
  used.Wait();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace tessel
