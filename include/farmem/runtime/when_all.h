// when_all: awaits several tasks started together and resumes when every one has finished.
//
//   std::vector<Task<Status>> ops;  ops.push_back(f(a));  ops.push_back(f(b));
//   std::vector<Status> results = co_await when_all(std::move(ops));
//
// The tasks run on the awaiting coroutine's thread and interleave whenever one suspends (for a
// remote operation), so their fabric operations are in flight together. Results keep the
// tasks' order. For plain one-sided operations client::Batch is cheaper (no frames).
// Thread safety: the calling thread only.
#pragma once

#include <coroutine>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "farmem/runtime/frame_pool.h"
#include "farmem/runtime/task.h"

namespace farmem::runtime {
namespace detail {

struct WhenAllState {
  size_t remaining = 0;  // children not finished, plus one while they are being started
  std::coroutine_handle<> waiter;
};

// A child that owns one task; it destroys itself when done and wakes the waiter if last.
struct WhenAllChild {
  struct promise_type {
    WhenAllState* state = nullptr;
    static void* operator new(size_t bytes) { return frame_alloc(bytes); }
    static void operator delete(void* p, size_t bytes) { frame_free(p, bytes); }
    WhenAllChild get_return_object() noexcept {
      return WhenAllChild{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        WhenAllState* st = h.promise().state;
        h.destroy();
        if (--st->remaining == 0) return st->waiter;
        return std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> h;
};

template <typename T>
WhenAllChild when_all_child(Task<T> task, std::optional<T>* out) {
  out->emplace(co_await std::move(task));
}

inline WhenAllChild when_all_child_void(Task<void> task) { co_await std::move(task); }

struct WhenAllAwaiter {
  WhenAllState* state;
  std::vector<WhenAllChild>* children;
  bool await_ready() const noexcept { return children->empty(); }
  bool await_suspend(std::coroutine_handle<> waiter) noexcept {
    state->waiter = waiter;
    state->remaining = children->size() + 1;
    for (WhenAllChild& c : *children) {
      c.h.promise().state = state;
      c.h.resume();  // runs until it suspends or finishes
    }
    // Drop the starting guard; if every child already finished, continue without suspending.
    return --state->remaining != 0;
  }
  void await_resume() const noexcept {}
};

}  // namespace detail

template <typename T>
Task<std::vector<T>> when_all(std::vector<Task<T>> tasks) {
  std::vector<std::optional<T>> slots(tasks.size());
  std::vector<detail::WhenAllChild> children;
  children.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    children.push_back(detail::when_all_child(std::move(tasks[i]), &slots[i]));
  }
  detail::WhenAllState state;
  co_await detail::WhenAllAwaiter{&state, &children};
  std::vector<T> out;
  out.reserve(slots.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  co_return out;
}

inline Task<void> when_all(std::vector<Task<void>> tasks) {
  std::vector<detail::WhenAllChild> children;
  children.reserve(tasks.size());
  for (auto& t : tasks) children.push_back(detail::when_all_child_void(std::move(t)));
  detail::WhenAllState state;
  co_await detail::WhenAllAwaiter{&state, &children};
}

}  // namespace farmem::runtime
