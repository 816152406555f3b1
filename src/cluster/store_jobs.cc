// Store: jobs, their state changes, allocations, Slurm runs and counters.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "cluster/store.h"
#include "cluster/store_internal.h"
#include "core/json_text.h"

namespace tessel {

using store_internal::JobLabel;

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
  const NewJob* one[] = {&job};
  auto ids = AddJobs(one);
  if (!ids.ok()) return ids.status();
  return ids->front();
}

Result<std::vector<int64_t>> Store::AddJobs(std::span<const NewJob* const> jobs) {
  std::lock_guard lock(mu_);
  Txn txn(this);
  TESSEL_RETURN_IF_ERROR(txn.Begin());
  std::vector<int64_t> ids;
  ids.reserve(jobs.size());
  for (const NewJob* job : jobs) {
    int64_t id = 0;
    {
      auto st = Prepare(
          "INSERT INTO jobs (name, user, state, spec_yaml, spec_json, file, priority, "
          "submitted_us, checkpoint_dir, reason) "
          "VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      if (!st.ok()) return st.status();
      st->Bind(1, job->name).Bind(2, job->user).Bind(3, job->spec_yaml).Bind(4, job->spec_json);
      st->Bind(5, job->file).Bind(6, int64_t{job->priority}).Bind(7, job->submitted_us);
      st->Bind(8, job->checkpoint_dir).Bind(9, job->reason);
      int rc = st->Step();
      if (rc != SQLITE_DONE) return Error(rc, "adding job '" + job->name + "'");
      id = sqlite3_last_insert_rowid(db_);
    }
    {
      auto st = Prepare(
          "INSERT INTO transitions (job_id, time_us, from_state, to_state, reason) "
          "VALUES (?1, ?2, NULL, 'pending', ?3)");
      if (!st.ok()) return st.status();
      st->Bind(1, id).Bind(2, job->submitted_us).Bind(3, job->reason);
      int rc = st->Step();
      if (rc != SQLITE_DONE) return Error(rc, "recording the submission of " + JobLabel(id));
    }
    ids.push_back(id);
  }
  TESSEL_RETURN_IF_ERROR(txn.Commit());
  return ids;
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

Result<std::map<JobState, int64_t>> Store::CountByState() {
  std::map<JobState, int64_t> out;
  for (JobState s : AllJobStates()) out[s] = 0;
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

}  // namespace tessel
