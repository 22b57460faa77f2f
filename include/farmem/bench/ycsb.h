// `farmem bench ycsb`: YCSB workloads A-F against a far-memory structure: the RACE hash table
// (A-D and F), the B+tree (all six, E's scans included) or a pool of the key-value store (A-D
// and F; its mode and request coalescing are options).
//
// A run loads `records` keys from every thread's coroutines, then each thread opens its own
// handle and runs `coroutines` coroutines issuing the workload's mix until the duration ends.
// Prints the load line (stderr), a result line with throughput, latency percentiles and the
// structure's own figures, a line per operation type and the memory nodes' usage; the report
// file gets one record. A scratch table is destroyed at the end (keep_table names one that
// stays).
// Thread safety: run_ycsb runs on the calling thread and starts the run's threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"
#include "farmem/bench/workload/workload_spec.h"
#include "farmem/kv/store.h"

namespace farmem::bench {

enum class YcsbStructure { kHash, kBtree, kKv };
inline constexpr EnumNames<YcsbStructure, 3> kYcsbStructureNames{
    {{"hash", YcsbStructure::kHash}, {"btree", YcsbStructure::kBtree}, {"kv", YcsbStructure::kKv}}};

// YCSB's core workloads (workload::workload_by_name), and w (100% update: the SET-only shape of
// redis-benchmark's SET test); the capitals are accepted too.
enum class YcsbWorkload { kA, kB, kC, kD, kE, kF, kW };
inline constexpr EnumNames<YcsbWorkload, 14> kYcsbWorkloadNames{{{"a", YcsbWorkload::kA},
                                                                 {"b", YcsbWorkload::kB},
                                                                 {"c", YcsbWorkload::kC},
                                                                 {"d", YcsbWorkload::kD},
                                                                 {"e", YcsbWorkload::kE},
                                                                 {"f", YcsbWorkload::kF},
                                                                 {"w", YcsbWorkload::kW},
                                                                 {"A", YcsbWorkload::kA},
                                                                 {"B", YcsbWorkload::kB},
                                                                 {"C", YcsbWorkload::kC},
                                                                 {"D", YcsbWorkload::kD},
                                                                 {"E", YcsbWorkload::kE},
                                                                 {"F", YcsbWorkload::kF},
                                                                 {"W", YcsbWorkload::kW}}};

struct YcsbOptions {
  BenchOptions bench = bench_options_lasting(10);
  YcsbStructure structure = YcsbStructure::kHash;
  YcsbWorkload workload = YcsbWorkload::kA;
  uint64_t records = 1000000;
  size_t key_bytes = 8;
  size_t value_bytes = 8;
  workload::Distribution distribution = workload::Distribution::kZipfian;
  double zipf = 0.99;
  uint32_t coroutines = 16;
  bool no_speculative = false;  // hash: no speculative lookup
  bool no_served = false;       // hash: no served procedures (one-sided over TCP too)
  int initial_depth = -1;       // hash: 2^N subtables at creation; -1: the table's default
  uint32_t spec_cache_log2 = 20;
  std::optional<bool> direct;                // unset: the client config's direct_access
  std::string keep_table;                    // "": a temporary table destroyed at the end
  uint32_t max_scan_length = 100;            // workload E: scan lengths uniform in 1..this
  uint64_t index_cache_bytes = 64ull << 20;  // btree: each handle's index cache
  kv::KvMode kv_mode = kv::KvMode::kAuto;    // kv: the store's mode
  bool coalesce = true;                      // kv: request coalescing
  uint32_t kv_in_flight = 8;                 // kv: messages in flight per node
  uint32_t kv_batch = 64;                    // kv: operations per message
  int kv_cache_log2 = 20;                    // kv: location cache entries = 2^N
  uint64_t pool_capacity_bytes = 0;          // kv: 0 = from records and sizes
};

// Runs the benchmark; 0, or 1 (failed run) / 2 (bad options) with the error printed.
int run_ycsb(const YcsbOptions& options);

}  // namespace farmem::bench
