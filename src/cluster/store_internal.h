// What src/cluster/store*.cc share and nothing else includes: the cached
// prepared statement and the transaction guard of Store's private API, and
// how a job is named in errors.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cluster/store.h"

namespace tessel {
namespace store_internal {

inline std::string JobLabel(int64_t id) { return "job " + std::to_string(id); }

}  // namespace store_internal

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

}  // namespace tessel
