#include "farmem/common/clock.h"

#include <chrono>
#include <thread>

namespace farmem {

namespace clock_internal {
constinit thread_local VirtualClock* tls_virtual_clock = nullptr;
}  // namespace clock_internal

uint64_t steady_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

double cycles_per_ns() {
  // Real time on purpose: a virtual clock installed on the first caller's thread must not
  // distort the process-wide rate.
  static const double rate = [] {
    uint64_t t0 = steady_now_ns(), c0 = cycles();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    uint64_t t1 = steady_now_ns(), c1 = cycles();
    double r = static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
    return r > 0.0 ? r : 1.0;
  }();
  return rate;
}

}  // namespace farmem
