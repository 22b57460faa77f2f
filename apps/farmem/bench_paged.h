// `farmem bench paged fault|scan`: paged regions (bench_paged.cc).
//   fault: latency of a missing-page fault (a fetch, no eviction) beside a raw ThreadClient
//          read of the same size, per page size.
//   scan:  throughput of a sequential read scan of a region at a local budget.
#pragma once

#include <cstdint>
#include <string>

#include "commands.h"

namespace CLI {
class App;
}

namespace farmem::apps {

struct BenchPagedFlags {
  ClusterFlags cluster;
  std::string mode = "fault";        // fault | scan
  uint64_t page_bytes = 64 * 1024;   // fault and scan
  uint64_t bytes = 1ull << 30;       // scan: region size; fault: pages measured x page size
  std::string local_memory = "25%";  // scan: BYTES or PCT% of the region
  uint32_t samples = 2000;           // fault: faults measured
  std::string out;                   // FILE.json (appended, one line)
};
CLI::App* add_bench_paged(CLI::App* bench, BenchPagedFlags* flags);
int run_bench_paged(const BenchPagedFlags& flags);

}  // namespace farmem::apps
