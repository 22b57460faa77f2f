#include "farmem/runtime/scheduler.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "farmem/common/virtual_clock.h"

namespace farmem::runtime {
namespace {

thread_local Scheduler* tls_current = nullptr;

// A self-destroying coroutine that owns a spawned task.
struct Detached {
  struct promise_type {
    static void* operator new(size_t bytes) { return frame_alloc(bytes); }
    static void operator delete(void* p, size_t bytes) { frame_free(p, bytes); }
    Detached get_return_object() noexcept {
      return Detached{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> h;
};

Detached run_detached(Scheduler* s, Task<void> task) {
  co_await std::move(task);
  s->on_detached_done();
}

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options) : options_(options) {
  ready_.reserve(256);
  running_.reserve(256);
}

Scheduler::~Scheduler() {
  if (installed_ && tls_current == this) tls_current = previous_;
}

Scheduler* Scheduler::current() { return tls_current; }

void Scheduler::install() {
  if (tls_current == this) return;
  previous_ = tls_current;
  tls_current = this;
  installed_ = true;
}

void Scheduler::attach(fabric::Worker* worker) {
  if (std::find(workers_.begin(), workers_.end(), worker) == workers_.end()) {
    workers_.push_back(worker);
  }
}

void Scheduler::detach(fabric::Worker* worker) {
  workers_.erase(std::remove(workers_.begin(), workers_.end(), worker), workers_.end());
}

size_t Scheduler::add_ticker(std::function<void(uint64_t)> fn) {
  for (size_t i = 0; i < tickers_.size(); ++i) {
    if (!tickers_[i]) {
      tickers_[i] = std::move(fn);
      return i;
    }
  }
  tickers_.push_back(std::move(fn));
  return tickers_.size() - 1;
}

void Scheduler::remove_ticker(size_t id) {
  if (id < tickers_.size()) tickers_[id] = nullptr;
}

Status Scheduler::spawn(Task<void> task) {
  if (live_ >= options_.max_coroutines) {
    return ResourceExhausted(
        fmt::format("scheduler already runs {} coroutines (max_coroutines)", live_));
  }
  ++live_;
  Detached d = run_detached(this, std::move(task));
  post(d.h);
  return OkStatus();
}

void Scheduler::add_timer(uint64_t when_ns, std::coroutine_handle<> h) {
  timers_.push(Timer{when_ns, ++timer_seq_, h});
}

void Scheduler::auto_advance_virtual_clock() {
  VirtualClock* clock = VirtualClock::current();
  if (clock == nullptr || clock->mode() != VirtualClock::Mode::kAutoAdvance) return;
  if (timers_.empty() || !ready_.empty()) return;
  // A real operation in flight completes in real time; jumping past its deadline would expire it.
  for (const fabric::Worker* w : workers_) {
    if (w->in_flight() > 0) return;
  }
  clock->auto_advance_to(timers_.top().when_ns);
}

void Scheduler::check_time(bool idle) {
  if (idle) auto_advance_virtual_clock();
  uint64_t now = now_ns();
  // A long gap since the last check means this thread did not run (stopped, descheduled, or a
  // coroutine that hogged it): replies may be waiting unread. Deadlines that passed meanwhile
  // are judged only after the workers have been progressed for a few more checks, so a pause
  // of our own is not blamed on the peer.
  // (Real time: a jump of a virtual clock is not a pause.)
  const uint64_t real = steady_now_ns();
  if (last_check_ns_ != 0 && real - last_check_ns_ > kPauseNs) {
    pause_grace_checks_ = kPauseGraceChecks;
    pause_grace_until_ns_ = real + kPauseGraceNs;
  }
  last_check_ns_ = real;
  if (pause_grace_checks_ > 0 || real < pause_grace_until_ns_) {
    if (pause_grace_checks_ > 0) --pause_grace_checks_;
  } else {
    for (fabric::Worker* w : workers_) {
      if (w->next_deadline_ns() <= now) w->expire(now);
    }
  }
  while (!timers_.empty() && timers_.top().when_ns <= now) {
    post(timers_.top().h);
    timers_.pop();
  }
  for (auto& t : tickers_) {
    if (t) t(now);
  }
  if (idle) maybe_sleep(now);
}

void Scheduler::maybe_sleep(uint64_t now) {
  VirtualClock* clock = VirtualClock::current();
  if (options_.idle_sleep_after_ns == 0) return;
  if (clock != nullptr && clock->mode() != VirtualClock::Mode::kSleepAdvance) return;
  if (idle_since_ns_ == 0) {
    idle_since_ns_ = now;
    return;
  }
  if (now - idle_since_ns_ < options_.idle_sleep_after_ns || !ready_.empty() ||
      !round_end_.empty()) {
    return;
  }
  uint64_t until = now + options_.max_sleep_ns;
  if (!timers_.empty()) until = std::min(until, timers_.top().when_ns);
  if (clock != nullptr) return sleep_virtually(clock, now, until);
  constexpr size_t kMaxFds = 16;
  pollfd fds[kMaxFds];
  nfds_t n = 0;
  for (fabric::Worker* w : workers_) {
    // arm() fails when events are pending: progress again instead of sleeping.
    if (n == kMaxFds || w->event_fd() < 0 || !w->arm()) return;
    until = std::min(until, w->next_deadline_ns());
    fds[n++] = pollfd{w->event_fd(), POLLIN, 0};
  }
  for (int fd : wake_fds_) {
    if (n == kMaxFds) return;
    fds[n++] = pollfd{fd, POLLIN, 0};
  }
  if (until <= now) return;
  const uint64_t ns = until - now;
  const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  ++idle_sleeps_;
  ::ppoll(fds, n, &ts, nullptr);
}

void Scheduler::sleep_virtually(VirtualClock* clock, uint64_t now, uint64_t until) {
  for (const fabric::Worker* w : workers_) until = std::min(until, w->next_deadline_ns());
  if (until <= now) return;
  ++idle_sleeps_;
  clock->advance_to(until);
}

Status Scheduler::add_wake_fd(int fd) {
  if (fd < 0) return InvalidArgument("scheduler: bad wake fd");
  if (wake_fds_.size() >= kMaxWakeFds) return ResourceExhausted("scheduler: too many wake fds");
  wake_fds_.push_back(fd);
  return OkStatus();
}

void Scheduler::remove_wake_fd(int fd) { std::erase(wake_fds_, fd); }

void Scheduler::abort_nested_block_on() {
  std::fputs(
      "farmem: block_on/sync_wait/run called from inside a coroutine on the same "
      "thread's scheduler; co_await the task instead\n",
      stderr);
  std::abort();
}

bool Scheduler::poll_once() {
  bool busy = false;
  if (!ready_.empty()) {
    busy = true;
    in_poll_ = true;
    running_.swap(ready_);
    for (run_pos_ = 0; run_pos_ < running_.size(); ++run_pos_) running_[run_pos_].resume();
    running_.clear();
    run_pos_ = 0;
    in_poll_ = false;
  }
  if (!round_end_.empty() && run_round_end()) busy = true;
  // A worker with nothing in flight is progressed only on idle rounds and every
  // time_check_interval busy rounds: it has no completion to deliver, only background work
  // (keepalive, peer-failure detection), and progressing it can cost a system call (the TCP
  // wire-up interface is polled with epoll_wait). Direct and immediately completed operations
  // leave nothing in flight.
  const bool all_workers = !busy || polls_since_check_ + 1 >= options_.time_check_interval;
  for (fabric::Worker* w : workers_) {
    if (!all_workers && w->in_flight() == 0) continue;
    if (w->progress() > 0) busy = true;
  }
  if (busy) idle_since_ns_ = 0;
  if (!busy || ++polls_since_check_ >= options_.time_check_interval) {
    polls_since_check_ = 0;
    check_time(/*idle=*/!busy);
  }
  return busy;
}

void Scheduler::cancel_round_end(void* arg) {
  std::erase_if(round_end_, [arg](const RoundEnd& r) { return r.arg == arg; });
}

bool Scheduler::run_round_end() {
  in_poll_ = true;
  bool ran = false;
  while (!round_end_.empty()) {
    round_end_running_.swap(round_end_);
    for (const RoundEnd& r : round_end_running_) r.fn(r.arg);
    round_end_running_.clear();
    ran = true;
  }
  in_poll_ = false;
  return ran;
}

void Scheduler::run_until_idle() {
  while (live_ > 0) poll_once();
}

}  // namespace farmem::runtime
