#include "cluster/store.h"

#include "cluster/faulty_disk_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace tessel {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::path(testing::TempDir()) / "tessel_store_XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::unique_ptr<Store> OpenOrDie(const std::string& path) {
  auto store = Store::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

// Test submissions: MakeJob("a").User("bob").Priority(3).
class MakeJob {
 public:
  explicit MakeJob(const std::string& name) {
    job_.name = name;
    job_.user = "alice";
    job_.spec_yaml = "name: " + name + "\nmodel: gpt3-125m\n";
    job_.spec_json = R"({"name":")" + name + R"("})";
    job_.file = name + ".yaml";
    job_.submitted_us = 1'000'000;
    job_.checkpoint_dir = "/ckpt/" + name;
  }
  MakeJob& User(const std::string& u) {
    job_.user = u;
    return *this;
  }
  MakeJob& Priority(int p) {
    job_.priority = p;
    return *this;
  }
  MakeJob& At(int64_t us) {
    job_.submitted_us = us;
    return *this;
  }
  operator NewJob() const { return job_; }  // NOLINT: builder

 private:
  NewJob job_;
};

int64_t AddOrDie(Store& store, const NewJob& job) {
  auto id = store.AddJob(job);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : -1;
}

// Runs one SQL statement on the file directly, as another program would.
void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(StoreTest, JobStateNamesRoundTrip) {
  for (JobState s : AllJobStates()) {
    auto parsed = ParseJobState(JobStateName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(AllJobStates().size(), 8u);
  EXPECT_EQ(ParseJobState("runing").status().message(),
            "unknown job state 'runing'; known: pending, profiling, starting, running, "
            "reconfiguring, completed, failed, cancelled");
  EXPECT_TRUE(IsTerminal(JobState::kCompleted));
  EXPECT_TRUE(IsTerminal(JobState::kFailed));
  EXPECT_TRUE(IsTerminal(JobState::kCancelled));
  EXPECT_FALSE(IsTerminal(JobState::kReconfiguring));
}

TEST(StoreTest, AddJobRoundTripsEveryField) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  NewJob in = MakeJob("tiny-a").User("bob").Priority(-2).At(1'700'000'000'000'000);
  in.spec_yaml = std::string("name: tiny-a\n# \xc3\xa9t\xc3\xa9\n") + std::string(1, '\0') + "x";
  int64_t id = AddOrDie(*store, in);
  EXPECT_EQ(id, 1);
  EXPECT_EQ(AddOrDie(*store, MakeJob("tiny-b")), 2);

  auto job = store->Job(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  StoredJob want;
  want.id = id;
  want.name = "tiny-a";
  want.user = "bob";
  want.state = JobState::kPending;
  want.spec_yaml = in.spec_yaml;  // verbatim, embedded NUL included
  want.spec_json = in.spec_json;
  want.file = "tiny-a.yaml";
  want.priority = -2;
  want.submitted_us = 1'700'000'000'000'000;
  want.reason = "submitted";
  want.checkpoint_dir = "/ckpt/tiny-a";
  EXPECT_EQ(*job, want);

  auto history = store->History(id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0], (TransitionRecord{id, 1'700'000'000'000'000, std::nullopt,
                                             JobState::kPending, "submitted"}));
}

TEST(StoreTest, TransitionsAreRecordedInOrderWithReasons) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a").At(100));
  ASSERT_TRUE(store->Transition(id, JobState::kProfiling, 200, "profiling on a100-80g").ok());
  ASSERT_TRUE(store->Transition(id, JobState::kStarting, 300, "allocated 2 x a100-80g").ok());
  ASSERT_TRUE(store->Transition(id, JobState::kRunning, 400, "slurm job 17 running").ok());
  ASSERT_TRUE(store->Transition(id, JobState::kReconfiguring, 500, "shrink to 1 GPU").ok());
  ASSERT_TRUE(store->Transition(id, JobState::kRunning, 600, "resumed").ok());
  ASSERT_TRUE(store->Transition(id, JobState::kCompleted, 700, "exit 0").ok());

  auto history = store->History(id);
  ASSERT_TRUE(history.ok());
  std::vector<TransitionRecord> want = {
      {id, 100, std::nullopt, JobState::kPending, "submitted"},
      {id, 200, JobState::kPending, JobState::kProfiling, "profiling on a100-80g"},
      {id, 300, JobState::kProfiling, JobState::kStarting, "allocated 2 x a100-80g"},
      {id, 400, JobState::kStarting, JobState::kRunning, "slurm job 17 running"},
      {id, 500, JobState::kRunning, JobState::kReconfiguring, "shrink to 1 GPU"},
      {id, 600, JobState::kReconfiguring, JobState::kRunning, "resumed"},
      {id, 700, JobState::kRunning, JobState::kCompleted, "exit 0"},
  };
  EXPECT_EQ(*history, want);
  auto job = store->Job(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state, JobState::kCompleted);
  EXPECT_EQ(job->reason, "exit 0");
  EXPECT_EQ(job->started_us, 400);  // the first start, not the resumption
  EXPECT_EQ(job->finished_us, 700);
}

TEST(StoreTest, TerminalStatesAreFinal) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  for (JobState end : {JobState::kCompleted, JobState::kFailed, JobState::kCancelled}) {
    int64_t id = AddOrDie(*store, MakeJob("a"));
    ASSERT_TRUE(store->Transition(id, end, 10, "end").ok());
    for (JobState to : AllJobStates()) {
      Status st = store->Transition(id, to, 20, "again");
      EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << JobStateName(end);
    }
    EXPECT_EQ(store->History(id)->size(), 2u);
    EXPECT_EQ(store->Job(id)->finished_us, 10);
  }
  Status st = store->Transition(1, JobState::kPending, 20, "requeue");
  EXPECT_EQ(st.message(), "job 1: cannot change state from completed to pending: completed is final");
}

