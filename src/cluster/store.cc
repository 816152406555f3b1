#include "cluster/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace tessel {

namespace {

constexpr int kBusyTimeoutMs = 10000;

// The schema, one entry per version: kMigrations[v] takes a database at
// user_version v to v + 1. Append only; never edit a released entry.
const char* const kMigrations[] = {
    // 1: the initial schema.
    R"sql(
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  user TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'profiling', 'starting', 'running',
                                       'reconfiguring', 'completed', 'failed', 'cancelled')),
  spec_yaml TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  file TEXT NOT NULL,
  priority INTEGER NOT NULL,
  submitted_us INTEGER NOT NULL,
  started_us INTEGER,
  finished_us INTEGER,
  gpu_type TEXT NOT NULL DEFAULT '',
  gpus INTEGER NOT NULL DEFAULT 0 CHECK (gpus >= 0),
  nodes TEXT NOT NULL DEFAULT '[]',
  alloc_json TEXT NOT NULL DEFAULT '',
  plan_json TEXT NOT NULL DEFAULT '',
  allocated_us INTEGER,
  restarts INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  launch_count INTEGER NOT NULL DEFAULT 0,
  slurm_job_id TEXT,
  reason TEXT NOT NULL DEFAULT '',
  checkpoint_dir TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_state ON jobs (state);
CREATE INDEX jobs_by_user ON jobs (user, state);

CREATE TABLE transitions (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  time_us INTEGER NOT NULL,
  from_state TEXT,
  to_state TEXT NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX transitions_by_job ON transitions (job_id, id);

CREATE TABLE step_times (
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  profile INTEGER NOT NULL CHECK (profile IN (0, 1)),
  step INTEGER NOT NULL,
  time_us INTEGER NOT NULL,
  gpu_type TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  step_time_s REAL NOT NULL,
  samples INTEGER NOT NULL,
  PRIMARY KEY (job_id, profile, step)
);
CREATE INDEX step_times_by_time ON step_times (job_id, time_us, step);

CREATE TABLE corrections (
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  gpu_type TEXT NOT NULL,
  factor REAL NOT NULL,
  samples INTEGER NOT NULL,
  PRIMARY KEY (job_id, gpu_type)
);

CREATE TABLE profiles (
  key TEXT NOT NULL,
  gpu_type TEXT NOT NULL,
  stage_layers INTEGER NOT NULL,
  micro_batch INTEGER NOT NULL,
  step_time_s REAL NOT NULL,
  time_us INTEGER NOT NULL,
  PRIMARY KEY (key, gpu_type, stage_layers, micro_batch)
);
)sql",
    // 2: corrections get a scope within their GPU type ('' = the type's,
    // 'stages=<p>', 'plan=<plan>'); existing rows are the type's.
    R"sql(
CREATE TABLE corrections_v2 (
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  gpu_type TEXT NOT NULL,
  scope TEXT NOT NULL DEFAULT '',
  factor REAL NOT NULL,
  samples INTEGER NOT NULL,
  PRIMARY KEY (job_id, gpu_type, scope)
);
INSERT INTO corrections_v2 (job_id, gpu_type, scope, factor, samples)
  SELECT job_id, gpu_type, '', factor, samples FROM corrections;
DROP TABLE corrections;
ALTER TABLE corrections_v2 RENAME TO corrections;
)sql",
    // 3: Slurm runs other than a job's launches (profiling runs), recorded
    // before sbatch under their Slurm job name and reconciled after a
    // restart (cluster/slurm_recovery.cc).
    R"sql(
CREATE TABLE slurm_runs (
  name TEXT PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  kind TEXT NOT NULL,
  gpu_type TEXT NOT NULL DEFAULT '',
  stages INTEGER NOT NULL DEFAULT 0,
  slurm_job_id TEXT,
  created_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX slurm_runs_by_job ON slurm_runs (job_id);
)sql",
    // 4: reads that cost the page, not every job ever stored: the active
    // jobs (partial indexes; the queries in Store::Jobs repeat their WHERE
    // term exactly, so SQLite uses them), a user's jobs by id, and the
    // counters /metrics sums (a covering index). docs/daemon.md's soak
    // measures the lists and /metrics before and after.
    R"sql(
CREATE INDEX IF NOT EXISTS jobs_active ON jobs (id)
  WHERE state NOT IN ('completed', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS jobs_active_by_user ON jobs (user, id)
  WHERE state NOT IN ('completed', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS jobs_by_user_id ON jobs (user, id);
CREATE INDEX IF NOT EXISTS jobs_counters ON jobs (restarts, failures);
)sql",
};
constexpr int kNumMigrations = sizeof(kMigrations) / sizeof(kMigrations[0]);

