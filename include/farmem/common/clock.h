// Monotonic time for deadlines and latency measurement.
//
// now_ns() is steady_clock in nanoseconds (vDSO, ~20 ns). Cycles are cheaper (~7 ns) for
// per-operation latency: cycles() reads the TSC and cycles_to_ns() converts with a rate measured
// once per process. Thread safety: all functions are callable from any thread.
#pragma once

#include <cstdint>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace farmem {

uint64_t now_ns();
inline uint64_t cycles() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return now_ns();
#endif
}
double cycles_per_ns();  // measured on first call (takes ~10 ms once)
inline double cycles_to_ns(uint64_t c) { return static_cast<double>(c) / cycles_per_ns(); }

}  // namespace farmem
