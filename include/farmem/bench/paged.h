// `farmem bench paged fault|scan`: paged far-memory regions (farmem::paged).
//
//   fault  latency of a missing-page fault (a fetch, no eviction) beside a raw ThreadClient read
//          of the same size, at one page size: `samples` faults
//   scan   throughput of a sequential read scan of a region of `bytes` at a local budget of
//          local_memory (BYTES or PCT% of the region), after filling it
//
// Prints one result line; `out` gets a JSON line.
// Thread safety: run_paged_bench runs on the calling thread.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"

namespace farmem::bench {

enum class PagedBenchMode { kFault, kScan };
inline constexpr EnumNames<PagedBenchMode, 2> kPagedBenchModeNames{
    {{"fault", PagedBenchMode::kFault}, {"scan", PagedBenchMode::kScan}}};

struct PagedBenchOptions {
  ClusterOptions cluster;
  PagedBenchMode mode = PagedBenchMode::kFault;
  uint64_t page_bytes = 64 * 1024;   // fault and scan
  uint64_t bytes = 1ull << 30;       // scan: region size
  std::string local_memory = "25%";  // scan: BYTES or PCT% of the region
  uint32_t samples = 2000;           // fault: faults measured
  std::string out;                   // FILE.json (appended, one line)
};

// Runs the benchmark; 0, or 1 with the error printed.
int run_paged_bench(const PagedBenchOptions& options);

}  // namespace farmem::bench
