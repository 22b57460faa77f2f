// Latency figures of a benchmark: a histogram of TSC cycles (common/histogram.h, what the
// harness records per operation type) read as percentiles in microseconds.
// Thread safety: pure functions (the cycle rate is calibrated once per process).
#pragma once

#include "farmem/common/histogram.h"

namespace farmem::bench {

// Latency percentiles of a histogram of TSC cycles, in microseconds.
struct LatencyUs {
  double p50 = 0;
  double p99 = 0;
  double p999 = 0;
  double mean = 0;
};
LatencyUs latency_us(const Histogram& cycles);
double us_per_cycle();

}  // namespace farmem::bench
