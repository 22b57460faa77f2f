// `farmem bench ado-filter`: why near-data compute matters. A pool of the key-value store holds
// `records` records (values of value_bytes made of 8-byte signed fields); one filter query
// (plugins/filter/filter_query.h, e.g. "sum 0 where 1 ge 500") is answered two ways, alternately,
// `repeat` times each: by fetching every record to the client (gets from `coroutines`
// coroutines) and filtering here, and by one invocation of the pool's filter ADO plugin, which
// scans the records on the memory node. Both answers must agree. Prints each way's best time
// and bytes moved and the ratios; the report file gets one record. Needs a memory node with the
// filter plugin (bench/ado_filter.sh starts one).
// Thread safety: run_ado_filter runs on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "farmem/bench/harness/options.h"

namespace farmem::bench {

struct AdoFilterOptions {
  BenchOptions bench = bench_options_lasting(1);
  uint64_t records = 100000;
  size_t value_bytes = 64;
  std::string query = "sum 0 where 1 ge 500";
  uint32_t coroutines = 64;
  uint32_t repeat = 3;
};

// Runs the benchmark; 0, or 1 (failed run, answers differ) / 2 (bad options) with the error
// printed.
int run_ado_filter(const AdoFilterOptions& options);

}  // namespace farmem::bench