TEST(StoreTest, TransitionCompareAndSet) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a"));
  Status st = store->Transition(id, JobState::kRunning, 10, "x", JobState::kStarting);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "job 1: cannot change state from pending to running: expected it to be starting");
  EXPECT_EQ(store->Job(id)->state, JobState::kPending);
  EXPECT_EQ(store->History(id)->size(), 1u);

  EXPECT_TRUE(store->Transition(id, JobState::kStarting, 10, "go", JobState::kPending).ok());
  EXPECT_EQ(store->Job(id)->state, JobState::kStarting);

  // Two racing callers: exactly one compare-and-set wins.
  int wins = 0;
  for (int i = 0; i < 2; ++i)
    wins += store->Transition(id, JobState::kRunning, 20, "race", JobState::kStarting).ok();
  EXPECT_EQ(wins, 1);

  st = store->Transition(id, JobState::kRunning, 30, "again");
  EXPECT_EQ(st.message(), "job 1: cannot change state from running to running: it is already running");
}

TEST(StoreTest, UnknownJobsAreNotFound) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  EXPECT_EQ(store->Job(42).status().message(), "job 42: no such job");
  EXPECT_EQ(store->Transition(42, JobState::kRunning, 1, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->SetAllocation(42, {"a100-80g", 1, {"n1"}, "", ""}, 1).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store->SetSlurmJob(42, "7").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->AddCounters(42, {1, 0, 0}).code(), StatusCode::kNotFound);
  StepSample s{1, "a100-80g", 1, 1, 0.5, 32, false};
  EXPECT_EQ(store->AddStepTimes(42, {&s, 1}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->History(42).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Steps(42, 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->SetCorrection(42, {"a100-80g", 1.1, 3, ""}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Corrections(42).status().code(), StatusCode::kNotFound);
}

TEST(StoreTest, AllocationSlurmJobAndCounters) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a"));
  StoredAllocation alloc{"a100-80g", 4, {"node-1", "node-2"}, R"({"per_node":[2,2]})",
                   R"({"d":2,"t":2,"p":1})"};
  ASSERT_TRUE(store->SetAllocation(id, alloc, 5000).ok());
  ASSERT_TRUE(store->SetSlurmJob(id, "1234").ok());
  ASSERT_TRUE(store->AddCounters(id, {1, 0, 2}).ok());
  ASSERT_TRUE(store->AddCounters(id, {0, 1, 1}).ok());
  auto job = store->Job(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->allocation, alloc);
  EXPECT_EQ(job->allocated_us, 5000);
  EXPECT_EQ(job->slurm_job_id, "1234");
  EXPECT_EQ(job->restarts, 1);
  EXPECT_EQ(job->failures, 1);
  EXPECT_EQ(job->launch_count, 3);
  EXPECT_EQ(job->state, JobState::kPending);  // none of these change the state

  ASSERT_TRUE(store->SetAllocation(id, StoredAllocation{"ignored", 0, {"x"}, "y", "z"}, 6000).ok());
  ASSERT_TRUE(store->SetSlurmJob(id, std::nullopt).ok());
  job = store->Job(id);
  EXPECT_EQ(job->allocation, StoredAllocation{});
  EXPECT_EQ(job->allocated_us, std::nullopt);
  EXPECT_EQ(job->slurm_job_id, std::nullopt);

  EXPECT_EQ(store->AddCounters(id, {-1, 0, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->SetAllocation(id, StoredAllocation{"a100-80g", -1, {}, "", ""}, 1).code(),
            StatusCode::kInvalidArgument);
}

TEST(StoreTest, StepIngestionIsIdempotent) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a"));
  std::vector<StepSample> profile = {
      {100, "v100-32g", 1, 1, 0.90, 8, true},
      {110, "v100-32g", 1, 2, 0.80, 8, true},
  };
  std::vector<StepSample> training = {
      {200, "a100-80g", 2, 1, 0.50, 32, false},
      {210, "a100-80g", 2, 2, 0.40, 32, false},
      {220, "a100-80g", 2, 3, 0.45, 32, false},
  };
  EXPECT_EQ(*store->AddStepTimes(id, profile), 2);
  EXPECT_EQ(*store->AddStepTimes(id, training), 3);  // same step numbers, not profiling
  // Re-reading the metrics file, with one new line at its end.
  training.push_back({230, "a100-80g", 2, 4, 0.42, 32, false});
  EXPECT_EQ(*store->AddStepTimes(id, training), 1);
  EXPECT_EQ(*store->AddStepTimes(id, training), 0);

  auto all = store->Steps(id, 100);
  ASSERT_TRUE(all.ok());
  std::vector<StepSample> want = profile;
  want.insert(want.end(), training.begin(), training.end());
  EXPECT_EQ(*all, want);
  auto last2 = store->Steps(id, 2);
  ASSERT_TRUE(last2.ok());
  EXPECT_EQ(*last2, (std::vector<StepSample>{training[2], training[3]}));
  EXPECT_EQ(store->Steps(id, 0).status().code(), StatusCode::kInvalidArgument);

  // A bad sample rejects the whole batch.
  std::vector<StepSample> bad = {{300, "a100-80g", 2, 5, 0.4, 32, false},
                                 {310, "a100-80g", 2, 6, std::nan(""), 32, false}};
  Status st = store->AddStepTimes(id, bad).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Steps(id, 100)->size(), 6u);
}

TEST(StoreTest, CorrectionsProfilesAndMeta) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a"));
  ASSERT_TRUE(store->SetCorrection(id, {"v100-32g", 1.25, 4, ""}).ok());
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 0.9, 10, ""}).ok());
  ASSERT_TRUE(store->SetCorrection(id, {"v100-32g", 1.2, 5, ""}).ok());  // replaces
  EXPECT_EQ(*store->Corrections(id),
            (std::vector<Correction>{{"a100-80g", 0.9, 10, ""}, {"v100-32g", 1.2, 5, ""}}));
  EXPECT_EQ(store->SetCorrection(id, {"a100-80g", 0, 1, ""}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->SetCorrection(id, {"a100-80g", INFINITY, 1, ""}).code(),
            StatusCode::kInvalidArgument);

  ProfileRecord p1{"gpt3-125m", "a100-80g", 6, 4, 0.12, 10};
  ProfileRecord p2{"gpt3-125m", "a100-80g", 12, 4, 0.23, 11};
  ProfileRecord other{"llama2-7b", "a100-80g", 6, 4, 1.5, 12};
  ASSERT_TRUE(store->PutProfile(p2).ok());
  ASSERT_TRUE(store->PutProfile(p1).ok());
  ASSERT_TRUE(store->PutProfile(other).ok());
  p1.step_time_s = 0.11;
  p1.time_us = 20;
  ASSERT_TRUE(store->PutProfile(p1).ok());  // re-measured: replaces
  EXPECT_EQ(*store->Profiles("gpt3-125m"), (std::vector<ProfileRecord>{p1, p2}));
  EXPECT_TRUE(store->Profiles("none")->empty());

  EXPECT_EQ(*store->GetMeta("policy"), std::nullopt);
  ASSERT_TRUE(store->SetMeta("policy", "arena").ok());
  ASSERT_TRUE(store->SetMeta("policy", "sia").ok());
  EXPECT_EQ(*store->GetMeta("policy"), "sia");
}

