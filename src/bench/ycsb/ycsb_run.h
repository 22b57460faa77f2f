// What the pieces of the YCSB benchmark share (farmem/bench/ycsb.h): the run's state the threads
// read (YcsbShared), the structures' counters (DsCounters), what each thread keeps (YcsbThread)
// and what the main thread learns for the report (YcsbRun). ycsb_threads.cc runs the threads,
// ycsb_bench.cc the main thread's stages, ycsb_report.cc the result lines and the record.
// Thread safety: YcsbShared is read by every thread (its atomics shared); a YcsbThread belongs to
// its thread until the join; YcsbRun to the main thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "farmem/bench/harness/bench.h"
#include "farmem/bench/workload/op_generator.h"
#include "farmem/bench/ycsb.h"
#include "farmem/client/cluster.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/ds/hash/hash_table.h"
#include "farmem/kv/store.h"

namespace farmem::bench {

inline constexpr int kYcsbOps = workload::kOpTypeCount;
inline constexpr std::array<const char*, kYcsbOps> kYcsbOpNames = {"read", "update", "insert",
                                                                   "scan", "rmw"};

// Read by every thread.
struct YcsbShared {
  const YcsbOptions* options = nullptr;
  std::string table;
  ds::hash::HashTableOptions table_options;
  ds::btree::BTreeOptions tree_options;
  kv::StoreOptions store_options;
  std::atomic<uint64_t> key_counter{0};
  std::atomic<uint64_t> loaded{0};
};

// The counters of either structure the report uses (a hash table's, a tree's or a store's).
struct DsCounters {
  uint64_t gets = 0;
  uint64_t get_round_trips = 0;  // hash: batches waited on by get; tree: pages read by get
  uint64_t spec_hits = 0, spec_misses = 0;
  uint64_t cas_failures = 0;  // hash: lost slot CASes; tree: failed remote lock CASes
  uint64_t splits = 0, split_waits = 0;
  uint64_t page_reads = 0;  // tree: pages read by every operation
  uint64_t cache_hits = 0, cache_misses = 0;
  uint64_t scan_records = 0;
  uint64_t kv_messages = 0, kv_ops = 0;  // kv: coalesced messages and the operations in them
  // Served calls the node answered / operations it sent back (hash: get, update, insert; tree:
  // scan calls / scans that went on one-sided).
  uint64_t served_ops = 0, served_fallbacks = 0;
  // The counts since `b`; cas_failures and split_waits stay totals.
  DsCounters operator-(const DsCounters& b) const;
  // Adds `o`'s counts (split_waits excepted: the report takes them from the load).
  void add(const DsCounters& o);
};

// What a thread keeps beside the harness's counts and histograms.
struct alignas(64) YcsbThread {
  std::array<uint64_t, kYcsbOps> misses{};  // reads of absent keys, updates of absent keys
  DsCounters load_stats;
  DsCounters measure_base;  // at the start of the measurement
  DsCounters stats;         // measurement only (cas_failures, split_waits: all)
  uint64_t subtables = 0;   // hash: in the handle's directories after the load
  uint64_t height = 0;      // tree: levels after the load
};

// What the main thread learns on the way, for the report.
struct YcsbRun {
  client::ThreadClient* main_client = nullptr;
  double load_s = 0;
  uint64_t used_before = 0, used_after_load = 0, used_end = 0, used_after = 0;
  uint64_t syncs_after_load = 0, syncs_end = 0;  // the nodes' journal syncs (durable nodes)
  uint64_t load_splits = 0, load_split_waits = 0, subtables = 0, height = 0;
};

// Bytes used on all memory nodes (nodes that do not answer count nothing).
uint64_t nodes_used(const client::Cluster& cluster, client::ThreadClient* c);
// The journal syncs of the cluster's nodes since they started (0 on volatile nodes).
uint64_t nodes_syncs(const client::Cluster& cluster, client::ThreadClient* c);

// The body of every thread of a run on sh->options->structure (ycsb_threads.cc): open a handle,
// load its share of the records, run the mix, keep the counters in (*per)[thread index].
Bench::ThreadBody ycsb_thread_body(YcsbShared* sh, std::vector<YcsbThread>* per);

// Prints the result lines and appends the record (ycsb_report.cc); the exit code.
int ycsb_report(const Bench& bench, const YcsbOptions& o, const std::vector<YcsbThread>& per,
                const YcsbRun& run);

}  // namespace farmem::bench
