// Scheduler: the per-thread coroutine scheduler.
//
// One per thread (install() makes it the thread's current one). It owns a ready queue of
// coroutine handles, a timer heap for sleeps, and the list of fabric workers it drives: each
// poll_once() resumes ready coroutines, then progresses every attached worker, and from time
// to time fails operations past their deadline and fires due timers and tickers. Spawned
// (detached) coroutines are bounded by SchedulerOptions::max_coroutines.
//
// Time is now_ns() (common/clock.h): real time, or a VirtualClock installed on the thread. With
// an auto-advancing virtual clock, an idle round with no operation in flight moves the clock to
// the earliest timer, so sleeps finish at once and in deadline order (common/virtual_clock.h).
//
// Thread safety: everything on the owning thread only.
#pragma once

#include <coroutine>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "farmem/common/clock.h"
#include "farmem/common/status.h"
#include "farmem/fabric/worker.h"
#include "farmem/runtime/task.h"

namespace farmem {
class VirtualClock;
}  // namespace farmem

namespace farmem::runtime {

struct SchedulerOptions {
  uint32_t max_coroutines = 4096;     // bound on spawned coroutines alive at once
  uint32_t time_check_interval = 16;  // poll_once calls between clock reads when busy
  // After this long without anything happening, an idle round sleeps until an attached worker
  // has an event, the next timer or deadline is due, or max_sleep_ns passed, instead of
  // spinning (a thread waiting for replies then leaves its core to others, e.g. to a memory
  // node on the same machine). 0: always spin. With a virtual clock installed, only in its
  // kSleepAdvance mode, where the sleep advances that clock instead of blocking.
  uint64_t idle_sleep_after_ns = 50'000;
  uint64_t max_sleep_ns = 1'000'000;
};

class Scheduler {
 public:
  explicit Scheduler(const SchedulerOptions& options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // The scheduler installed on this thread (null if none).
  static Scheduler* current();
  void install();

  void attach(fabric::Worker* worker);
  void detach(fabric::Worker* worker);
  // Called with now_ns at every clock check (for tuners); returns an id for remove_ticker.
  size_t add_ticker(std::function<void(uint64_t)> fn);
  void remove_ticker(size_t id);

  // Makes h runnable; it resumes from a later poll_once().
  void post(std::coroutine_handle<> h) { ready_.push_back(h); }
  // Whether a coroutine that yielded now would let another one run first: something is posted,
  // or coroutines after the running one are still due in this round. Cheap (no clock, no I/O).
  bool others_ready() const { return !ready_.empty() || run_pos_ + 1 < running_.size(); }
  // Runs fn(arg) once at the end of the current round: after the round's coroutines have run and
  // before the workers are progressed (called outside poll_once, at the end of the next round's
  // coroutines). For work that the coroutines of one round queue up together, e.g. requests
  // coalesced into one message (kv/coalescer.h). fn may post handles and operations and
  // register further round-end calls (they run in the same round); it must not resume
  // coroutines or poll.
  void at_round_end(void (*fn)(void*), void* arg) { round_end_.push_back({fn, arg}); }
  // Forgets the pending at_round_end calls of arg (its owner is going away).
  void cancel_round_end(void* arg);
  // Starts a detached coroutine. kResourceExhausted when max_coroutines are alive.
  Status spawn(Task<void> task);
  size_t live_coroutines() const { return live_; }
  // An idle sleep also ends when `fd` becomes readable (a file descriptor the thread's own loop
  // serves between rounds, e.g. a userfaultfd); at most kMaxWakeFds.
  static constexpr size_t kMaxWakeFds = 4;
  Status add_wake_fd(int fd);
  void remove_wake_fd(int fd);
  // Idle sleeps taken so far (SchedulerOptions::idle_sleep_after_ns).
  uint64_t idle_sleeps() const { return idle_sleeps_; }

  // One round: resume ready coroutines, progress workers, check deadlines and timers.
  // Returns true if anything happened.
  bool poll_once();
  // Runs until every spawned coroutine has finished.
  void run_until_idle();

  // Drives `task` to completion on this thread (for plain code and tests).
  // Precondition: not called from a coroutine this scheduler is running (use co_await there);
  // a nested call aborts with a message rather than corrupting the ready queue.
  template <typename T>
  T block_on(Task<T> task) {
    if (in_poll_) abort_nested_block_on();
    task.handle().promise().continuation = std::noop_coroutine();
    post(task.handle());
    while (!task.done()) poll_once();
    return task.take_result();
  }

  struct SleepAwaiter {
    Scheduler* s;
    uint64_t until_ns;
    bool await_ready() const noexcept { return now_ns() >= until_ns; }
    void await_suspend(std::coroutine_handle<> h) { s->add_timer(until_ns, h); }
    void await_resume() const noexcept {}
  };
  SleepAwaiter sleep_for_ns(uint64_t ns) { return SleepAwaiter{this, now_ns() + ns}; }
  SleepAwaiter sleep_until_ns(uint64_t t) { return SleepAwaiter{this, t}; }

  struct YieldAwaiter {
    Scheduler* s;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) { s->post(h); }
    void await_resume() const noexcept {}
  };
  YieldAwaiter yield() { return YieldAwaiter{this}; }