constexpr JobState kStates[] = {
    JobState::kPending,   JobState::kProfiling, JobState::kStarting, JobState::kRunning,
    JobState::kReconfiguring, JobState::kCompleted, JobState::kFailed, JobState::kCancelled,
};

std::string JobLabel(int64_t id) { return "job " + std::to_string(id); }

// The directory holding the database file (the daemon's --state-dir).
std::string StateDirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kPending: return "pending";
    case JobState::kProfiling: return "profiling";
    case JobState::kStarting: return "starting";
    case JobState::kRunning: return "running";
    case JobState::kReconfiguring: return "reconfiguring";
    case JobState::kCompleted: return "completed";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "?";
}

Result<JobState> ParseJobState(std::string_view name) {
  std::string known;
  for (JobState s : kStates) {
    if (name == JobStateName(s)) return s;
    known += (known.empty() ? "" : ", ") + std::string(JobStateName(s));
  }
  return InvalidArgument("unknown job state '" + std::string(name) + "'; known: " + known);
}

const std::vector<JobState>& AllJobStates() {
  static const std::vector<JobState> states(std::begin(kStates), std::end(kStates));
  return states;
}

bool IsTerminal(JobState state) {
  return state == JobState::kCompleted || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

// A cached prepared statement, bound and stepped by one caller at a time
// (under Store::mu_); reset when this handle goes away.
class Store::Stmt {
 public:
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  Stmt(Stmt&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt() {
    if (s_ != nullptr) {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
  }

  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& Bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Stmt& BindNull(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  template <typename T>
  Stmt& Bind(int i, const std::optional<T>& v) {
    return v ? Bind(i, *v) : BindNull(i);
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(s_); }

  bool IsNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int64_t Int(int c) const { return sqlite3_column_int64(s_, c); }
  double Double(int c) const { return sqlite3_column_double(s_, c); }
  std::string Text(int c) const {
    const unsigned char* p = sqlite3_column_text(s_, c);
    if (p == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(s_, c)));
  }
  std::optional<int64_t> OptInt(int c) const {
    return IsNull(c) ? std::nullopt : std::optional<int64_t>(Int(c));
  }

 private:
  sqlite3_stmt* s_;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back unless committed.
class Store::Txn {
 public:
  explicit Txn(Store* store) : store_(store) {}
  ~Txn() {
    if (open_) sqlite3_exec(store_->db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Status Begin() {
    TESSEL_RETURN_IF_ERROR(store_->Exec("BEGIN IMMEDIATE"));
    open_ = true;
    return Status::Ok();
  }
  Status Commit() {
    TESSEL_RETURN_IF_ERROR(store_->Exec("COMMIT"));
    open_ = false;
    return Status::Ok();
  }

 private:
  Store* store_;
  bool open_ = false;
};

int Store::SchemaVersion() { return kNumMigrations; }

Result<std::unique_ptr<Store>> Store::Connect(const std::string& path, int flags, std::string_view what) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return InvalidArgument("state database " + path + ": " + std::string(what) + ": " + msg);
  }
  std::unique_ptr<Store> store(new Store(path, db));
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  return store;
}

Result<int> Store::UserVersion() {
  auto st = Prepare("PRAGMA user_version");
  if (!st.ok()) return st.status();
  int rc = st->Step();
  if (rc != SQLITE_ROW) return Error(rc, "reading the schema version");
  return static_cast<int>(st->Int(0));
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  auto connected = Connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "cannot open");
  if (!connected.ok()) return connected.status();
  std::unique_ptr<Store> store = std::move(*connected);
  int rc;
  {
    // The first statement that reads the file: garbage fails here.
    auto st = store->Prepare("PRAGMA journal_mode = WAL");
    if (!st.ok()) return st.status();
    rc = st->Step();
    if (rc != SQLITE_ROW) return store->Error(rc, "setting WAL journal mode");
    std::string mode = st->Text(0);
    if (mode != "wal" && path != ":memory:") {
      return FailedPrecondition("state database " + path + ": cannot use WAL journal mode (got '" +
                                mode + "'); put the database on a local file system");
    }
  }
  TESSEL_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous = FULL"));
  // The WAL is cut back to what its latest transaction needs each time it
  // starts over after a checkpoint, instead of keeping its high-water size
  // (up to ~4 MB at the default auto-checkpoint): it holds no space the
  // state directory's disk could use, and a full disk is refused at the next
  // write rather than only once that slack is used up.
  TESSEL_RETURN_IF_ERROR(store->Exec("PRAGMA journal_size_limit = 0"));
  TESSEL_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys = ON"));
  TESSEL_RETURN_IF_ERROR(store->Migrate());
  return store;
}

Result<std::unique_ptr<Store>> Store::OpenReader(const std::string& path) {
  auto connected = Connect(path, SQLITE_OPEN_READONLY, "cannot open for reading");
  if (!connected.ok()) return connected.status();
  std::unique_ptr<Store> store = std::move(*connected);
  TESSEL_RETURN_IF_ERROR(store->Exec("PRAGMA query_only = ON"));
  auto version = store->UserVersion();
  if (!version.ok()) return version.status();
  if (*version != kNumMigrations) {
    return FailedPrecondition("state database " + path + ": schema version " + std::to_string(*version) +
                              ", this tessel reads " + std::to_string(kNumMigrations) +
                              "; open it for writing first (tessel serve migrates it)");
  }
  return store;
}

Store::~Store() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status Store::Error(int rc, std::string_view what) const {
  std::string msg = "state database " + path_ + ": " + std::string(what) + ": " +
                    sqlite3_errmsg(db_);
  // A full disk says so, naming the directory to free space in: SQLite
  // reports it as SQLITE_FULL, or as an I/O error whose errno is ENOSPC or
  // EDQUOT (a write or a WAL/shm extension). Nothing of the failed
  // statement or transaction is stored; the caller may retry once there is
  // space again.
  const int sys = sqlite3_system_errno(db_);
  if ((rc & 0xff) == SQLITE_FULL || ((rc & 0xff) == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT))) {
    return Unavailable("state directory " + StateDirOf(path_) + ": disk full: " + std::string(what) +
                       " failed (" + sqlite3_errmsg(db_) + "); free space there and retry");
  }
  if ((rc & 0xff) == SQLITE_IOERR) {
    return Unavailable("state directory " + StateDirOf(path_) + ": I/O error (is the disk full or failing?): " +
                       std::string(what) + " failed (" + sqlite3_errmsg(db_) +
                       (sys != 0 ? std::string(": ") + std::strerror(sys) : std::string()) + ")");
  }
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return InvalidArgument("state database " + path_ +
                             ": not a SQLite database (" + sqlite3_errmsg(db_) + ")");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
      return Unavailable(msg);
    case SQLITE_CORRUPT:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return FailedPrecondition(msg);
    default:
      return Internal(msg);
  }
}

Status Store::Exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, sql);
  return Status::Ok();
}

