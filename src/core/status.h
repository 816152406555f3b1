// Status and Result<T>: the error type of every fallible boundary in tessel
// (parsing, I/O, user input). No exceptions cross a library boundary.
//
// Retry meaning of the codes:
//   kInvalidArgument    -> tell the user; retrying the same input cannot help.
//   kNotFound           -> a named thing (GPU, model, file) does not exist.
//   kFailedPrecondition -> resync state first, then retry.
//   kUnavailable        -> transient; retry with backoff.
//   kPermissionDenied   -> the caller may not do this (the API's 403).
//   kInternal           -> a bug; report it.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tessel {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kFailedPrecondition,
  kUnavailable,
  kInternal,
  kPermissionDenied,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status Unavailable(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status PermissionDenied(std::string m) {
  return Status(StatusCode::kPermissionDenied, std::move(m));
}
inline Status Internal(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  const T& value() const& {
    assert(ok() && "value() on an error Result");
    return std::get<T>(v_);
  }
  T& value() & {
    assert(ok() && "value() on an error Result");
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok() && "value() on an error Result");
    return std::get<T>(std::move(v_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessel

// Propagates an error Status from an expression returning Status.
#define TESSEL_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::tessel::Status _st = (expr);            \
    if (!_st.ok()) return _st;                \
  } while (0)
