// Result<T>: a value or the Status explaining why there is none.
//
// Precondition: value() is called only when ok(). Thread safety: a value type.
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "farmem/common/status.h"

namespace farmem {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result built from an OK status carries no value");
    if (status_.ok()) status_ = Internal("Result built from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const& { return status_; }
  // From a temporary Result: the Status by value, so that `f().status()` never dangles.
  Status status() && { return std::move(status_); }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

// The Status of a Result (OK when it holds a value), for FARMEM_TRY and friends.
template <typename T>
const Status& status_of(const Result<T>& r) {
  return r.status();
}

}  // namespace farmem
