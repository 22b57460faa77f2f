#include "farmem/common/clock.h"

#include <chrono>
#include <thread>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace farmem {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

double cycles_per_ns() {
  static const double rate = [] {
    uint64_t t0 = now_ns(), c0 = cycles();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    uint64_t t1 = now_ns(), c1 = cycles();
    double r = static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
    return r > 0.0 ? r : 1.0;
  }();
  return rate;
}

}  // namespace farmem