  void add_timer(uint64_t when_ns, std::coroutine_handle<> h);
  void on_detached_done() { --live_; }

 private:
  [[noreturn]] static void abort_nested_block_on();
  // Expires worker deadlines, fires due timers and runs the tickers. On an idle round it first
  // lets an auto-advancing virtual clock jump to the earliest timer (common/virtual_clock.h).
  void check_time(bool idle);
  void auto_advance_virtual_clock();
  // On an idle round at `now`: sleeps (see SchedulerOptions) once idle long enough.
  // Under a kSleepAdvance virtual clock the sleep moves that clock instead (sleep_virtually).
  void maybe_sleep(uint64_t now);
  void sleep_virtually(VirtualClock* clock, uint64_t now, uint64_t until);
  // Runs the at_round_end calls (and those they register); true if there were any.
  bool run_round_end();
  bool in_poll_ = false;

  struct Timer {
    uint64_t when_ns;
    uint64_t seq;
    std::coroutine_handle<> h;
    bool operator>(const Timer& o) const {
      return when_ns != o.when_ns ? when_ns > o.when_ns : seq > o.seq;
    }
  };

  static constexpr uint64_t kPauseNs = 50'000'000;  // a gap this long means we were paused
  // After a pause, deadlines are judged only after kPauseGraceChecks more checks and
  // kPauseGraceNs of real time: a request the pause caught before it left (or a reply caught
  // on its way in) needs a few progress rounds, longer under sanitizers.
  static constexpr uint32_t kPauseGraceChecks = 2;
  static constexpr uint64_t kPauseGraceNs = 100'000'000;
  uint64_t last_check_ns_ = 0;
  uint32_t pause_grace_checks_ = 0;
  uint64_t pause_grace_until_ns_ = 0;  // steady_now_ns()
  SchedulerOptions options_;
  std::vector<std::coroutine_handle<>> ready_;
  std::vector<std::coroutine_handle<>> running_;
  size_t run_pos_ = 0;  // index in running_ of the coroutine being resumed
  std::vector<fabric::Worker*> workers_;
  std::vector<int> wake_fds_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::vector<std::function<void(uint64_t)>> tickers_;
  struct RoundEnd {
    void (*fn)(void*);
    void* arg;
  };
  std::vector<RoundEnd> round_end_;
  std::vector<RoundEnd> round_end_running_;
  uint64_t timer_seq_ = 0;
  uint64_t idle_since_ns_ = 0;  // first idle round of the current idle stretch; 0 = busy
  uint64_t idle_sleeps_ = 0;
  uint32_t polls_since_check_ = 0;
  size_t live_ = 0;
  Scheduler* previous_ = nullptr;
  bool installed_ = false;
};

// sync_wait(task): runs `task` to completion on the calling thread's installed scheduler (or a
// temporary one) and returns its value: the one way to call a coroutine from plain code (a
// ThreadClient's thread has its scheduler installed, so ThreadClient::run is the same thing).
// Precondition: not called from a coroutine the same scheduler runs (docs/runtime.md rule 5).
template <typename T>
T sync_wait(Task<T> task) {
  Scheduler* s = Scheduler::current();
  if (s != nullptr) return s->block_on(std::move(task));
  Scheduler temp;
  temp.install();
  return temp.block_on(std::move(task));
}

namespace detail {
template <typename A>
auto await_in_task(A* awaitable) -> Task<decltype(awaitable->await_resume())> {
  auto result = co_await *awaitable;
  co_return result;
}
}  // namespace detail

// sync_wait(awaitable): the same for a single awaitable that is not a Task, e.g. a one-sided
// operation: `Status s = sync_wait(client->read(addr, buf, n));`. The awaitable is awaited in
// place (never moved), within the caller's full expression.
template <typename A>
concept PlainAwaitable = requires(A& a) {
  a.await_ready();
  a.await_resume();
};

template <PlainAwaitable A>
auto sync_wait(A&& awaitable) {
  return sync_wait(detail::await_in_task(&awaitable));
}

}  // namespace farmem::runtime
