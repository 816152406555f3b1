// Store: what jobs measured (step times), the corrections learnt from them,
// and stored profiles.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "cluster/store.h"
#include "cluster/store_internal.h"

namespace tessel {

using store_internal::JobLabel;

Result<int> Store::AddStepTimes(int64_t id, std::span<const StepSample> samples) {
  for (const StepSample& s : samples) {
    if (!std::isfinite(s.step_time_s) || s.step_time_s < 0) {
      return InvalidArgument(JobLabel(id) + ": step " + std::to_string(s.step) +
                             ": step_time_s must be finite and >= 0, got " +
                             std::to_string(s.step_time_s));
    }
    if (s.loss && !std::isfinite(*s.loss)) {
      return InvalidArgument(JobLabel(id) + ": step " + std::to_string(s.step) + ": loss must be finite, got " +
                             std::to_string(*s.loss));
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
        "samples, loss) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
        "ON CONFLICT (job_id, profile, step) DO NOTHING");
    if (!st.ok()) return st.status();
    st->Bind(1, id).Bind(2, int64_t{s.profile}).Bind(3, s.step).Bind(4, s.time_us);
    st->Bind(5, s.gpu_type).Bind(6, int64_t{s.gpus}).Bind(7, s.step_time_s).Bind(8, s.samples);
    st->Bind(9, s.loss);
    int rc = st->Step();
    if (rc != SQLITE_DONE) return Error(rc, "adding step times of " + JobLabel(id));
    added += sqlite3_changes(db_);
  }
  TESSEL_RETURN_IF_ERROR(txn.Commit());
  return added;
}

Result<std::vector<StepSample>> Store::Steps(int64_t id, int limit) {
  if (limit < 1) return InvalidArgument("Steps: limit must be >= 1, got " + std::to_string(limit));
  std::lock_guard lock(mu_);
  TESSEL_RETURN_IF_ERROR(CheckJobExists(id));
  auto st = Prepare(
      "SELECT time_us, gpu_type, gpus, step, step_time_s, samples, profile, loss FROM step_times "
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
    if (!st->IsNull(7)) s.loss = st->Double(7);
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

}  // namespace tessel
