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

}  // namespace farmem

// Returns early from a function returning Status (or Result) when `expr` fails.
#define FARMEM_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::farmem::Status _fm_status = (expr);    \
    if (!_fm_status.ok()) return _fm_status; \
  } while (0)

#define FARMEM_CO_RETURN_IF_ERROR(expr)         \
  do {                                          \
    ::farmem::Status _fm_status = (expr);       \
    if (!_fm_status.ok()) co_return _fm_status; \
  } while (0)