TEST(StoreTest, CorrectionsAreKeyedByTypeAndScope) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a"));
  const std::string plan = "plan=d1 t1 p2 mb4x2 rc=none z0 bf16";
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.1, 3, ""}).ok());
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.3, 0, "stages=2"}).ok());
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.2, 3, plan}).ok());
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.25, 5, plan}).ok());  // replaces only this scope
  // By type, then scope ('' < 'plan=...' < 'stages=...').
  EXPECT_EQ(*store->Corrections(id), (std::vector<Correction>{{"a100-80g", 1.1, 3, ""},
                                                              {"a100-80g", 1.25, 5, plan},
                                                              {"a100-80g", 1.3, 0, "stages=2"}}));
}

// A database written by schema version 1 (corrections without a scope)
// opens, migrates, and keeps its corrections as the type's (scope '').
// The version-1 file is made by turning a fresh one back: version 2
// changed only the corrections table.
TEST(StoreTest, JobsPageByIdAfterAndLimit) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  std::vector<int64_t> ids;
  for (const char* n : {"a", "b", "c", "d", "e"}) ids.push_back(AddOrDie(*store, MakeJob(n)));
  ASSERT_TRUE(store->Transition(ids[2], JobState::kCancelled, 5, "by alice").ok());
  auto names = [&](const JobFilter& f) {
    std::string out;
    const std::vector<StoredJob> jobs = store->Jobs(f).value();
    for (const StoredJob& j : jobs) out += j.name;
    return out;
  };
  EXPECT_EQ(names(JobFilter{}), "abcde");
  EXPECT_EQ(names(JobFilter{.limit = 2}), "ab");
  EXPECT_EQ(names(JobFilter{.after = ids[1], .limit = 2}), "cd");
  EXPECT_EQ(names(JobFilter{.include_terminal = false, .after = ids[1], .limit = 2}), "de");
  EXPECT_EQ(names(JobFilter{.user = "alice", .after = ids[3]}), "e");
  EXPECT_EQ(names(JobFilter{.after = ids[4]}), "");
}

