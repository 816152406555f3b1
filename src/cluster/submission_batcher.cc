#include "cluster/submission_batcher.h"

#include <algorithm>
#include <utility>

namespace tessel {

Result<int64_t> SubmissionBatcher::Add(const NewJob& job) {
  Waiter me{&job, std::nullopt};
  std::unique_lock lock(mu_);
  queue_.push_back(&me);
  while (!me.result) {
    if (committing_) {
      done_.wait(lock);
      continue;
    }
    // Lead one commit: take the oldest waiters (this one among them unless
    // more than kMaxBatch arrived first: then it leads again next).
    committing_ = true;
    const size_t n = std::min(queue_.size(), kMaxBatch);
    std::vector<Waiter*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    lock.unlock();
    std::vector<const NewJob*> jobs;
    jobs.reserve(batch.size());
    for (const Waiter* w : batch) jobs.push_back(w->job);
    Result<std::vector<int64_t>> ids = store_->AddJobs(jobs);
    lock.lock();
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i]->result = ids.ok() ? Result<int64_t>((*ids)[i]) : Result<int64_t>(ids.status());
    }
    ++batches_;
    committing_ = false;
    done_.notify_all();
  }
  return std::move(*me.result);
}

int64_t SubmissionBatcher::batches() const {
  std::lock_guard lock(mu_);
  return batches_;
}

}  // namespace tessel