Result<Store::Stmt> Store::Prepare(const char* sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) return Error(rc, "preparing a statement");
    it = statements_.emplace(sql, s).first;
  }
  return Stmt(it->second);
}

Status Store::Migrate() {
  auto read_version = [this] { return UserVersion(); };
  auto newer = [this](int v) {
    return FailedPrecondition("state database " + path_ + ": schema version " +
                              std::to_string(v) + " is newer than this tessel knows (" +
                              std::to_string(kNumMigrations) +
                              "); it was written by a newer tessel: upgrade, or use another "
                              "database");
  };
  auto version = read_version();
  if (!version.ok()) return version.status();
  if (*version > kNumMigrations) return newer(*version);
  if (*version == kNumMigrations) return Status::Ok();
  Txn txn(this);
  TESSEL_RETURN_IF_ERROR(txn.Begin());
  version = read_version();  // another process may have migrated meanwhile
  if (!version.ok()) return version.status();
  if (*version > kNumMigrations) return newer(*version);
  if (*version < 0) {
    return FailedPrecondition("state database " + path_ + ": invalid schema version " +
                              std::to_string(*version));
  }
  for (int v = *version; v < kNumMigrations; ++v) {
    int rc = sqlite3_exec(db_, kMigrations[v], nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
      return Error(rc, "migrating the schema to version " + std::to_string(v + 1));
    }
  }
  std::string set = "PRAGMA user_version = " + std::to_string(kNumMigrations);
  TESSEL_RETURN_IF_ERROR(Exec(set.c_str()));
  return txn.Commit();
}

Status Store::CheckJobExists(int64_t id) {
  auto st = Prepare("SELECT 1 FROM jobs WHERE id = ?1");
  if (!st.ok()) return st.status();
  st->Bind(1, id);
  int rc = st->Step();
  if (rc == SQLITE_ROW) return Status::Ok();
  if (rc == SQLITE_DONE) return NotFound(JobLabel(id) + ": no such job");
  return Error(rc, "looking up " + JobLabel(id));
}

