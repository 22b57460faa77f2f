// SlowPath: lets an awaitable with a synchronous fast path run a Task<Status> when it must
// suspend (far dereferences, scope admission), without a coroutine frame on the fast path.
//
//   bool await_ready() { return fast_path_ok(); }
//   auto await_suspend(std::coroutine_handle<> h) { return slow_.start(make_task(), h); }
//   T await_resume() { if (slow_.started()) { Status s = slow_.result(); ... } ... }
//
// The task runs by symmetric transfer and resumes the awaiting coroutine when it finishes. The
// fast path costs one null handle (the task's) stored and tested.
// Thread safety: the awaiting coroutine's thread.
#pragma once

#include <coroutine>

#include "farmem/common/status.h"
#include "farmem/runtime/task.h"

namespace farmem::far {

class SlowPath {
 public:
  auto start(runtime::Task<Status> task, std::coroutine_handle<> awaiting) {
    task_ = std::move(task);
    return task_.operator co_await().await_suspend(awaiting);  // the awaiter is the handle only
  }
  bool started() const { return task_.valid(); }
  Status result() { return task_.operator co_await().await_resume(); }

 private:
  runtime::Task<Status> task_;
};

}  // namespace farmem::far