// The API's read-only connection: it sees what the writer committed (also
// while the writer holds the file open), refuses writes, and refuses a
// database of another schema version.
TEST(StoreTest, AReaderSeesCommittedStateAndCannotWrite) {
  TempDir dir;
  std::string path = dir.File("state.db");
  auto writer = OpenOrDie(path);
  int64_t a = AddOrDie(*writer, MakeJob("a"));
  auto reader = Store::OpenReader(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->Job(a)->name, "a");
  int64_t b = AddOrDie(*writer, MakeJob("b"));
  ASSERT_TRUE(writer->Transition(a, JobState::kCancelled, 5, "by alice").ok());
  EXPECT_EQ((*reader)->Job(b)->name, "b") << "a later commit is visible at once";
  EXPECT_EQ((*reader)->Job(a)->state, JobState::kCancelled);
  EXPECT_FALSE((*reader)->AddJob(MakeJob("c")).ok()) << "read-only";
  RawSql(path, "PRAGMA user_version = 2");
  auto old = Store::OpenReader(path);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("schema version 2"), std::string::npos) << old.status().message();
}

TEST(StoreTest, StepLossRoundTripsAndMustBeFinite) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t id = AddOrDie(*store, MakeJob("a"));
  std::vector<StepSample> steps = {{200, "a100-80g", 2, 1, 0.5, 32, false, 5.545},
                                   {210, "a100-80g", 2, 2, 0.4, 32, false, std::nullopt}};
  EXPECT_EQ(*store->AddStepTimes(id, steps), 2);
  EXPECT_EQ(*store->Steps(id, 10), steps);
  std::vector<StepSample> bad = {{220, "a100-80g", 2, 3, 0.4, 32, false, std::numeric_limits<double>::infinity()}};
  Status st = store->AddStepTimes(id, bad).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("loss must be finite"), std::string::npos) << st.message();
  EXPECT_EQ(store->Steps(id, 10)->size(), 2u);
}

// A version-4 store (step times without a loss) opens at version 5: its
// steps keep their times and read back without a loss; new ones keep theirs.
TEST(StoreTest, Version4DatabaseMigratesStepsWithoutLoss) {
  TempDir dir;
  std::string path = dir.File("state.db");
  int64_t id;
  std::vector<StepSample> old = {{200, "a100-80g", 2, 1, 0.5, 32, false}};
  {
    auto store = OpenOrDie(path);
    id = AddOrDie(*store, MakeJob("a"));
    ASSERT_EQ(*store->AddStepTimes(id, old), 1);
  }
  RawSql(path, "ALTER TABLE step_times DROP COLUMN loss; PRAGMA user_version = 4;");
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->Steps(id, 10), old);
  std::vector<StepSample> next = {{210, "a100-80g", 2, 2, 0.4, 32, false, 4.25}};
  ASSERT_EQ(*store->AddStepTimes(id, next), 1);
  EXPECT_EQ(store->Steps(id, 10)->back().loss, std::optional<double>(4.25));
  EXPECT_TRUE(store->CheckIntegrity().ok());
}