Result<int64_t> Store::AddJob(const NewJob& job) {
  std::lock_guard lock(mu_);
  Txn txn(this);
  TESSEL_RETURN_IF_ERROR(txn.Begin());
  int64_t id = 0;
  {
    auto st = Prepare(
        "INSERT INTO jobs (name, user, state, spec_yaml, spec_json, file, priority, "
        "submitted_us, checkpoint_dir, reason) "
        "VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    if (!st.ok()) return st.status();
    st->Bind(1, job.name).Bind(2, job.user).Bind(3, job.spec_yaml).Bind(4, job.spec_json);
    st->Bind(5, job.file).Bind(6, int64_t{job.priority}).Bind(7, job.submitted_us);
    st->Bind(8, job.checkpoint_dir).Bind(9, job.reason);
    int rc = st->Step();
    if (rc != SQLITE_DONE) return Error(rc, "adding job '" + job.name + "'");
    id = sqlite3_last_insert_rowid(db_);
  }
  {
    auto st = Prepare(
        "INSERT INTO transitions (job_id, time_us, from_state, to_state, reason) "
        "VALUES (?1, ?2, NULL, 'pending', ?3)");
    if (!st.ok()) return st.status();
    st->Bind(1, id).Bind(2, job.submitted_us).Bind(3, job.reason);
    int rc = st->Step();
    if (rc != SQLITE_DONE) return Error(rc, "recording the submission of " + JobLabel(id));
  }
  TESSEL_RETURN_IF_ERROR(txn.Commit());
  return id;
}

Status Store::Transition(int64_t id, JobState to, int64_t now_us, std::string_view reason,
                         std::optional<JobState> expected_from) {
  std::lock_guard lock(mu_);
  Txn txn(this);
  TESSEL_RETURN_IF_ERROR(txn.Begin());
  JobState from = JobState::kPending;
  {
    auto st = Prepare("SELECT state FROM jobs WHERE id = ?1");
    if (!st.ok()) return st.status();
    st->Bind(1, id);
    int rc = st->Step();
    if (rc == SQLITE_DONE) return NotFound(JobLabel(id) + ": no such job");
    if (rc != SQLITE_ROW) return Error(rc, "reading the state of " + JobLabel(id));
    auto s = ParseJobState(st->Text(0));
    if (!s.ok()) return Internal(JobLabel(id) + ": stored state: " + s.status().message());
    from = *s;
  }
  std::string change = JobLabel(id) + ": cannot change state from " + JobStateName(from) +
                       " to " + JobStateName(to);
  if (IsTerminal(from)) return FailedPrecondition(change + ": " + JobStateName(from) + " is final");
  if (expected_from && *expected_from != from) {
    return FailedPrecondition(change + ": expected it to be " + JobStateName(*expected_from));
  }
  if (from == to) return FailedPrecondition(change + ": it is already " + JobStateName(to));
  {
    auto st = Prepare(
        "UPDATE jobs SET state = ?1, reason = ?2, "
        "started_us = CASE WHEN ?3 THEN COALESCE(started_us, ?5) ELSE started_us END, "
        "finished_us = CASE WHEN ?4 THEN ?5 ELSE finished_us END "
        "WHERE id = ?6");
    if (!st.ok()) return st.status();
    st->Bind(1, JobStateName(to)).Bind(2, reason);
    st->Bind(3, int64_t{to == JobState::kRunning}).Bind(4, int64_t{IsTerminal(to)});
    st->Bind(5, now_us).Bind(6, id);
    int rc = st->Step();
    if (rc != SQLITE_DONE) return Error(rc, "changing the state of " + JobLabel(id));
  }
  {
    auto st = Prepare(
        "INSERT INTO transitions (job_id, time_us, from_state, to_state, reason) "
        "VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!st.ok()) return st.status();
    st->Bind(1, id).Bind(2, now_us).Bind(3, JobStateName(from)).Bind(4, JobStateName(to));
    st->Bind(5, reason);
    int rc = st->Step();
    if (rc != SQLITE_DONE) return Error(rc, "recording a transition of " + JobLabel(id));
  }
  return txn.Commit();
}

Status Store::SetAllocation(int64_t id, const StoredAllocation& allocation, int64_t now_us) {
  if (allocation.gpus < 0) {
    return InvalidArgument(JobLabel(id) + ": allocation: gpus must be >= 0, got " +
                           std::to_string(allocation.gpus));
  }
  const bool clear = allocation.gpus == 0;
  const StoredAllocation& a = clear ? StoredAllocation{} : allocation;
  std::string nodes = JsonText(nlohmann::json(a.nodes));
  std::lock_guard lock(mu_);
  auto st = Prepare(
      "UPDATE jobs SET gpu_type = ?1, gpus = ?2, nodes = ?3, alloc_json = ?4, plan_json = ?5, "
      "allocated_us = ?6 WHERE id = ?7");
  if (!st.ok()) return st.status();
  st->Bind(1, a.gpu_type).Bind(2, int64_t{a.gpus}).Bind(3, nodes).Bind(4, a.alloc_json);
  st->Bind(5, a.plan_json).Bind(6, clear ? std::nullopt : std::optional<int64_t>(now_us));
  st->Bind(7, id);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "setting the allocation of " + JobLabel(id));
  if (sqlite3_changes(db_) == 0) return NotFound(JobLabel(id) + ": no such job");
  return Status::Ok();
}

Status Store::SetSlurmJob(int64_t id, const std::optional<std::string>& slurm_job_id) {
  std::lock_guard lock(mu_);
  auto st = Prepare("UPDATE jobs SET slurm_job_id = ?1 WHERE id = ?2");
  if (!st.ok()) return st.status();
  st->Bind(1, slurm_job_id).Bind(2, id);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "setting the Slurm job of " + JobLabel(id));
  if (sqlite3_changes(db_) == 0) return NotFound(JobLabel(id) + ": no such job");
  return Status::Ok();
}

