// Status: the error type of farmem's data path.
//
// A Status is a code plus an optional message. An OK status carries no message and costs one
// byte plus a null pointer, so returning it on the hot path is free. Codes exist only where a
// caller can react differently (the FoundationDB rule): a timed-out operation may or may not
// have been applied remotely (kTimedOut); a dead peer is kPeerFailed.
//
// Thread safety: a Status is a value; distinct objects may be used from distinct threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace farmem {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument = 1,    // malformed input from the caller
  kOutOfRange = 2,         // address or size outside an exported region
  kNotFound = 3,           // unknown root name, unknown node
  kAlreadyExists = 4,      // root name taken
  kResourceExhausted = 5,  // out of remote memory, too many in-flight ops, queue full
  kTimedOut = 6,           // deadline passed; the operation may or may not have been applied
  kPeerFailed = 7,         // the remote process died or the connection broke
  kProtocolError = 8,      // a malformed wire message
  kVersionMismatch = 9,    // peers speak different protocol versions
  kUnavailable = 10,       // not connected / shutting down
  kInternal = 11,          // a bug or an unexpected transport error
  kCancelled = 12,         // the operation was abandoned locally
  kPermissionDenied = 13,  // refused: wrong cluster key, or not the caller's to touch
  kRetriesExhausted = 14,  // gave up after a bounded number of contended attempts; retry later
  kBusy = 15,              // in use: a key locked by another session, a pool open elsewhere
  kAborted = 16,           // a transaction aborted (the reason is in the message); nothing applied
};
inline constexpr StatusCode kLastStatusCode = StatusCode::kAborted;

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string_view message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  std::string_view message() const;
  // "kTimedOut: read of 8 bytes at node 0 offset 64 did not complete within 5000 ms"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::unique_ptr<std::string> message_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgument(std::string_view msg);
Status OutOfRange(std::string_view msg);
Status NotFound(std::string_view msg);
Status AlreadyExists(std::string_view msg);
Status ResourceExhausted(std::string_view msg);
Status TimedOut(std::string_view msg);
Status PeerFailed(std::string_view msg);
Status ProtocolError(std::string_view msg);
Status VersionMismatch(std::string_view msg);
Status Unavailable(std::string_view msg);
Status Internal(std::string_view msg);
Status Cancelled(std::string_view msg);
Status PermissionDenied(std::string_view msg);
// "<what> gave up after <attempts> contended attempts": the one form of retry exhaustion.
Status RetriesExhausted(std::string_view what, uint64_t attempts);
Status Busy(std::string_view msg);
Status Aborted(std::string_view msg);

// The Status of a Status (itself); Result<T> has its own status_of (result.h).
inline const Status& status_of(const Status& s) { return s; }

}  // namespace farmem

#define FARMEM_CONCAT_INNER(a, b) a##b
#define FARMEM_CONCAT(a, b) FARMEM_CONCAT_INNER(a, b)

// FARMEM_TRY(expr): returns early from a function returning Status (or Result) when `expr`, a
// Status or a Result, failed. An lvalue is checked in place (not copied).
#define FARMEM_TRY(expr)                   \
  do {                                     \
    decltype(auto) _fm_try = (expr);       \
    if (!_fm_try.ok()) [[unlikely]]        \
      return ::farmem::status_of(_fm_try); \
  } while (0)

// FARMEM_CO_TRY(expr): the same for a coroutine (co_return). `expr` may be `co_await x`: the
// expansion keeps it a statement of its own (docs/runtime.md rule 2).
#define FARMEM_CO_TRY(expr)                   \
  do {                                        \
    decltype(auto) _fm_try = (expr);          \
    if (!_fm_try.ok()) [[unlikely]]           \
      co_return ::farmem::status_of(_fm_try); \
  } while (0)

// FARMEM_ASSIGN_OR_RETURN(lhs, expr): evaluates the Result `expr`; on failure returns its Status,
// else moves its value into `lhs` (a declaration such as `auto x` or an existing variable).
// It expands to several statements: do not use it as the body of an unbraced if/for.
#define FARMEM_ASSIGN_OR_RETURN(lhs, expr) \
  FARMEM_ASSIGN_OR_RETURN_IMPL(FARMEM_CONCAT(_fm_result_, __COUNTER__), lhs, expr, return )
// The same for a coroutine; `expr` may be `co_await x`.
#define FARMEM_CO_ASSIGN_OR_RETURN(lhs, expr) \
  FARMEM_ASSIGN_OR_RETURN_IMPL(FARMEM_CONCAT(_fm_result_, __COUNTER__), lhs, expr, co_return )
#define FARMEM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr, ret) \
  auto tmp = (expr);                                      \
  if (!tmp.ok()) [[unlikely]]                             \
    ret tmp.status();                                     \
  lhs = std::move(*tmp)
