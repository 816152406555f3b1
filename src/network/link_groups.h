// The groups of jobs that share links, kept as jobs come and go.
//
// Two multi-node jobs whose rings cross a common link slow each other, and
// so, transitively, does every job connected to them that way: the network
// model rates such a group together (network_model.h). A simulation
// changes a few jobs at a time among hundreds spread over nodes; finding
// every group again after each change costs a pass over all of their
// paths. LinkGroups keeps, per link, the jobs on it, and after a change
// finds only the groups that changed: those holding a job added since, or
// a job that shared a link with one removed since. Every other group is
// exactly as it was.
//
// Ids are small non-negative integers (job indices). Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tessel {

class LinkGroups {
 public:
  explicit LinkGroups(int num_links) : on_link_(num_links) {}

  // Adds `id` (not present) on the links of `paths` (repeats are fine).
  void Add(int id, const std::vector<std::vector<int>>& paths);
  // Removes `id` (present or not: then nothing happens).
  void Remove(int id);
  bool Contains(int id) const { return id < static_cast<int>(links_of_.size()) && present_[id]; }
  int size() const { return members_; }

  // The groups that changed since the last call: each group of present
  // jobs connected through shared links that holds a job added since, or a
  // job that was on a link of a job removed since. Each group ascending,
  // groups in order of their first member. Groups not returned are the
  // same as when last returned.
  std::vector<std::vector<int>> TakeChanged();

  // Every group of the present jobs, in the same order (a job alone on its
  // links is a group of one).
  std::vector<std::vector<int>> All() const;

 private:
  // The groups holding `seeds` (present ones), ascending, by first member.
  std::vector<std::vector<int>> GroupsOf(const std::vector<int>& seeds) const;

  std::vector<std::vector<int>> on_link_;   // link -> present jobs on it
  std::vector<std::vector<int>> links_of_;  // id -> its distinct links
  std::vector<uint8_t> present_;            // by id
  std::vector<int> seeds_;                  // since the last TakeChanged
  mutable std::vector<uint8_t> seen_;       // GroupsOf's scratch, by id
  int members_ = 0;
};

}  // namespace tessel