Status Store::AddSlurmRun(const SlurmRun& r) {
  if (r.name.empty() || r.kind.empty()) return InvalidArgument("Slurm run: name and kind are required");
  std::lock_guard lock(mu_);
  TESSEL_RETURN_IF_ERROR(CheckJobExists(r.job_id));
  auto st = Prepare(
      "INSERT INTO slurm_runs (name, job_id, kind, gpu_type, stages, slurm_job_id, created_us) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
      "ON CONFLICT (name) DO UPDATE SET slurm_job_id = excluded.slurm_job_id, "
      "created_us = excluded.created_us");
  if (!st.ok()) return st.status();
  st->Bind(1, r.name).Bind(2, r.job_id).Bind(3, r.kind).Bind(4, r.gpu_type).Bind(5, int64_t{r.stages});
  st->Bind(6, r.slurm_job_id).Bind(7, r.created_us);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "recording Slurm run " + r.name);
  return Status::Ok();
}

Status Store::SetSlurmRunJob(const std::string& name, const std::string& slurm_job_id) {
  std::lock_guard lock(mu_);
  auto st = Prepare("UPDATE slurm_runs SET slurm_job_id = ?1 WHERE name = ?2");
  if (!st.ok()) return st.status();
  st->Bind(1, slurm_job_id).Bind(2, name);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "setting the Slurm job of run " + name);
  if (sqlite3_changes(db_) == 0) return NotFound("Slurm run " + name + ": not recorded");
  return Status::Ok();
}

Status Store::RemoveSlurmRun(const std::string& name) {
  std::lock_guard lock(mu_);
  auto st = Prepare("DELETE FROM slurm_runs WHERE name = ?1");
  if (!st.ok()) return st.status();
  st->Bind(1, name);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "removing Slurm run " + name);
  return Status::Ok();
}

Result<std::vector<SlurmRun>> Store::SlurmRuns() {
  std::lock_guard lock(mu_);
  auto st = Prepare(
      "SELECT name, job_id, kind, gpu_type, stages, slurm_job_id, created_us FROM slurm_runs "
      "ORDER BY job_id, name");
  if (!st.ok()) return st.status();
  std::vector<SlurmRun> out;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    SlurmRun r;
    r.name = st->Text(0);
    r.job_id = st->Int(1);
    r.kind = st->Text(2);
    r.gpu_type = st->Text(3);
    r.stages = static_cast<int>(st->Int(4));
    if (!st->IsNull(5)) r.slurm_job_id = st->Text(5);
    r.created_us = st->Int(6);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the Slurm runs");
  return out;
}

Status Store::AddCounters(int64_t id, const CounterDelta& d) {
  if (d.restarts < 0 || d.failures < 0 || d.launches < 0) {
    return InvalidArgument(JobLabel(id) + ": counter increments must be >= 0");
  }
  std::lock_guard lock(mu_);
  auto st = Prepare(
      "UPDATE jobs SET restarts = restarts + ?1, failures = failures + ?2, "
      "launch_count = launch_count + ?3 WHERE id = ?4");
  if (!st.ok()) return st.status();
  st->Bind(1, int64_t{d.restarts}).Bind(2, int64_t{d.failures}).Bind(3, int64_t{d.launches});
  st->Bind(4, id);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "updating the counters of " + JobLabel(id));
  if (sqlite3_changes(db_) == 0) return NotFound(JobLabel(id) + ": no such job");
  return Status::Ok();
}

