#include "cluster/submission_batcher.h"

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/faulty_disk_test_util.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

// A database file of its own under the test temp dir, removed afterwards.
struct TempDb {
  std::string dir;
  TempDb() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = (fs::path(::testing::TempDir()) /
           ("tessel_batcher_" + std::string(info->name()) + "_" + std::to_string(::getpid())))
              .string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDb() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path() const { return dir + "/tessel.db"; }
};

NewJob Job(const std::string& name) {
  NewJob j;
  j.name = name;
  j.user = "alice";
  j.spec_yaml = "name: " + name + "\n";
  j.spec_json = R"({"name":")" + name + R"("})";
  j.submitted_us = 1'000'000;
  return j;
}

TEST(SubmissionBatcherTest, ConcurrentSubmissionsAreEachStoredOnceUnderTheirOwnIds) {
  TempDb db;
  auto store = Store::Open(db.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  SubmissionBatcher batcher(store->get());
  constexpr int kThreads = 16, kEach = 40;
  std::vector<std::vector<int64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Result<int64_t> id = batcher.Add(Job("t" + std::to_string(t) + "-" + std::to_string(i)));
        ASSERT_TRUE(id.ok()) << id.status().ToString();
        ids[t].push_back(*id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> distinct;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      // Each caller got the id of its own job, not a neighbour's in the batch.
      auto stored = (*store)->Job(ids[t][i]);
      ASSERT_TRUE(stored.ok()) << stored.status().ToString();
      EXPECT_EQ(stored->name, "t" + std::to_string(t) + "-" + std::to_string(i));
      EXPECT_EQ(stored->state, JobState::kPending);
      distinct.insert(ids[t][i]);
    }
  }
  EXPECT_EQ(distinct.size(), size_t{kThreads * kEach});
  EXPECT_GE(batcher.batches(), 1);
  EXPECT_LE(batcher.batches(), kThreads * kEach);
  auto counts = (*store)->CountByState();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->at(JobState::kPending), kThreads * kEach);
}

TEST(SubmissionBatcherTest, AFullDiskFailsEverySubmissionAndStoresNone) {
  TempDb db;
  testing_util::FaultyDisk disk;
  auto store = Store::Open(db.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  SubmissionBatcher batcher(store->get());
  disk.Set(testing_util::DiskFault::kFull);
  std::vector<std::thread> threads;
  std::vector<Status> errors(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Result<int64_t> id = batcher.Add(Job("full-" + std::to_string(t)));
      errors[t] = id.ok() ? Status::Ok() : id.status();
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& s : errors) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("disk full"), std::string::npos) << s.ToString();
  }
  disk.Set(testing_util::DiskFault::kNone);
  auto counts = (*store)->CountByState();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->at(JobState::kPending), 0);
  Result<int64_t> id = batcher.Add(Job("after"));  // space again
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ((*store)->Job(*id)->name, "after");
}

TEST(SubmissionBatcherTest, AddJobsStoresABatchInOrderInOneTransaction) {
  TempDb db;
  auto store = Store::Open(db.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  NewJob a = Job("a"), b = Job("b"), c = Job("c");
  const NewJob* batch[] = {&a, &b, &c};
  auto ids = (*store)->AddJobs(batch);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  ASSERT_EQ(ids->size(), 3u);
  EXPECT_LT((*ids)[0], (*ids)[1]);
  EXPECT_LT((*ids)[1], (*ids)[2]);
  EXPECT_EQ((*store)->Job((*ids)[2])->name, "c");
  auto history = (*store)->History((*ids)[1]);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ(history->front().to, JobState::kPending);
}

}  // namespace
}  // namespace tessel
