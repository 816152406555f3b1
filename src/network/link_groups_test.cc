#include "network/link_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace tessel {
namespace {

using Groups = std::vector<std::vector<int>>;

// Two jobs sharing a link are one group; a third on other links is alone.
TEST(LinkGroups, JobsSharingALinkAreOneGroup) {
  LinkGroups g(10);
  g.Add(0, {{1, 2}, {3}});
  g.Add(1, {{3, 4}});
  g.Add(2, {{7}});
  EXPECT_EQ(g.All(), (Groups{{0, 1}, {2}}));
  EXPECT_EQ(g.TakeChanged(), (Groups{{0, 1}, {2}}));
  EXPECT_TRUE(g.TakeChanged().empty());
}

// Removing the job that joined two others splits them: both pieces are
// reported, the untouched group is not.
TEST(LinkGroups, RemovingABridgeReportsBothPieces) {
  LinkGroups g(10);
  g.Add(4, {{1}});
  g.Add(5, {{1, 2}});
  g.Add(6, {{2}});
  g.Add(7, {{9}});
  g.TakeChanged();
  g.Remove(5);
  EXPECT_FALSE(g.Contains(5));
  EXPECT_EQ(g.size(), 3);
  EXPECT_EQ(g.TakeChanged(), (Groups{{4}, {6}}));
  g.Remove(5);  // absent: nothing
  EXPECT_TRUE(g.TakeChanged().empty());
  g.Add(5, {{2, 9}});
  EXPECT_EQ(g.TakeChanged(), (Groups{{5, 6, 7}}));
  EXPECT_EQ(g.All(), (Groups{{4}, {5, 6, 7}}));
}

// Random comings and goings: after each batch the groups reported are
// exactly the current groups that hold a job added in the batch or a job
// that shared a link with one removed in it, and every group not reported
// is one reported (or built) before, unchanged.
TEST(LinkGroups, ReportsExactlyTheGroupsThatChanged) {
  std::mt19937 rng(7);
  const int links = 40, ids = 60;
  LinkGroups g(links);
  std::vector<std::vector<std::vector<int>>> paths_of(ids);
  std::set<std::vector<int>> known;  // every group ever reported
  for (int batch = 0; batch < 400; ++batch) {
    Groups before = g.All();
    std::set<int> added, neighbours;
    int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      int id = static_cast<int>(rng() % ids);
      if (g.Contains(id)) {
        for (const auto& p : paths_of[id])
          for (int l : p)
            for (int other = 0; other < ids; ++other) {
              if (other == id || !g.Contains(other)) continue;
              for (const auto& q : paths_of[other])
                if (std::find(q.begin(), q.end(), l) != q.end()) neighbours.insert(other);
            }
        g.Remove(id);
        added.erase(id);
      } else {
        paths_of[id].clear();
        int hops = 1 + static_cast<int>(rng() % 3);
        for (int h = 0; h < hops; ++h) paths_of[id].push_back({static_cast<int>(rng() % links)});
        g.Add(id, paths_of[id]);
        added.insert(id);
      }
    }
    Groups now = g.All();
    Groups expected;
    for (const auto& group : now) {
      bool changed = false;
      for (int j : group) changed = changed || added.count(j) > 0 || neighbours.count(j) > 0;
      if (changed) {
        expected.push_back(group);
      } else {
        EXPECT_TRUE(known.count(group) > 0 || std::find(before.begin(), before.end(), group) != before.end())
            << "batch " << batch << ": a group no change touched is new";
      }
    }
    Groups reported = g.TakeChanged();
    ASSERT_EQ(reported, expected) << "batch " << batch;
    for (const auto& group : reported) known.insert(group);
  }
}

}  // namespace
}  // namespace tessel