Result<int> Store::AddStepTimes(int64_t id, std::span<const StepSample> samples) {
  for (const StepSample& s : samples) {
    if (!std::isfinite(s.step_time_s) || s.step_time_s < 0) {
      return InvalidArgument(JobLabel(id) + ": step " + std::to_string(s.step) +
                             ": step_time_s must be finite and >= 0, got " +
                             std::to_string(s.step_time_s));
    }
  }
  std::lock_guard lock(mu_);
  Txn txn(this);
  TESSEL_RETURN_IF_ERROR(txn.Begin());
  TESSEL_RETURN_IF_ERROR(CheckJobExists(id));
  int added = 0;
  for (const StepSample& s : samples) {
    auto st = Prepare(
        "INSERT INTO step_times (job_id, profile, step, time_us, gpu_type, gpus, step_time_s, "
        "samples) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
        "ON CONFLICT (job_id, profile, step) DO NOTHING");
    if (!st.ok()) return st.status();
    st->Bind(1, id).Bind(2, int64_t{s.profile}).Bind(3, s.step).Bind(4, s.time_us);
    st->Bind(5, s.gpu_type).Bind(6, int64_t{s.gpus}).Bind(7, s.step_time_s).Bind(8, s.samples);
    int rc = st->Step();
    if (rc != SQLITE_DONE) return Error(rc, "adding step times of " + JobLabel(id));
    added += sqlite3_changes(db_);
  }
  TESSEL_RETURN_IF_ERROR(txn.Commit());
  return added;
}

#define TESSEL_JOB_COLUMNS                                                                  \
  "id, name, user, state, spec_yaml, spec_json, file, priority, submitted_us, started_us, " \
  "finished_us, gpu_type, gpus, nodes, alloc_json, plan_json, allocated_us, restarts, "     \
  "failures, launch_count, slurm_job_id, reason, checkpoint_dir "

namespace {

Result<StoredJob> ReadJob(const auto& st) {
  StoredJob j;
  j.id = st.Int(0);
  j.name = st.Text(1);
  j.user = st.Text(2);
  auto state = ParseJobState(st.Text(3));
  if (!state.ok()) return Internal(JobLabel(j.id) + ": stored state: " + state.status().message());
  j.state = *state;
  j.spec_yaml = st.Text(4);
  j.spec_json = st.Text(5);
  j.file = st.Text(6);
  j.priority = static_cast<int>(st.Int(7));
  j.submitted_us = st.Int(8);
  j.started_us = st.OptInt(9);
  j.finished_us = st.OptInt(10);
  j.allocation.gpu_type = st.Text(11);
  j.allocation.gpus = static_cast<int>(st.Int(12));
  std::string nodes = st.Text(13);
  try {
    j.allocation.nodes = nlohmann::json::parse(nodes).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Internal(JobLabel(j.id) + ": stored nodes are not a JSON list of names: " + e.what());
  }
  j.allocation.alloc_json = st.Text(14);
  j.allocation.plan_json = st.Text(15);
  j.allocated_us = st.OptInt(16);
  j.restarts = static_cast<int>(st.Int(17));
  j.failures = static_cast<int>(st.Int(18));
  j.launch_count = static_cast<int>(st.Int(19));
  if (!st.IsNull(20)) j.slurm_job_id = st.Text(20);
  j.reason = st.Text(21);
  j.checkpoint_dir = st.Text(22);
  return j;
}

}  // namespace

Result<StoredJob> Store::JobLocked(int64_t id) {
  auto st = Prepare("SELECT " TESSEL_JOB_COLUMNS "FROM jobs WHERE id = ?1");
  if (!st.ok()) return st.status();
  st->Bind(1, id);
  int rc = st->Step();
  if (rc == SQLITE_DONE) return NotFound(JobLabel(id) + ": no such job");
  if (rc != SQLITE_ROW) return Error(rc, "reading " + JobLabel(id));
  return ReadJob(*st);
}

Result<StoredJob> Store::Job(int64_t id) {
  std::lock_guard lock(mu_);
  return JobLocked(id);
}

const char* Store::JobsSql(const JobFilter& filter) {
  // One literal per filter shape, so each is prepared once and uses its index.
  // TESSEL_ACTIVE is the WHERE term of the partial indexes of migration 4,
  // word for word: SQLite uses a partial index only for a term it matches.
#define TESSEL_ACTIVE "state NOT IN ('completed', 'failed', 'cancelled') "
#define TESSEL_PAGE "id > ?2 ORDER BY id LIMIT ?3"
  static const char* const kAll = "SELECT " TESSEL_JOB_COLUMNS "FROM jobs WHERE " TESSEL_PAGE;
  // INDEXED BY: without statistics SQLite may rank a user's whole id index
  // (jobs_by_user_id, every finished job of theirs) level with the partial one.
  static const char* const kActive =
      "SELECT " TESSEL_JOB_COLUMNS "FROM jobs INDEXED BY jobs_active WHERE " TESSEL_ACTIVE "AND " TESSEL_PAGE;
  static const char* const kUser =
      "SELECT " TESSEL_JOB_COLUMNS "FROM jobs INDEXED BY jobs_by_user_id WHERE user = ?1 AND " TESSEL_PAGE;
  static const char* const kUserActive = "SELECT " TESSEL_JOB_COLUMNS
                                         "FROM jobs INDEXED BY jobs_active_by_user WHERE user = ?1 AND " TESSEL_ACTIVE
                                         "AND " TESSEL_PAGE;
#undef TESSEL_PAGE
#undef TESSEL_ACTIVE
  return filter.user ? (filter.include_terminal ? kUser : kUserActive)
                     : (filter.include_terminal ? kAll : kActive);
}

