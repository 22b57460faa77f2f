#include "farmem/bench/harness/latency.h"

#include "farmem/common/clock.h"

namespace farmem::bench {

double us_per_cycle() { return 1.0 / (cycles_per_ns() * 1e3); }

LatencyUs latency_us(const Histogram& cycles) {
  const double us = us_per_cycle();
  return {cycles.quantile(0.50) * us, cycles.quantile(0.99) * us, cycles.quantile(0.999) * us,
          cycles.mean() * us};
}

}  // namespace farmem::bench
