#include "network/link_groups.h"

#include <algorithm>

namespace tessel {

void LinkGroups::Add(int id, const std::vector<std::vector<int>>& paths) {
  if (id >= static_cast<int>(links_of_.size())) {
    links_of_.resize(id + 1);
    present_.resize(id + 1, 0);
    seen_.resize(id + 1, 0);
  }
  std::vector<int>& links = links_of_[id];
  links.clear();
  for (const std::vector<int>& path : paths) links.insert(links.end(), path.begin(), path.end());
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  for (int l : links) on_link_[l].push_back(id);
  present_[id] = 1;
  ++members_;
  seeds_.push_back(id);
}

void LinkGroups::Remove(int id) {
  if (!Contains(id)) return;
  for (int l : links_of_[id]) {
    std::vector<int>& on = on_link_[l];
    auto it = std::find(on.begin(), on.end(), id);
    *it = on.back();
    on.pop_back();
    // Its neighbours' group may have split: each piece holds one of them.
    seeds_.insert(seeds_.end(), on.begin(), on.end());
  }
  links_of_[id].clear();
  present_[id] = 0;
  --members_;
}

std::vector<std::vector<int>> LinkGroups::GroupsOf(const std::vector<int>& seeds) const {
  std::vector<std::vector<int>> groups;
  std::vector<int> stack;
  for (int s : seeds) {
    if (!Contains(s) || seen_[s]) continue;
    std::vector<int> group;
    seen_[s] = 1;
    stack.push_back(s);
    while (!stack.empty()) {
      int j = stack.back();
      stack.pop_back();
      group.push_back(j);
      for (int l : links_of_[j]) {
        for (int k : on_link_[l]) {
          if (!seen_[k]) {
            seen_[k] = 1;
            stack.push_back(k);
          }
        }
      }
    }
    std::sort(group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  for (const std::vector<int>& g : groups)
    for (int j : g) seen_[j] = 0;
  std::sort(groups.begin(), groups.end(),
            [](const std::vector<int>& a, const std::vector<int>& b) { return a.front() < b.front(); });
  return groups;
}

std::vector<std::vector<int>> LinkGroups::TakeChanged() {
  std::vector<std::vector<int>> groups = GroupsOf(seeds_);
  seeds_.clear();
  return groups;
}

std::vector<std::vector<int>> LinkGroups::All() const {
  std::vector<int> ids;
  for (int id = 0; id < static_cast<int>(present_.size()); ++id)
    if (present_[id]) ids.push_back(id);
  return GroupsOf(ids);
}

}  // namespace tessel
