// Task<T>: a lazily started C++20 coroutine returning T, awaited by exactly one caller.
//
// Frames come from the per-thread FramePool. Awaiting a task transfers control to it
// symmetrically (no stack growth); when it finishes it resumes its awaiter. A Task that is
// destroyed without being awaited destroys its frame. Exceptions are not part of the data path:
// an exception escaping a task terminates the process.
//
// Rules (docs/runtime.md): no capturing lambda coroutines; pass everything a task needs as
// parameters; write `auto r = co_await x;` as its own statement.
// Thread safety: a task runs on the thread that awaits it, always the same scheduler thread.
#pragma once

#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>
#include <utility>

#include "farmem/runtime/frame_pool.h"

namespace farmem::runtime {

template <typename T>
class Task;

namespace detail {

struct PromiseBase {
  // Used by Task::InlineAwaiter (sanitizer builds): a child that finishes while its parent is
  // still inside await_suspend returns there instead of resuming the parent recursively.
  enum class Inline : uint8_t { kNo, kParentWaiting, kCompletedInline };
  std::coroutine_handle<> continuation = std::noop_coroutine();
  Inline inline_state = Inline::kNo;

  static void* operator new(size_t bytes) { return frame_alloc(bytes); }
  static void operator delete(void* p, size_t bytes) { frame_free(p, bytes); }

  std::suspend_always initial_suspend() noexcept { return {}; }
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.inline_state == Inline::kParentWaiting) {
        p.inline_state = Inline::kCompletedInline;
        return std::noop_coroutine();  // back into the parent's await_suspend
      }
      return p.continuation;
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { std::terminate(); }
};

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
};

}  // namespace detail

template <typename T = void>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle h) : handle_(h) {}
  Task(Task&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(o.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  bool valid() const { return static_cast<bool>(handle_); }
  bool done() const { return handle_ && handle_.done(); }
  Handle handle() const { return handle_; }
  Handle release() { return std::exchange(handle_, {}); }

  // Symmetric transfer: the child runs by a tail call and, when it finishes, resumes the
  // parent by a tail call, so neither long loops nor deep chains grow the stack.
  struct TransferAwaiter {
    Handle h;
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
      h.promise().continuation = awaiting;
      return h;
    }
    T await_resume() {
      if constexpr (!std::is_void_v<T>) return std::move(*h.promise().value);
    }
  };
  // For builds where the compiler does not emit those tail calls (sanitizers): run the
  // child now; if it finishes before suspending, the parent continues without suspending, so
  // loops of synchronously completing awaits stay flat (deep chains still recurse).
  struct InlineAwaiter {
    Handle h;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
      auto& p = h.promise();
      p.continuation = awaiting;
      p.inline_state = detail::PromiseBase::Inline::kParentWaiting;
      h.resume();
      if (p.inline_state == detail::PromiseBase::Inline::kCompletedInline) return false;
      p.inline_state = detail::PromiseBase::Inline::kNo;
      return true;
    }
    T await_resume() {
      if constexpr (!std::is_void_v<T>) return std::move(*h.promise().value);
    }
  };
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  using Awaiter = InlineAwaiter;
#else
  using Awaiter = TransferAwaiter;
#endif
  Awaiter operator co_await() && noexcept { return Awaiter{handle_}; }
  Awaiter operator co_await() & noexcept { return Awaiter{handle_}; }

  // The value of a finished task (for sync_wait).
  T take_result() {
    if constexpr (!std::is_void_v<T>) return std::move(*handle_.promise().value);
  }

 private:
  Handle handle_;
};

namespace detail {
template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace detail

}  // namespace farmem::runtime
