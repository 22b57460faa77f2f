// What the applications of `farmem bench far` (farmem/bench/far_apps.h) share: the local budget
// option, medians of cycle samples, and the three entry points (cold_path.cc, frontend.cc,
// analytics.cc).
// Thread safety: pure functions; each run_* on the calling thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/bench/far_apps.h"
#include "farmem/common/result.h"

namespace farmem::bench {

// --local-memory: "N%" of the working set (0 < N <= 1000), or a size.
Result<uint64_t> local_budget(const std::string& spec, uint64_t working_set);

// The median of TSC cycle samples, in ns (0 for none); reorders the samples.
double median_ns(std::vector<uint64_t>* cycles);

// The 1-minute load average (0 if unknown), printed beside every result.
double load_average_1m();

int run_cold_path(const FarAppOptions& options);
int run_frontend(const FarAppOptions& options);
int run_analytics(const FarAppOptions& options);

}  // namespace farmem::bench