TEST(StoreTest, Version1DatabaseMigratesKeepingCorrections) {
  TempDir dir;
  std::string path = dir.File("state.db");
  int64_t id;
  {
    auto store = OpenOrDie(path);
    id = AddOrDie(*store, MakeJob("a"));
  }
  ASSERT_EQ(Store::SchemaVersion(), 5);
  RawSql(path,
         "ALTER TABLE step_times DROP COLUMN loss;"
         "DROP TABLE slurm_runs;"
         "DROP TABLE corrections;"
         "CREATE TABLE corrections (job_id INTEGER NOT NULL REFERENCES jobs (id), gpu_type TEXT NOT NULL, "
         "factor REAL NOT NULL, samples INTEGER NOT NULL, PRIMARY KEY (job_id, gpu_type));"
         "INSERT INTO corrections VALUES (" + std::to_string(id) + ", 'a100-80g', 1.5, 7);"
         "INSERT INTO corrections VALUES (" + std::to_string(id) + ", 'v100-32g', 0.8, 2);"
         "PRAGMA user_version = 1;");
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->Corrections(id),
            (std::vector<Correction>{{"a100-80g", 1.5, 7, ""}, {"v100-32g", 0.8, 2, ""}}));
  // The new key: a scoped row beside the type's, and the type's replaced in place.
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.4, 0, "stages=4"}).ok());
  ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.6, 9, ""}).ok());
  EXPECT_EQ(*store->Corrections(id), (std::vector<Correction>{{"a100-80g", 1.6, 9, ""},
                                                              {"a100-80g", 1.4, 0, "stages=4"},
                                                              {"v100-32g", 0.8, 2, ""}}));
  EXPECT_TRUE(store->CheckIntegrity().ok());
  store.reset();
  store = OpenOrDie(path);  // at version 2 now: opens without migrating again
  EXPECT_EQ(store->Corrections(id)->size(), 3u);
}

// Reads cost the page, not every job stored: each shape of the jobs list
// and /metrics' sums are answered from an index (migration 4).
TEST(StoreTest, ListsAndSumsUseTheirIndexes) {
  TempDir dir;
  std::string path = dir.File("state.db");
  { OpenOrDie(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto plan = [&](const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    std::string out;
    while (st && sqlite3_step(st) == SQLITE_ROW) out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 3))) + "; ";
    sqlite3_finalize(st);
    return out;
  };
  const std::string user = "alice";
  EXPECT_NE(plan(Store::JobsSql({std::nullopt, false})).find("USING INDEX jobs_active"), std::string::npos)
      << plan(Store::JobsSql({std::nullopt, false}));
  EXPECT_NE(plan(Store::JobsSql({user, false})).find("USING INDEX jobs_active_by_user"), std::string::npos)
      << plan(Store::JobsSql({user, false}));
  EXPECT_NE(plan(Store::JobsSql({user, true})).find("USING INDEX jobs_by_user_id"), std::string::npos)
      << plan(Store::JobsSql({user, true}));
  EXPECT_NE(plan(Store::JobsSql({std::nullopt, true})).find("PRIMARY KEY"), std::string::npos)
      << plan(Store::JobsSql({std::nullopt, true}));
  const std::string sums = plan("SELECT COALESCE(SUM(restarts), 0), COALESCE(SUM(failures), 0) FROM jobs");
  EXPECT_NE(sums.find("COVERING INDEX jobs_counters"), std::string::npos) << sums;
  sqlite3_close(db);
}