Result<std::vector<StoredJob>> Store::Jobs(const JobFilter& filter) {
  const char* sql = JobsSql(filter);
  std::lock_guard lock(mu_);
  auto st = Prepare(sql);
  if (!st.ok()) return st.status();
  if (filter.user) st->Bind(1, *filter.user);
  st->Bind(2, filter.after).Bind(3, int64_t{filter.limit > 0 ? filter.limit : -1});
  std::vector<StoredJob> out;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    auto j = ReadJob(*st);
    if (!j.ok()) return j.status();
    out.push_back(std::move(*j));
  }
  if (rc != SQLITE_DONE) return Error(rc, "listing jobs");
  return out;
}

Result<std::vector<TransitionRecord>> Store::History(int64_t id) {
  std::lock_guard lock(mu_);
  TESSEL_RETURN_IF_ERROR(CheckJobExists(id));
  auto st = Prepare(
      "SELECT time_us, from_state, to_state, reason FROM transitions WHERE job_id = ?1 "
      "ORDER BY id");
  if (!st.ok()) return st.status();
  st->Bind(1, id);
  std::vector<TransitionRecord> out;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    TransitionRecord t;
    t.job_id = id;
    t.time_us = st->Int(0);
    if (!st->IsNull(1)) {
      auto from = ParseJobState(st->Text(1));
      if (!from.ok()) return Internal(JobLabel(id) + ": transition: " + from.status().message());
      t.from = *from;
    }
    auto to = ParseJobState(st->Text(2));
    if (!to.ok()) return Internal(JobLabel(id) + ": transition: " + to.status().message());
    t.to = *to;
    t.reason = st->Text(3);
    out.push_back(std::move(t));
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the history of " + JobLabel(id));
  return out;
}

Result<std::vector<StepSample>> Store::Steps(int64_t id, int limit) {
  if (limit < 1) return InvalidArgument("Steps: limit must be >= 1, got " + std::to_string(limit));
  std::lock_guard lock(mu_);
  TESSEL_RETURN_IF_ERROR(CheckJobExists(id));
  auto st = Prepare(
      "SELECT time_us, gpu_type, gpus, step, step_time_s, samples, profile FROM step_times "
      "WHERE job_id = ?1 ORDER BY time_us DESC, step DESC, profile DESC LIMIT ?2");
  if (!st.ok()) return st.status();
  st->Bind(1, id).Bind(2, int64_t{limit});
  std::vector<StepSample> out;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    StepSample s;
    s.time_us = st->Int(0);
    s.gpu_type = st->Text(1);
    s.gpus = static_cast<int>(st->Int(2));
    s.step = st->Int(3);
    s.step_time_s = st->Double(4);
    s.samples = st->Int(5);
    s.profile = st->Int(6) != 0;
    out.push_back(std::move(s));
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the steps of " + JobLabel(id));
  std::reverse(out.begin(), out.end());
  return out;
}

Status Store::SetCorrection(int64_t id, const Correction& c) {
  if (c.gpu_type.empty()) return InvalidArgument(JobLabel(id) + ": correction: gpu_type is empty");
  if (!std::isfinite(c.factor) || c.factor <= 0) {
    return InvalidArgument(JobLabel(id) + ": correction for " + c.gpu_type +
                           ": factor must be finite and > 0, got " + std::to_string(c.factor));
  }
  std::lock_guard lock(mu_);
  TESSEL_RETURN_IF_ERROR(CheckJobExists(id));
  auto st = Prepare(
      "INSERT INTO corrections (job_id, gpu_type, scope, factor, samples) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT (job_id, gpu_type, scope) DO UPDATE SET factor = excluded.factor, "
      "samples = excluded.samples");
  if (!st.ok()) return st.status();
  st->Bind(1, id).Bind(2, c.gpu_type).Bind(3, c.scope).Bind(4, c.factor).Bind(5, c.samples);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "setting a correction of " + JobLabel(id));
  return Status::Ok();
}

