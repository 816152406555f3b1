// A second thread that runs one piece of work at a time beside its
// owner's: Start hands it the work, Wait returns once it is done. The
// thread is started once; between pieces it spins a little (then sleeps),
// and Wait spins a little (then sleeps), so a hand-over costs about a
// microsecond (BM_HelperThreadHandOver) rather than a thread start or two
// futex wake-ups: work of a few tens of microseconds is worth splitting. Used by the estimator's belief (policy/throughput.h) to search
// plans on two cores; answers never depend on which thread computed them.
// One owner thread only; not reentrant (work must not Start it again).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace tessel {

class HelperThread {
 public:
  HelperThread();
  ~HelperThread();
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  // Runs `work` on the helper. The previous piece must have been waited for.
  void Start(std::function<void()> work);
  // Blocks until the piece Start handed over has run.
  void Wait();

  // Whether the machine has a second core for a helper to use.
  static bool Useful();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> work_;         // guarded by mu_
  std::atomic<uint64_t> posted_{0};    // pieces handed over
  std::atomic<uint64_t> finished_{0};  // pieces run
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessel
