// SlowPath: lets an awaitable with a synchronous fast path run a Task<Status> when it must
// suspend (far dereferences, scope admission), without a coroutine frame on the fast path.
//
//   bool await_ready() { return fast_path_ok(); }
//   auto await_suspend(std::coroutine_handle<> h) { return slow_.start(make_task(), h); }
//   T await_resume() { if (slow_.started()) { Status s = slow_.result(); ... } ... }
//
// The task runs by symmetric transfer and resumes the awaiting coroutine when it finishes.
// Thread safety: the awaiting coroutine's thread.
#pragma once

#include <coroutine>
#include <optional>

#include "farmem/common/status.h"
#include "farmem/runtime/task.h"

namespace farmem::far {

class SlowPath {
 public:
  auto start(runtime::Task<Status> task, std::coroutine_handle<> awaiting) {
    task_ = std::move(task);
    awaiter_.emplace(task_.operator co_await());
    return awaiter_->await_suspend(awaiting);
  }
  bool started() const { return awaiter_.has_value(); }
  Status result() { return awaiter_->await_resume(); }

 private:
  runtime::Task<Status> task_;
  std::optional<runtime::Task<Status>::Awaiter> awaiter_;
};

}  // namespace farmem::far