Result<std::vector<Correction>> Store::Corrections(int64_t id) {
  std::lock_guard lock(mu_);
  TESSEL_RETURN_IF_ERROR(CheckJobExists(id));
  auto st = Prepare(
      "SELECT gpu_type, factor, samples, scope FROM corrections WHERE job_id = ?1 "
      "ORDER BY gpu_type, scope");
  if (!st.ok()) return st.status();
  st->Bind(1, id);
  std::vector<Correction> out;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    out.push_back(Correction{st->Text(0), st->Double(1), st->Int(2), st->Text(3)});
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the corrections of " + JobLabel(id));
  return out;
}

Status Store::PutProfile(const ProfileRecord& p) {
  if (p.key.empty()) return InvalidArgument("profile: key is empty");
  if (!std::isfinite(p.step_time_s) || p.step_time_s < 0) {
    return InvalidArgument("profile " + p.key + ": step_time_s must be finite and >= 0, got " +
                           std::to_string(p.step_time_s));
  }
  std::lock_guard lock(mu_);
  auto st = Prepare(
      "INSERT INTO profiles (key, gpu_type, stage_layers, micro_batch, step_time_s, time_us) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT (key, gpu_type, stage_layers, micro_batch) DO UPDATE SET "
      "step_time_s = excluded.step_time_s, time_us = excluded.time_us");
  if (!st.ok()) return st.status();
  st->Bind(1, p.key).Bind(2, p.gpu_type).Bind(3, int64_t{p.stage_layers});
  st->Bind(4, int64_t{p.micro_batch}).Bind(5, p.step_time_s).Bind(6, p.time_us);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "storing profile " + p.key);
  return Status::Ok();
}

Result<std::vector<ProfileRecord>> Store::Profiles(std::string_view key) {
  std::lock_guard lock(mu_);
  auto st = Prepare(
      "SELECT gpu_type, stage_layers, micro_batch, step_time_s, time_us FROM profiles "
      "WHERE key = ?1 ORDER BY gpu_type, stage_layers, micro_batch");
  if (!st.ok()) return st.status();
  st->Bind(1, key);
  std::vector<ProfileRecord> out;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    out.push_back(ProfileRecord{std::string(key), st->Text(0), static_cast<int>(st->Int(1)),
                                static_cast<int>(st->Int(2)), st->Double(3), st->Int(4)});
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading profiles");
  return out;
}

Result<std::map<JobState, int64_t>> Store::CountByState() {
  std::map<JobState, int64_t> out;
  for (JobState s : kStates) out[s] = 0;
  std::lock_guard lock(mu_);
  auto st = Prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state");
  if (!st.ok()) return st.status();
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    auto s = ParseJobState(st->Text(0));
    if (!s.ok()) return Internal("stored state: " + s.status().message());
    out[*s] = st->Int(1);
  }
  if (rc != SQLITE_DONE) return Error(rc, "counting jobs");
  return out;
}

Result<std::pair<int64_t, int64_t>> Store::RestartAndFailureTotals() {
  std::lock_guard lock(mu_);
  auto st = Prepare("SELECT COALESCE(SUM(restarts), 0), COALESCE(SUM(failures), 0) FROM jobs");
  if (!st.ok()) return st.status();
  int rc = st->Step();
  if (rc != SQLITE_ROW) return Error(rc, "summing restarts and failures");
  return std::make_pair(st->Int(0), st->Int(1));
}

Result<std::optional<std::string>> Store::GetMeta(std::string_view key) {
  std::lock_guard lock(mu_);
  auto st = Prepare("SELECT value FROM meta WHERE key = ?1");
  if (!st.ok()) return st.status();
  st->Bind(1, key);
  int rc = st->Step();
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  if (rc != SQLITE_ROW) return Error(rc, "reading meta " + std::string(key));
  return std::optional<std::string>(st->Text(0));
}

Status Store::SetMeta(std::string_view key, std::string_view value) {
  std::lock_guard lock(mu_);
  auto st = Prepare(
      "INSERT INTO meta (key, value) VALUES (?1, ?2) "
      "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  if (!st.ok()) return st.status();
  st->Bind(1, key).Bind(2, value);
  int rc = st->Step();
  if (rc != SQLITE_DONE) return Error(rc, "setting meta " + std::string(key));
  return Status::Ok();
}

Status Store::CheckIntegrity() {
  std::lock_guard lock(mu_);
  auto st = Prepare("PRAGMA integrity_check");
  if (!st.ok()) return st.status();
  std::vector<std::string> findings;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) findings.push_back(st->Text(0));
  if (rc != SQLITE_DONE) return Error(rc, "checking integrity");
  if (findings.size() == 1 && findings[0] == "ok") return Status::Ok();
  std::string msg = "state database " + path_ + ": integrity check failed:";
  for (const auto& f : findings) msg += "\n" + f;
  return Internal(msg);
}

}  // namespace tessel
