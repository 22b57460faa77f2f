// Monotonic time for deadlines, timers and latency measurement.
//
// now_ns() is the clock of every deadline, timer, sleep, backoff and tuner epoch in farmem. On a
// thread without a virtual clock it is steady_clock in nanoseconds (vDSO, ~20-30 ns). A test may
// install a VirtualClock on its thread (common/virtual_clock.h); now_ns() on that thread then
// returns the virtual time, and other threads are not affected. The check costs one
// thread-local load and a predicted branch; there is nothing to configure in production.
//
// steady_now_ns() is always the real steady clock, for code that must measure real time even on
// a thread with a virtual clock (the TSC calibration below).
//
// cycles() reads the TSC (~7-13 ns) and cycles_to_ns() converts with a rate measured once per
// process. The TSC is never virtual: use it for latency samples and for intervals whose exact
// length does not matter (the hash table's directory re-check interval), never for a deadline,
// a timer or anything else a test must control. Code that a test drives with a virtual clock
// must not make decisions on cycles().
//
// Thread safety: all functions are callable from any thread; the virtual override is per thread.
#pragma once

#include <cstdint>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace farmem {

class VirtualClock;

namespace clock_internal {
// The calling thread's virtual clock, set only by ScopedVirtualClock (virtual_clock.h).
extern constinit thread_local VirtualClock* tls_virtual_clock;
uint64_t virtual_now_ns(const VirtualClock* clock);
}  // namespace clock_internal

// The real monotonic clock (std::chrono::steady_clock), in nanoseconds.
uint64_t steady_now_ns();

// The thread's virtual time if a VirtualClock is installed on it, else steady_now_ns().
inline uint64_t now_ns() {
  const VirtualClock* v = clock_internal::tls_virtual_clock;
  if (v != nullptr) [[unlikely]] {
    return clock_internal::virtual_now_ns(v);
  }
  return steady_now_ns();
}

inline uint64_t cycles() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return steady_now_ns();
#endif
}
double cycles_per_ns();  // measured on first call (takes ~10 ms of real time once)
inline double cycles_to_ns(uint64_t c) { return static_cast<double>(c) / cycles_per_ns(); }

}  // namespace farmem