TEST(StoreTest, JobsFilterAndCountByState) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  int64_t a = AddOrDie(*store, MakeJob("a").User("alice"));
  int64_t b = AddOrDie(*store, MakeJob("b").User("bob"));
  int64_t c = AddOrDie(*store, MakeJob("c").User("alice"));
  int64_t d = AddOrDie(*store, MakeJob("d").User("alice"));
  ASSERT_TRUE(store->Transition(a, JobState::kRunning, 1, "go").ok());
  ASSERT_TRUE(store->Transition(c, JobState::kCancelled, 1, "by user").ok());

  auto ids = [&](const JobFilter& f) {
    std::vector<int64_t> out;
    auto jobs = store->Jobs(f);
    EXPECT_TRUE(jobs.ok());
    for (const auto& j : *jobs) out.push_back(j.id);
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<int64_t>{a, b, c, d}));
  EXPECT_EQ(ids({std::nullopt, false}), (std::vector<int64_t>{a, b, d}));
  EXPECT_EQ(ids({"alice", true}), (std::vector<int64_t>{a, c, d}));
  EXPECT_EQ(ids({"alice", false}), (std::vector<int64_t>{a, d}));
  EXPECT_TRUE(ids({"carol", true}).empty());

  auto counts = store->CountByState();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->size(), AllJobStates().size());
  EXPECT_EQ(counts->at(JobState::kPending), 2);
  EXPECT_EQ(counts->at(JobState::kRunning), 1);
  EXPECT_EQ(counts->at(JobState::kCancelled), 1);
  EXPECT_EQ(counts->at(JobState::kFailed), 0);

  auto none = store->RestartAndFailureTotals();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, std::make_pair(int64_t{0}, int64_t{0}));
  ASSERT_TRUE(store->AddCounters(a, CounterDelta{.restarts = 2, .failures = 1}).ok());
  ASSERT_TRUE(store->AddCounters(c, CounterDelta{.restarts = 1, .failures = 3}).ok());
  auto totals = store->RestartAndFailureTotals();
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(*totals, std::make_pair(int64_t{3}, int64_t{4}));
}

TEST(StoreTest, ConcurrentWritersAndReaders) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("state.db"));
  constexpr int kThreads = 4;
  constexpr int kJobsPerThread = 15;
  std::vector<std::vector<int64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kJobsPerThread; ++i) {
        auto id = store->AddJob(MakeJob("t" + std::to_string(t) + "-" + std::to_string(i)));
        ASSERT_TRUE(id.ok()) << id.status().ToString();
        ids[t].push_back(*id);
        ASSERT_TRUE(store->Transition(*id, JobState::kStarting, 1, "s").ok());
        ASSERT_TRUE(store->SetAllocation(*id, {"a100-80g", 1, {"n" + std::to_string(t)}, "", ""}, 2).ok());
        ASSERT_TRUE(store->Transition(*id, JobState::kRunning, 3, "r").ok());
        StepSample s[2] = {{4, "a100-80g", 1, 1, 0.5, 8, false}, {5, "a100-80g", 1, 2, 0.5, 8, false}};
        ASSERT_EQ(*store->AddStepTimes(*id, s), 2);
        ASSERT_TRUE(store->AddCounters(*id, {0, 0, 1}).ok());
      }
    });
  }
  threads.emplace_back([&] {  // a reader, as the HTTP server would be
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(store->Jobs({}).ok());
      ASSERT_TRUE(store->CountByState().ok());
    }
  });
  for (auto& th : threads) th.join();

  std::set<int64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kJobsPerThread));
  for (int64_t id : all) {
    auto job = store->Job(id);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->state, JobState::kRunning);
    EXPECT_EQ(job->launch_count, 1);
    EXPECT_EQ(job->allocation.gpus, 1);
    EXPECT_EQ(store->History(id)->size(), 3u);
    EXPECT_EQ(store->Steps(id, 10)->size(), 2u);
  }
  EXPECT_EQ(store->CountByState()->at(JobState::kRunning), kThreads * kJobsPerThread);
  EXPECT_TRUE(store->CheckIntegrity().ok());
}

TEST(StoreTest, ReopenKeepsEverything) {
  TempDir dir;
  std::string path = dir.File("state.db");
  StoredJob before;
  std::vector<TransitionRecord> history;
  {
    auto store = OpenOrDie(path);
    int64_t id = AddOrDie(*store, MakeJob("a"));
    ASSERT_TRUE(store->Transition(id, JobState::kRunning, 7, "go").ok());
    ASSERT_TRUE(store->SetAllocation(id, {"a100-80g", 2, {"n1"}, "{}", "{}"}, 8).ok());
    ASSERT_TRUE(store->SetSlurmJob(id, "99").ok());
    StepSample s{9, "a100-80g", 2, 1, 0.3, 16, false};
    ASSERT_TRUE(store->AddStepTimes(id, {&s, 1}).ok());
    ASSERT_TRUE(store->SetCorrection(id, {"a100-80g", 1.1, 1, ""}).ok());
    ASSERT_TRUE(store->PutProfile({"k", "a100-80g", 1, 1, 0.1, 1}).ok());
    ASSERT_TRUE(store->SetMeta("policy", "arena").ok());
    before = *store->Job(id);
    history = *store->History(id);
  }
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->Job(1), before);
  EXPECT_EQ(*store->History(1), history);
  EXPECT_EQ(store->Steps(1, 10)->size(), 1u);
  EXPECT_EQ(store->Corrections(1)->size(), 1u);
  EXPECT_EQ(store->Profiles("k")->size(), 1u);
  EXPECT_EQ(*store->GetMeta("policy"), "arena");
  EXPECT_EQ(AddOrDie(*store, MakeJob("b")), 2);
}

