// farmem bench ycsb (farmem/bench/ycsb.h): the main thread's stages.
//
// Load phase: --records keys (fixed-length keys from workload/key_format.h, values from
// value_format.h) are put by every thread's coroutines. Run phase: each of --threads threads
// opens its own handle and runs --coroutines coroutines, each issuing the workload's operation
// mix with keys from the chosen distribution until --duration ends; each coroutine's generator
// is seeded from its thread's stream of --seed (ycsb_threads.cc). The report (ycsb_report.cc)
// prints throughput and p50/p99/p999 per operation type, and the structure's own figures.
//
// run_ycsb: check_options -> setup (connect, create the table) -> load -> run_phase ->
// cleanup (destroy the table) -> report (its memory line needs the usage after cleanup).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "farmem/bench/workload/key_format.h"
#include "farmem/bench/ycsb.h"
#include "farmem/common/clock.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/record.h"
#include "farmem/runtime/scheduler.h"
#include "ycsb_run.h"

namespace farmem::bench {
namespace {

using client::ThreadClient;
using ds::btree::BTree;
using ds::hash::HashTable;
using workload::OpType;

constexpr uint64_t kLoadProgressNs = 2'000'000'000ull;

std::string_view structure_name(const YcsbOptions& f) {
  return name_of(kYcsbStructureNames, f.structure);
}

int check_options(const Bench& bench, const YcsbOptions& f) {
  const std::string_view name = name_of(kYcsbWorkloadNames, f.workload);
  auto spec = workload::workload_by_name(name);
  if (!spec.ok()) return bench.fail(2, spec.status().to_string());
  const bool scans = spec->proportion(OpType::kScan) > 0;
  if (scans && f.structure == YcsbStructure::kHash) {
    return bench.fail(2, fmt::format("workload {} needs range scans, which --structure hash does "
                                     "not have (keys are hashed); run it with --structure btree",
                                     name));
  }
  if (scans && f.structure == YcsbStructure::kKv) {
    return bench.fail(2, fmt::format("workload {} needs range scans, which --structure kv does "
                                     "not have; run it with --structure btree",
                                     name));
  }
  if (f.structure == YcsbStructure::kBtree && f.key_bytes > ds::btree::kMaxKeyBytes) {
    return bench.fail(2, fmt::format("--structure btree takes keys of at most {} bytes",
                                     ds::btree::kMaxKeyBytes));
  }
  if (auto s = workload::validate_key_bytes(f.key_bytes); !s.ok()) {
    return bench.fail(2, s.to_string());
  }
  return 0;
}

// The pool of --structure kv: created (and closed again) by the main thread; the threads open it.
uint64_t pool_capacity(const YcsbOptions& f) {
  if (f.pool_capacity_bytes != 0) return f.pool_capacity_bytes;
  // Two records per key (updates leave the old one for its grace period), index slots, slack.
  const uint64_t record = kv::record_alloc_bytes(f.key_bytes, f.value_bytes);
  return f.records * (2 * record + 64) + (256ull << 20);
}

kv::StoreOptions admin_store(const YcsbShared& sh) {
  kv::StoreOptions o = sh.store_options;
  o.location_cache_log2 = -1;  // creates and deletes only
  return o;
}

Status create_pool(ThreadClient* c, const YcsbOptions& f, const YcsbShared& sh) {
  FARMEM_ASSIGN_OR_RETURN(auto store, kv::Store::open(c, admin_store(sh)));
  // A scratch pool is temporary: the node deletes it if this process dies (its session ends).
  const uint32_t flags =
      kv::wire::kPoolCreateOnly | (f.keep_table.empty() ? kv::wire::kPoolTemporary : 0u);
  FARMEM_ASSIGN_OR_RETURN(auto pool, runtime::sync_wait(store->create_pool(
                                         sh.table, pool_capacity(f), f.records, flags)));
  return runtime::sync_wait(store->close_pool(*pool));
}

// The options of the three structures' handles.
void set_structure_options(const YcsbOptions& f, YcsbShared* sh) {
  sh->table_options.temporary = f.keep_table.empty();
  sh->table_options.speculative_lookup = !f.no_speculative;
  sh->table_options.served_procedures = !f.no_served;
  if (f.initial_depth >= 0)
    sh->table_options.initial_depth = static_cast<uint32_t>(f.initial_depth);
  sh->table_options.spec_cache_log2 = f.spec_cache_log2;
  sh->tree_options.temporary = f.keep_table.empty();
  sh->tree_options.cache_bytes = f.index_cache_bytes;
  sh->tree_options.served_procedures = !f.no_served;
  sh->store_options.mode = f.kv_mode;
  sh->store_options.coalesce = f.coalesce;
  sh->store_options.max_in_flight = f.kv_in_flight;
  sh->store_options.max_batch = f.kv_batch;
  sh->store_options.location_cache_log2 = f.kv_cache_log2;
}

Status create_structure(ThreadClient* c, const YcsbOptions& f, const YcsbShared& sh) {
  switch (f.structure) {
    case YcsbStructure::kKv:
      return create_pool(c, f, sh);
    case YcsbStructure::kBtree:
      return c->run(BTree::create(c, sh.table, sh.tree_options)).status();
    case YcsbStructure::kHash:
      break;
  }
  return c->run(HashTable::create(c, sh.table, sh.table_options)).status();
}

// Connects and creates the table the threads open.
int setup(Bench& bench, const YcsbOptions& f, YcsbShared* sh, YcsbRun* run) {
  const uint64_t local_bytes =
      std::max<uint64_t>((1ull << 30) + f.records * (256 + 2 * f.value_bytes + 2 * f.key_bytes),
                         f.structure == YcsbStructure::kKv ? pool_capacity(f) + (256ull << 20) : 0);
  int rc = bench.connect(local_bytes, [&f](client::ClientOptions* o) {
    if (f.direct) o->direct_access = *f.direct;
  });
  if (rc != 0) return rc;
  sh->options = &f;
  sh->key_counter.store(f.records);
  // A scratch table lives as long as this process's sessions and is destroyed at the end;
  // --keep-table names one that stays.
  sh->table =
      f.keep_table.empty() ? fmt::format("ycsb-{}-{}", getpid(), std::time(nullptr)) : f.keep_table;
  set_structure_options(f, sh);
  ThreadClient* c = *bench.cluster()->thread_client();
  run->main_client = c;
  run->used_before = nodes_used(*bench.cluster(), c);
  Status st = create_structure(c, f, *sh);
  if (!st.ok()) {
    return bench.fail(1, fmt::format("creating the {}: {}", structure_name(f), st.to_string()));
  }
  return 0;
}

void print_load_line(const YcsbOptions& f, const YcsbRun& run) {
  const std::string head =
      fmt::format("  [load] {} records in {:.2f} s ({:.0f} puts/s), nodes use {} bytes", f.records,
                  run.load_s, f.records / run.load_s, run.used_after_load);
  switch (f.structure) {
    case YcsbStructure::kKv:
      fmt::print(stderr, "{}\n", head);
      return;
    case YcsbStructure::kBtree:
      fmt::print(stderr, "{}; the tree grew to {} levels ({} splits)\n", head, run.height,
                 run.load_splits);
      return;
    case YcsbStructure::kHash:
      break;
  }
  fmt::print(stderr,
             "{}; the table grew to {} subtables ({} splits, {} operations waited for one)\n", head,
             run.subtables, run.load_splits, run.load_split_waits);
}

// Starts the threads and lets them load the records; prints the load line.
int load(Bench& bench, const YcsbOptions& f, YcsbShared* sh, std::vector<YcsbThread>* per,
         YcsbRun* run) {
  bench.start_threads(ycsb_thread_body(sh, per));
  bench.wait_arrived();
  uint64_t load_start = now_ns();
  bench.release();
  bench.wait_arrived(kLoadProgressNs, [sh, &f] {
    fmt::print(stderr, "  [load] {} / {} records\n", sh->loaded.load(), f.records);
  });
  run->load_s = (now_ns() - load_start) / 1e9;
  if (bench.stopped()) {  // before asking the nodes anything: one of them may be gone
    bench.join();
    return bench.fail(1, "load failed: " + bench.first_error().to_string());
  }
  run->used_after_load = nodes_used(*bench.cluster(), run->main_client);
  run->syncs_after_load = nodes_syncs(*bench.cluster(), run->main_client);
  for (const auto& p : *per) {
    run->load_splits += p.load_stats.splits;
    run->load_split_waits += p.load_stats.split_waits;
    run->subtables = std::max(run->subtables, p.subtables);
    run->height = std::max(run->height, p.height);
  }
  print_load_line(f, *run);
  return 0;
}

// The timed run phase; every 10 s the progress line also shows the nodes' usage (it stays flat).
void run_phase(Bench& bench, const YcsbRun& run) {
  const client::Cluster* cluster = bench.cluster();
  ThreadClient* c = run.main_client;
  ProgressFormat progress;  // "ops/s", no decimals
  progress.extra_every_s = 10;
  progress.extra = [cluster, c] {
    return fmt::format(", nodes use {:.1f} MiB", nodes_used(*cluster, c) / 1048576.0);
  };
  bench.run_timed(progress);
}

Status destroy_structure(ThreadClient* c, const YcsbOptions& f, const YcsbShared& sh) {
  switch (f.structure) {
    case YcsbStructure::kKv: {
      FARMEM_ASSIGN_OR_RETURN(auto store, kv::Store::open(c, admin_store(sh)));
      return runtime::sync_wait(store->delete_pool(sh.table));
    }
    case YcsbStructure::kBtree:
      return c->run(BTree::destroy(c, sh.table));
    case YcsbStructure::kHash:
      break;
  }
  return c->run(HashTable::destroy(c, sh.table));
}

// Destroys a scratch table; takes the nodes' usage before and after.
// After a failed run it asks nothing: a node may be gone, and a scratch table is temporary, so
// the nodes take its memory back when this process's sessions end.
void cleanup(const Bench& bench, const YcsbOptions& f, const YcsbShared& sh, YcsbRun* run) {
  if (!bench.first_error().ok()) return;
  ThreadClient* c = run->main_client;
  run->used_end = nodes_used(*bench.cluster(), c);
  run->syncs_end = nodes_syncs(*bench.cluster(), c);
  run->used_after = run->used_end;
  if (!f.keep_table.empty()) return;
  Status s = destroy_structure(c, f, sh);
  if (!s.ok()) {
    bench.fail(1, fmt::format("destroying the {}: {}", structure_name(f), s.to_string()));
  }
  run->used_after = nodes_used(*bench.cluster(), c);
}

}  // namespace

int run_ycsb(const YcsbOptions& f) {
  Bench bench("ycsb", f.bench, {kYcsbOpNames.begin(), kYcsbOpNames.end()});
  if (int rc = check_options(bench, f); rc != 0) return rc;
  YcsbShared sh;
  YcsbRun state;
  if (int rc = setup(bench, f, &sh, &state); rc != 0) return rc;
  std::vector<YcsbThread> per(f.bench.threads);
  if (int rc = load(bench, f, &sh, &per, &state); rc != 0) return rc;
  run_phase(bench, state);
  cleanup(bench, f, sh, &state);
  return ycsb_report(bench, f, per, state);
}

}  // namespace farmem::bench
