#include "cluster/store.h"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "cluster/store_internal.h"

namespace tessel {

using store_internal::JobLabel;

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
    // 4 -> 5: the loss a job reports with each step (NULL when it reported
    // none, and for rows stored before), for the dashboard's loss curve.
    R"sql(
ALTER TABLE step_times ADD COLUMN loss REAL;
)sql",
};
constexpr int kNumMigrations = sizeof(kMigrations) / sizeof(kMigrations[0]);

constexpr JobState kStates[] = {
    JobState::kPending,   JobState::kProfiling, JobState::kStarting, JobState::kRunning,
    JobState::kReconfiguring, JobState::kCompleted, JobState::kFailed, JobState::kCancelled,
};

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
