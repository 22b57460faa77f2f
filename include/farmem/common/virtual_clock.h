// VirtualClock: a time source that tests drive, so that timers, sleeps, deadlines and tickers
// are deterministic.
//
// A VirtualClock holds a time in nanoseconds that moves only when told to. A ScopedVirtualClock
// installs it on the calling thread: until the guard is destroyed, now_ns() (common/clock.h) on
// that thread returns the clock's time. Everything that reads now_ns() follows it: Scheduler
// timers (sleep_for_ns, sleep_until_ns), Backoff sleeps and BackoffPolicy epochs, scheduler
// tickers (the adaptive throttle's tuner) and fabric::Worker deadlines. Other threads keep the
// real clock. cycles() (the TSC) is never virtual.
//
// How virtual time moves:
//   * Explicitly: advance(ns) and advance_to(t), called by the test.
//   * Automatically, in Mode::kAutoAdvance only: when a runtime::Scheduler on the thread has an
//     idle round (nothing was ready to run, no worker made progress), none of its workers has an
//     operation in flight, and it has a timer, it advances the clock to its earliest timer;
//     the timer fires at once and its coroutine runs in the next round (timers due at the same
//     time fire together, in arrival order). So block_on of a task that sleeps returns at once,
//     with the clock exactly at the sleep's deadline, and timers fire in deadline order (tokio's
//     paused time works the same way). A busy scheduler never moves the clock: a coroutine that
//     yields forever keeps virtual time still, and the test advances it explicitly. An
//     operation in flight on a real fabric worker also keeps it still, because its completion
//     arrives in real time and jumping past its deadline would time it out spuriously.
// In kManual mode nothing but the test moves the clock; a scheduler whose only work is a
// sleeper then polls forever, so drive it with poll_once() and advance().
//   * By idle sleeps, in Mode::kSleepAdvance only: as kManual, except that a scheduler that
//     would sleep on an idle round (SchedulerOptions::idle_sleep_after_ns of idle time passed,
//     measured on this clock) advances the clock to the time it would wake at instead of
//     blocking, and counts the sleep (Scheduler::idle_sleeps()). Tests of the idle sleep use it.
// A scheduler never blocks in an idle sleep while a virtual clock is installed.
// Time never goes backwards: advance_to(t) with t <= now_ns() does nothing.
//
// Preconditions: a clock outlives every guard that installs it; guards on one thread are
// destroyed in reverse order of construction (automatic scopes guarantee this; a violation
// aborts with a message). The time is a plain integer: a clock belongs to one thread at a time;
// installing one clock on two threads at once needs the test's own synchronisation.
// Thread safety: a clock and its guards are used on the thread that installed them.
#pragma once

#include <cstdint>

#include "farmem/common/clock.h"

namespace farmem {

class VirtualClock {
 public:
  enum class Mode : uint8_t {
    kManual,        // only advance()/advance_to() move the clock
    kAutoAdvance,   // an idle scheduler also advances it to its next timer
    kSleepAdvance,  // an idle scheduler's sleep advances it to the wake-up time
  };
  // Non-zero: some code treats a timestamp of 0 as "not started yet".
  static constexpr uint64_t kDefaultStartNs = 1'000'000'000'000;  // 1000 s

  explicit VirtualClock(Mode mode, uint64_t start_ns = kDefaultStartNs)
      : now_ns_(start_ns), mode_(mode) {}
  ~VirtualClock();  // aborts if still installed on this thread
  VirtualClock(const VirtualClock&) = delete;
  VirtualClock& operator=(const VirtualClock&) = delete;

  // The clock installed on the calling thread (innermost guard), or null.
  static VirtualClock* current() { return clock_internal::tls_virtual_clock; }

  uint64_t now_ns() const { return now_ns_; }
  void advance(uint64_t ns) { now_ns_ += ns; }
  void advance_to(uint64_t t) {
    if (t > now_ns_) now_ns_ = t;
  }

  Mode mode() const { return mode_; }
  void set_mode(Mode mode) { mode_ = mode; }

  // For schedulers (kAutoAdvance): advance_to(t), counted in auto_advances() if it moved.
  void auto_advance_to(uint64_t t) {
    if (t <= now_ns_) return;
    now_ns_ = t;
    ++auto_advances_;
  }
  // How many times a scheduler moved the clock.
  uint64_t auto_advances() const { return auto_advances_; }

 private:
  uint64_t now_ns_;
  uint64_t auto_advances_ = 0;
  Mode mode_;
};

// Installs a VirtualClock on the calling thread for the guard's lifetime; the clock that was
// installed before (or none) comes back when the guard is destroyed. Not movable.
class ScopedVirtualClock {
 public:
  explicit ScopedVirtualClock(VirtualClock& clock);
  ~ScopedVirtualClock();
  ScopedVirtualClock(const ScopedVirtualClock&) = delete;
  ScopedVirtualClock& operator=(const ScopedVirtualClock&) = delete;

 private:
  VirtualClock* clock_;
  VirtualClock* previous_;
};

}  // namespace farmem
