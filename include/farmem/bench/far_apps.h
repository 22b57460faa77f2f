// `farmem bench far cold-path|frontend|analytics`: applications on far objects and containers
// (farmem::far, AIFM's design).
//
//   cold-path  latency of a miss (64 B and 4 KiB objects), of a hit, and of a raw one-sided read
//              of the same size in the same run, beside ucx_perftest's latency for the size and
//              a paged region's page fault
//   frontend   AIFM's web front end (its fig. 6 program): a far hash table of `keys` entries
//              indexing a far array of 8 KiB objects; each request looks up keys_per_request
//              keys, sums their values into the index of the object it reads and compresses the
//              object with LZ4. Backends: far (a local budget of local_memory), local (std
//              containers), mmap (the paged baseline: a file mapped by the program inside a
//              memory cgroup of the budget) or paged (a paged far-memory region, farmem::paged)
//   analytics  a columnar trip table of `rows` rows in far vectors; two queries, once fetching
//              the columns through the cache and once with remote compute: bytes moved, seconds
//
// Each prints its result lines and appends a record per result to the report file.
// Thread safety: run_far_app runs on the calling thread and starts the run's threads.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"

namespace farmem::bench {

enum class FarApp { kColdPath, kFrontend, kAnalytics };
inline constexpr EnumNames<FarApp, 3> kFarAppNames{{{"cold-path", FarApp::kColdPath},
                                                    {"frontend", FarApp::kFrontend},
                                                    {"analytics", FarApp::kAnalytics}}};

enum class FrontendBackend { kFar, kLocal, kMmap, kPaged };
inline constexpr EnumNames<FrontendBackend, 4> kFrontendBackendNames{
    {{"far", FrontendBackend::kFar},
     {"local", FrontendBackend::kLocal},
     {"mmap", FrontendBackend::kMmap},
     {"paged", FrontendBackend::kPaged}}};

// The mmap backend's access advice (normal: the kernel's read-ahead; random: MADV_RANDOM).
enum class MmapAdvice { kNormal, kRandom };
inline constexpr EnumNames<MmapAdvice, 2> kMmapAdviceNames{
    {{"normal", MmapAdvice::kNormal}, {"random", MmapAdvice::kRandom}}};

struct FarAppOptions {
  BenchOptions bench = bench_options_lasting(5);
  FarApp app = FarApp::kColdPath;
  std::string local_memory = "25%";  // BYTES or PCT% of the working set
  uint32_t coroutines = 16;
  uint64_t objects = 0;  // cold-path: objects per size; frontend: array objects (0 = default)
  // frontend: hash-table entries, lookups per request, request skew. AIFM's fig. 6 program has
  // 64 entries per 8 KiB object, 32 lookups per request and Zipf s = 0.85
  // (keys_per_request = 32 runs that program).
  uint64_t keys = 2 << 20;
  uint32_t keys_per_request = 1;
  double zipf_theta = 0.85;
  uint64_t rows = 4'000'000;  // analytics
  FrontendBackend backend = FrontendBackend::kFar;
  uint64_t page_bytes = 64 * 1024;    // frontend paged: the region's page size
  std::string mmap_dir = "/var/tmp";  // frontend mmap: where the mapped file goes (not tmpfs)
  MmapAdvice madvise = MmapAdvice::kRandom;  // frontend mmap
  bool shared_budget = false;  // frontend far|paged: pay from a process LocalBudget of the budget
};

// Runs options.app; 0, or 1 (failed run) / 2 (bad options) with the error printed.
int run_far_app(const FarAppOptions& options);

}  // namespace farmem::bench
