// JobFactsCache: what a policy derives about each job from its spec, the
// cluster and the belief alone, kept across decisions (srtf, tiresias,
// elasticflow, arena). Not thread-safe (one per policy instance).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/snapshot.h"
#include "policy/throughput.h"

namespace tessel {

// What a policy derives about a job from its spec, the cluster and the belief
// alone (CandidateTypes, rates), kept across decisions so that a decision
// costs a step through an array per job instead of the belief's answers.
// Facts are valid while the snapshots name the same cluster and belief and
// the belief's version() is unchanged: Begin forgets them all otherwise.
// A job is known by its index, checked against its spec's address.
template <typename T>
class JobFactsCache {
 public:
  // Starts a decision on `snapshot`: finds each of its jobs' facts (T{} for
  // a job not seen before) and forgets those of jobs no longer in it.
  // Snapshots list mostly the same jobs in the same order from one decision
  // to the next, so this is a walk beside the last one's list.
  void Begin(const Snapshot& snapshot) {
    const uint64_t version = snapshot.belief->version();
    if (snapshot.cluster != cluster_ || snapshot.belief != belief_ || version != version_) {
      slots_.clear();
      unused_.clear();
      slot_of_.clear();
      current_.clear();
      cluster_ = snapshot.cluster;
      belief_ = snapshot.belief;
      version_ = version;
    }
    ++stamp_;
    std::vector<int> next;
    next.reserve(snapshot.jobs.size());
    size_t cursor = 0;  // into current_, the last snapshot's slots
    for (const JobView* job : snapshot.jobs) {
      int id;
      if (cursor < current_.size() && slots_[current_[cursor]].index == job->index &&
          slots_[current_[cursor]].stamp != stamp_) {
        id = current_[cursor++];
      } else if (auto it = slot_of_.find(job->index); it != slot_of_.end()) {
        id = it->second;
        cursor = slots_[id].position + 1;
      } else {
        id = NewSlot(job->index);
      }
      Slot& slot = slots_[id];
      if (slot.spec != job->spec) {
        slot.spec = job->spec;
        slot.facts = T{};
      }
      slot.stamp = stamp_;
      next.push_back(id);
    }
    for (int id : current_) {
      if (slots_[id].stamp != stamp_) Release(id);
    }
    for (size_t p = 0; p < next.size(); ++p) slots_[next[p]].position = p;
    current_ = std::move(next);
  }

  // The facts of snapshot.jobs[position] of the snapshot Begin last saw,
  // for the caller to fill when empty (lazily: a part the caller never asks
  // for is never computed, so the belief is asked only what it would have
  // been asked anyway). Valid until the next Begin.
  T& At(size_t position) { return slots_[current_[position]].facts; }

 private:
  struct Slot {
    int index = -1;                 // the job's
    const JobSpec* spec = nullptr;  // the job's when the facts were made
    uint64_t stamp = 0;             // the last Begin that found the job
    size_t position = 0;            // in current_
    T facts{};
  };

  int NewSlot(int index) {
    int id;
    if (!unused_.empty()) {
      id = unused_.back();
      unused_.pop_back();
    } else {
      id = static_cast<int>(slots_.size());
      slots_.emplace_back();
    }
    slots_[id].index = index;
    slots_[id].spec = nullptr;
    slot_of_[index] = id;
    return id;
  }

  void Release(int id) {
    slot_of_.erase(slots_[id].index);
    slots_[id] = Slot{};
    unused_.push_back(id);
  }

  const Cluster* cluster_ = nullptr;
  const ThroughputModel* belief_ = nullptr;
  uint64_t version_ = 0;
  uint64_t stamp_ = 0;
  std::vector<Slot> slots_;
  std::vector<int> unused_;                // free slots
  std::unordered_map<int, int> slot_of_;  // job index -> slot
  std::vector<int> current_;               // per job of the last snapshot: its slot
};

}  // namespace tessel
