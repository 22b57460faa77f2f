// `farmem bench far cold-path|frontend|analytics`: far objects and containers (bench_far.cc).
#pragma once

#include <cstdint>
#include <string>

#include "commands.h"

namespace CLI {
class App;
}

namespace farmem::apps {

struct BenchFarFlags {
  BenchFlags bench = bench_flags_lasting(5);
  std::string app = "cold-path";     // cold-path | frontend | analytics
  std::string local_memory = "25%";  // BYTES or PCT% of the working set
  uint32_t coroutines = 16;
  uint64_t objects = 0;  // cold-path: objects per size; frontend: array objects (0 = default)
  // frontend: hash-table entries, lookups per request, request skew. The request looks
  // up one key; AIFM's fig. 6 program has 64 entries per 8 KiB object, 32 lookups per request
  // and Zipf s = 0.85 (--keys-per-request 32 runs that program).
  uint64_t keys = 2 << 20;
  uint32_t keys_per_request = 1;
  double zipf_theta = 0.85;
  uint64_t rows = 4'000'000;          // analytics
  std::string backend = "far";        // frontend: far | local | mmap | paged
  uint64_t page_bytes = 64 * 1024;    // frontend paged: the region's page size
  std::string mmap_dir = "/var/tmp";  // frontend mmap: where the mapped file goes (not tmpfs)
  std::string madvise = "random";     // frontend mmap: the access advice (normal: readahead)
  bool shared_budget = false;  // frontend far|paged: pay from a process LocalBudget of the budget
};
CLI::App* add_bench_far(CLI::App* bench, BenchFarFlags* flags);
int run_bench_far(const BenchFarFlags& flags);

}  // namespace farmem::apps
