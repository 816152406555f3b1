#include "core/helper_thread.h"

#include <utility>

namespace tessel {

namespace {

// Spins before sleeping: the helper after a piece (about 0.2 ms), the
// owner in Wait (about 1 ms; the other half of a split search is rarely longer).
constexpr int kHelperSpins = 4000;
constexpr int kWaitSpins = 20000;

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

HelperThread::HelperThread() : thread_([this] { Loop(); }) {}

HelperThread::~HelperThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  thread_.join();
}

void HelperThread::Start(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    work_ = std::move(work);
    posted_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
}

void HelperThread::Wait() {
  const uint64_t target = posted_.load(std::memory_order_relaxed);
  for (int i = 0; i < kWaitSpins; ++i) {
    if (finished_.load(std::memory_order_acquire) == target) return;
    Pause();
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return finished_.load(std::memory_order_acquire) == target; });
}

bool HelperThread::Useful() {
  static const bool useful = std::thread::hardware_concurrency() >= 2;
  return useful;
}

void HelperThread::Loop() {
  uint64_t seen = 0;
  for (;;) {
    bool posted = false;
    for (int i = 0; i < kHelperSpins && !stop_.load(std::memory_order_relaxed); ++i) {
      if (posted_.load(std::memory_order_acquire) != seen) {
        posted = true;
        break;
      }
      Pause();
    }
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!posted) cv_.wait(lock, [&] { return posted_.load() != seen || stop_.load(); });
      if (posted_.load() == seen) return;  // stopped with nothing handed over
      work = std::move(work_);
    }
    work();
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_.store(++seen, std::memory_order_release);
    }
    cv_.notify_all();
  }
}

}  // namespace tessel
