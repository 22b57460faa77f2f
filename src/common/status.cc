#include "farmem/common/status.h"

#include <fmt/format.h>

namespace farmem {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kTimedOut:
      return "TimedOut";
    case StatusCode::kPeerFailed:
      return "PeerFailed";
    case StatusCode::kProtocolError:
      return "ProtocolError";
    case StatusCode::kVersionMismatch:
      return "VersionMismatch";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kRetriesExhausted:
      return "RetriesExhausted";
    case StatusCode::kBusy:
      return "Busy";
    case StatusCode::kAborted:
      return "Aborted";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string_view message) : code_(code) {
  if (code_ != StatusCode::kOk && !message.empty()) {
    message_ = std::make_unique<std::string>(message);
  }
}

Status::Status(const Status& other) : code_(other.code_) {
  if (other.message_) message_ = std::make_unique<std::string>(*other.message_);
}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    code_ = other.code_;
    message_ = other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr;
  }
  return *this;
}

std::string_view Status::message() const { return message_ ? *message_ : std::string_view(); }

std::string Status::to_string() const {
  if (ok()) return "OK";
  if (!message_) return std::string(status_code_name(code_));
  return fmt::format("{}: {}", status_code_name(code_), *message_);
}

Status InvalidArgument(std::string_view m) { return Status(StatusCode::kInvalidArgument, m); }
Status OutOfRange(std::string_view m) { return Status(StatusCode::kOutOfRange, m); }
Status NotFound(std::string_view m) { return Status(StatusCode::kNotFound, m); }
Status AlreadyExists(std::string_view m) { return Status(StatusCode::kAlreadyExists, m); }
Status ResourceExhausted(std::string_view m) { return Status(StatusCode::kResourceExhausted, m); }
Status TimedOut(std::string_view m) { return Status(StatusCode::kTimedOut, m); }
Status PeerFailed(std::string_view m) { return Status(StatusCode::kPeerFailed, m); }
Status ProtocolError(std::string_view m) { return Status(StatusCode::kProtocolError, m); }
Status VersionMismatch(std::string_view m) { return Status(StatusCode::kVersionMismatch, m); }
Status Unavailable(std::string_view m) { return Status(StatusCode::kUnavailable, m); }
Status Internal(std::string_view m) { return Status(StatusCode::kInternal, m); }
Status Cancelled(std::string_view m) { return Status(StatusCode::kCancelled, m); }
Status PermissionDenied(std::string_view m) { return Status(StatusCode::kPermissionDenied, m); }
Status RetriesExhausted(std::string_view what, uint64_t attempts) {
  return Status(StatusCode::kRetriesExhausted,
                fmt::format("{} gave up after {} contended attempts", what, attempts));
}
Status Busy(std::string_view m) { return Status(StatusCode::kBusy, m); }
Status Aborted(std::string_view m) { return Status(StatusCode::kAborted, m); }

}  // namespace farmem
