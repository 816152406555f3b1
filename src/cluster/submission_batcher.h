// Group commit for submissions: callers on many threads each hand over one
// job and wait until it is durable; whoever finds no commit under way
// stores every job waiting at that moment (up to kMaxBatch) in one
// transaction (Store::AddJobs: one fsync for all of them), then wakes them.
// With one caller at a time this is AddJob; with N concurrent submitters a
// commit costs one fsync instead of N, so durable submissions keep up
// under load (issue 36: >= 1,000 req/s). Nothing is acknowledged before its
// transaction committed; a failed transaction (a full disk) fails every job
// in it, and none of them is stored.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "cluster/store.h"
#include "core/status.h"

namespace tessel {

class SubmissionBatcher {
 public:
  static constexpr size_t kMaxBatch = 256;

  explicit SubmissionBatcher(Store* store) : store_(store) {}

  // Stores `job` (state pending) and returns its id once it is durable.
  Result<int64_t> Add(const NewJob& job);

  // Transactions committed or failed so far (tests read it).
  int64_t batches() const;

 private:
  struct Waiter {
    const NewJob* job;
    std::optional<Result<int64_t>> result;
  };

  Store* store_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::vector<Waiter*> queue_;
  bool committing_ = false;
  int64_t batches_ = 0;
};

}  // namespace tessel