TEST(StoreTest, IdsAreNeverReused) {
  TempDir dir;
  std::string path = dir.File("state.db");
  {
    auto store = OpenOrDie(path);
    for (const char* n : {"a", "b", "c"}) AddOrDie(*store, MakeJob(n));
  }
  RawSql(path, "DELETE FROM transitions WHERE job_id = 3; DELETE FROM jobs WHERE id = 3;");
  auto store = OpenOrDie(path);
  EXPECT_EQ(AddOrDie(*store, MakeJob("d")), 4);
}

TEST(StoreTest, SchemaVersionIsRecordedAndNewerIsRefused) {
  TempDir dir;
  std::string path = dir.File("state.db");
  { OpenOrDie(path); }
  EXPECT_GE(Store::SchemaVersion(), 1);
  RawSql(path, "PRAGMA user_version = " + std::to_string(Store::SchemaVersion() + 1));
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            "state database " + path + ": schema version " +
                std::to_string(Store::SchemaVersion() + 1) + " is newer than this tessel knows (" +
                std::to_string(Store::SchemaVersion()) +
                "); it was written by a newer tessel: upgrade, or use another database");
}

TEST(StoreTest, GarbageFileIsRefusedNamingThePath) {
  TempDir dir;
  std::string path = dir.File("jobs.yaml");
  std::ofstream(path) << "name: not a database\n" << std::string(5000, 'x');
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.status().message(),
            "state database " + path + ": not a SQLite database (file is not a database)");
  // Left as it was.
  EXPECT_EQ(fs::file_size(path), 5021u);

  auto missing_dir = Store::Open(dir.File("no/such/dir/state.db"));
  ASSERT_FALSE(missing_dir.ok());
  EXPECT_EQ(missing_dir.status().message(), "state database " + dir.File("no/such/dir/state.db") +
                                                ": cannot open: unable to open database file");
}

// A full disk under the state directory: every write is refused as
// Unavailable naming the directory and "disk full", nothing of it is half
// stored, reads go on, and writes work again once there is space.
TEST(StoreTest, AFullDiskRefusesWritesAsUnavailableAndKeepsNothingHalfStored) {
  for (testing_util::DiskFault fault : {testing_util::DiskFault::kFull, testing_util::DiskFault::kIoErrorEnospc}) {
    SCOPED_TRACE(fault == testing_util::DiskFault::kFull ? "SQLITE_FULL" : "SQLITE_IOERR_WRITE with ENOSPC");
    TempDir dir;
    std::string path = dir.File("tessel.db");
    testing_util::FaultyDisk disk;
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    int64_t a = AddOrDie(*store, MakeJob("a"));
    ASSERT_TRUE(store->Transition(a, JobState::kRunning, 2'000'000, "running").ok());

    disk.Set(fault);
    auto refused = store->AddJob(MakeJob("b"));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();
    const std::string& msg = refused.status().message();
    EXPECT_NE(msg.find("disk full"), std::string::npos) << msg;
    EXPECT_NE(msg.find("state directory " + fs::path(path).parent_path().string()), std::string::npos) << msg;
    Status t = store->Transition(a, JobState::kCompleted, 3'000'000, "finished");
    EXPECT_EQ(t.code(), StatusCode::kUnavailable) << t.ToString();
    EXPECT_NE(t.message().find("disk full"), std::string::npos) << t.ToString();
    EXPECT_EQ(store->SetSlurmJob(a, "42").code(), StatusCode::kUnavailable);
    // Reads go on, and show nothing of the refused writes.
    auto jobs = store->Jobs(JobFilter{std::nullopt, /*include_terminal=*/true});
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ((*jobs)[0].state, JobState::kRunning);
    EXPECT_FALSE((*jobs)[0].slurm_job_id.has_value());
    EXPECT_EQ(store->History(a)->size(), 2u);

    disk.Set(testing_util::DiskFault::kNone);  // space again: the same writes succeed
    int64_t b = AddOrDie(*store, MakeJob("b"));
    EXPECT_EQ(b, a + 1);
    EXPECT_TRUE(store->Transition(a, JobState::kCompleted, 3'000'000, "finished").ok());
    EXPECT_EQ(store->History(a)->size(), 3u);
    EXPECT_EQ(store->History(b)->size(), 1u);
    EXPECT_TRUE(store->CheckIntegrity().ok()) << store->CheckIntegrity().ToString();
    store.reset();
    auto reopened = OpenOrDie(path);
    ASSERT_NE(reopened, nullptr);
    EXPECT_EQ(reopened->Jobs(JobFilter{std::nullopt, true})->size(), 2u);
  }
}


// One acknowledgement from the child: submission `seq` of `round` got `id`.
struct Ack {
  int64_t round;
  int64_t seq;
  int64_t id;
};

NewJob CrashJob(int64_t round, int64_t seq) {
  std::string name = "r" + std::to_string(round) + "-" + std::to_string(seq);
  NewJob job = MakeJob(name).At(round * 1'000'000 + seq);
  job.spec_yaml += std::string(static_cast<size_t>(seq % 7) * 300, 'y');  // varied sizes
  return job;
}

[[noreturn]] void SubmitUntilKilled(const std::string& path, int64_t round, int fd) {
  auto store = Store::Open(path);
  if (!store.ok()) _exit(2);
  for (int64_t seq = 0;; ++seq) {
    auto id = (*store)->AddJob(CrashJob(round, seq));
    if (!id.ok()) _exit(3);
    if (!(*store)->Transition(*id, JobState::kProfiling, seq, "profiling").ok()) _exit(4);
    Ack ack{round, seq, *id};  // written only after both calls returned
    if (write(fd, &ack, sizeof(ack)) != static_cast<ssize_t>(sizeof(ack))) _exit(5);
  }
}

TEST(StoreTest, AcknowledgedWritesSurviveSigkill) {
  TempDir dir;
  std::string path = dir.File("state.db");
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> delay_ms(20, 200);
  constexpr int kRounds = 5;
  std::vector<Ack> acks;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      SubmitUntilKilled(path, round, fds[1]);
    }
    close(fds[1]);
    auto read_acks = [&](int timeout_ms) {  // false at end of file
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return true;
      Ack ack;
      ssize_t n = read(fds[0], &ack, sizeof(ack));  // writes of sizeof(Ack) are atomic
      if (n <= 0) return false;
      EXPECT_EQ(n, static_cast<ssize_t>(sizeof(ack)));
      acks.push_back(ack);
      return true;
    };
    // The random delay counts from the first acknowledgement, so that every
    // round kills a child in the middle of submitting, however loaded the
    // machine is.
    const size_t before = acks.size();
    auto start_limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (acks.size() == before && std::chrono::steady_clock::now() < start_limit) {
      if (!read_acks(100)) break;
    }
    ASSERT_GT(acks.size(), before) << "the child acknowledged nothing";
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms(rng));
    while (std::chrono::steady_clock::now() < deadline) {
      if (!read_acks(1)) break;
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    while (read_acks(1000)) {
    }
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child stopped by itself: exit code " << WEXITSTATUS(status);

    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CheckIntegrity().ok()) << store->CheckIntegrity().ToString();
    for (const Ack& ack : acks) {
      NewJob want = CrashJob(ack.round, ack.seq);
      auto job = store->Job(ack.id);
      ASSERT_TRUE(job.ok()) << "acknowledged job " << ack.id << " lost: " << job.status().ToString();
      EXPECT_EQ(job->name, want.name);
      EXPECT_EQ(job->spec_yaml, want.spec_yaml);
      EXPECT_EQ(job->submitted_us, want.submitted_us);
      EXPECT_EQ(job->state, JobState::kProfiling);
      EXPECT_EQ(store->History(ack.id)->size(), 2u);
    }
    // At most one unacknowledged submission per killed child.
    auto jobs = store->Jobs({});
    ASSERT_TRUE(jobs.ok());
    EXPECT_GE(jobs->size(), acks.size());
    EXPECT_LE(jobs->size(), acks.size() + round + 1);
  }
  std::set<int64_t> ids;
  for (const Ack& a : acks) ids.insert(a.id);
  EXPECT_EQ(ids.size(), acks.size());
  std::cout << acks.size() << " acknowledged submissions over " << kRounds << " kills\n";
}

}  // namespace
}  // namespace tessel
