// farmem bench ycsb: YCSB workloads A-F against a far-memory structure (--structure hash: the
// RACE hash table, A-D and F; --structure btree: the B+tree, all six, E's scans included;
// --structure kv: a pool of the key-value store, A-D and F, with --kv-mode and --coalesce).
//
// Load phase: --records keys (fixed-length keys from workload/key_format.h, values from
// value_format.h) are put by every thread's coroutines. Run phase: each of --threads threads
// opens its own handle and runs --coroutines coroutines, each issuing the workload's operation
// mix with keys from the chosen distribution until --duration ends; each coroutine's generator
// is seeded from its thread's stream of --seed. Latency is taken per operation with the TSC.
// Prints throughput and p50/p99/p999 per operation type, and the average round trips per get
// counted by the table itself (the tree: page reads per get and per operation, the index
// cache's hit rate, scanned records per second; the kv store: its mode, the one-sided hit rate
// and the average operations per coalesced message); --out appends JSON. Runs on
// bench_harness.h. The kv store has no update-if-present: YCSB updates are plain puts.
//
// run_bench_ycsb: check_flags -> setup (connect, create the table) -> load -> run_phase ->
// cleanup (destroy the table) -> report (its memory line needs the usage after cleanup).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <ctime>
#include <vector>

#include "bench_harness.h"
#include "commands.h"
#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/ds/hash/hash_table.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/record.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/workload/key_format.h"
#include "farmem/workload/op_generator.h"
#include "farmem/workload/value_format.h"

using farmem::runtime::sync_wait;

namespace farmem::apps {
namespace {

using client::ThreadClient;
using ds::btree::BTree;
using ds::btree::BTreeOptions;
using ds::hash::HashStats;
using ds::hash::HashTable;
using ds::hash::HashTableOptions;
using runtime::Task;
using workload::OpType;

constexpr int kOps = workload::kOpTypeCount;
constexpr std::array<const char*, kOps> kOpNames = {"read", "update", "insert", "scan", "rmw"};
constexpr uint64_t kLoadProgressNs = 2'000'000'000ull;

// A pool of the key-value store on one thread, with the calls the loops make.
struct KvHandle {
  std::unique_ptr<kv::Store> store;
  std::unique_ptr<kv::Pool> pool;
  Task<Result<bool>> get(std::string_view key, std::string* value) { return pool->get(key, value); }
  Task<Status> put(std::string_view key, std::string_view value) { return pool->put(key, value); }
  Task<Status> update(std::string_view key, std::string_view value) {
    return pool->put(key, value);
  }
  Task<Status> insert(std::string_view key, std::string_view value) {
    return pool->put(key, value, kv::wire::kPutCreateOnly);
  }
};

// Read by every thread.
struct YcsbShared {
  const BenchYcsbFlags* flags = nullptr;
  std::string table;
  HashTableOptions table_options;
  BTreeOptions tree_options;
  kv::StoreOptions store_options;
  std::atomic<uint64_t> key_counter{0};
  std::atomic<uint64_t> loaded{0};
};

// The counters of either structure the report uses (a hash table's or a tree's).
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
  DsCounters operator-(const DsCounters& b) const {
    DsCounters d = *this;
    d.gets -= b.gets;
    d.get_round_trips -= b.get_round_trips;
    d.spec_hits -= b.spec_hits;
    d.spec_misses -= b.spec_misses;
    d.splits -= b.splits;
    d.page_reads -= b.page_reads;
    d.cache_hits -= b.cache_hits;
    d.cache_misses -= b.cache_misses;
    d.scan_records -= b.scan_records;
    d.kv_messages -= b.kv_messages;
    d.kv_ops -= b.kv_ops;
    return d;  // cas_failures and split_waits stay totals
  }
};

DsCounters counters_of(const HashTable& t) {
  const HashStats& s = t.stats();
  DsCounters c;
  c.gets = s.gets;
  c.get_round_trips = s.get_round_trips;
  c.spec_hits = s.spec_hits;
  c.spec_misses = s.spec_misses;
  c.cas_failures = s.cas_failures;
  c.splits = s.splits;
  c.split_waits = s.split_waits;
  return c;
}

DsCounters counters_of(const BTree& t) {
  const ds::btree::BTreeStats& s = t.stats();
  DsCounters c;
  c.gets = s.gets;
  c.get_round_trips = s.get_page_reads;
  c.cas_failures = s.lock_retries;
  c.splits = s.splits;
  c.page_reads = s.page_reads;
  c.cache_hits = s.cache_hits;
  c.cache_misses = s.cache_misses;
  c.scan_records = s.scan_records;
  return c;
}

DsCounters counters_of(const KvHandle& t) {
  const kv::StoreStats s = t.store->stats();
  DsCounters c;
  c.gets = s.gets;
  c.get_round_trips = s.get_round_trips;
  c.spec_hits = s.one_sided_hits;
  c.spec_misses = s.one_sided_misses;
  c.kv_messages = s.ops_messages;
  c.kv_ops = s.coalesced_ops;
  return c;
}

// What a thread keeps beside the harness's counts and histograms.
struct alignas(64) YcsbThread {
  std::array<uint64_t, kOps> misses{};  // reads of absent keys, updates of absent keys
  DsCounters load_stats;
  DsCounters measure_base;  // at the start of the measurement
  DsCounters stats;         // measurement only (cas_failures, split_waits: all)
  uint64_t subtables = 0;   // hash: in the handle's directories after the load
  uint64_t height = 0;      // tree: levels after the load
};

// What the main thread learns on the way, for the report.
struct YcsbRun {
  ThreadClient* main_client = nullptr;
  double load_s = 0;
  uint64_t used_before = 0, used_after_load = 0, used_end = 0, used_after = 0;
  uint64_t load_splits = 0, load_split_waits = 0, subtables = 0, height = 0;
};

// Bytes used on all memory nodes.
uint64_t nodes_used(const client::Cluster& cluster, ThreadClient* c) {
  uint64_t used = 0;
  for (const auto& n : cluster.nodes()) {
    auto st = c->run(c->stats(n.node_id));
    if (st.ok()) used += st->used_bytes;
  }
  return used;
}

// ---- Threads

// An update of a key that is not there (yet) is a miss of the workload, not an error.
Status absent_is_miss(Status s, uint64_t* misses) {
  if (s.code() != StatusCode::kNotFound) return s;
  ++*misses;
  return OkStatus();
}

template <typename S>
Task<void> load_loop(S* t, YcsbShared* sh, BenchThread* th, uint64_t first, uint64_t stride) {
  const auto& f = *sh->flags;
  std::string key(f.key_bytes, '\0'), value(f.value_bytes, '\0');
  for (uint64_t i = first; i < f.records && !th->stopping(); i += stride) {
    workload::format_key(i, f.key_bytes, key.data());
    workload::fill_value(i, 0, f.value_bytes, value.data());
    Status s = co_await t->put(key, value);
    if (!s.ok()) {
      th->fail(s);
      co_return;
    }
    sh->loaded.fetch_add(1, std::memory_order_relaxed);
  }
}

// A scan of `length` records from `key` (the tree), or an error (the hash table has no order).
Task<Status> scan_op(HashTable* t, const std::string& key, uint32_t length,
                     std::vector<std::pair<std::string, std::string>>* out) {
  (void)t, (void)key, (void)length, (void)out;
  co_return InvalidArgument("scans need an ordered structure; --structure hash has none");
}
Task<Status> scan_op(KvHandle* t, const std::string& key, uint32_t length,
                     std::vector<std::pair<std::string, std::string>>* out) {
  (void)t, (void)key, (void)length, (void)out;
  co_return InvalidArgument("scans need an ordered structure; --structure kv has none");
}
Task<Status> scan_op(BTree* t, const std::string& key, uint32_t length,
                     std::vector<std::pair<std::string, std::string>>* out) {
  Status s = co_await t->scan(key, "", length, out);
  co_return s;
}

template <typename S>
Task<void> run_loop(S* t, YcsbShared* sh, BenchThread* th, YcsbThread* pt,
                    workload::OpGenerator* gen, uint64_t seed) {
  const auto& f = *sh->flags;
  workload::Rng rng(seed);
  std::string key(f.key_bytes, '\0'), value(f.value_bytes, '\0'), got;
  std::vector<std::pair<std::string, std::string>> range;
  uint64_t version = seed << 20;
  while (th->running()) {
    workload::Op op = gen->next(rng);
    workload::format_key(op.key, f.key_bytes, key.data());
    int type = static_cast<int>(op.type);
    uint64_t t0 = cycles();
    Status s;
    switch (op.type) {
      case OpType::kRead: {
        auto r = co_await t->get(key, &got);
        s = r.ok() ? OkStatus() : r.status();
        if (r.ok() && !*r) ++pt->misses[type];
        break;
      }
      case OpType::kUpdate:
        workload::fill_value(op.key, ++version, f.value_bytes, value.data());
        s = co_await t->update(key, value);
        s = absent_is_miss(s, &pt->misses[type]);
        break;
      case OpType::kInsert:
        workload::fill_value(op.key, 0, f.value_bytes, value.data());
        s = co_await t->insert(key, value);
        if (s.code() == StatusCode::kAlreadyExists) s = OkStatus();
        break;
      case OpType::kReadModifyWrite: {
        auto r = co_await t->get(key, &got);
        s = r.ok() ? OkStatus() : r.status();
        if (!s.ok()) break;
        workload::fill_value(op.key, ++version, f.value_bytes, value.data());
        s = co_await t->update(key, value);
        s = absent_is_miss(s, &pt->misses[type]);
        break;
      }
      case OpType::kScan:
        s = co_await scan_op(t, key, op.scan_length, &range);
        break;
    }
    if (!s.ok()) {
      th->fail(s);
      co_return;
    }
    th->record(type, cycles() - t0);
    th->completed();
  }
}

template <typename S>
void load_stage(BenchThread& th, ThreadClient* c, S* t, YcsbShared* sh) {
  const auto& f = *sh->flags;
  const uint64_t stride = uint64_t{f.bench.threads} * f.coroutines;
  for (uint32_t k = 0; k < f.coroutines && th.error().ok(); ++k) {
    Status s = c->scheduler().spawn(load_loop(t, sh, &th, th.index() * f.coroutines + k, stride));
    if (!s.ok()) th.fail(s);
  }
  c->scheduler().run_until_idle();
}

template <typename S>
void run_stage(BenchThread& th, ThreadClient* c, S* t, YcsbShared* sh, YcsbThread* pt) {
  const auto& f = *sh->flags;
  workload::OpGeneratorOptions go;
  go.spec = *workload::workload_by_name(f.workload);
  go.spec.max_scan_length = f.max_scan_length;
  go.record_count = f.records;
  go.distribution = *workload::distribution_by_name(f.distribution);
  go.zipf_theta = f.zipf;
  go.key_counter = &sh->key_counter;
  auto gen = workload::OpGenerator::create(go);
  if (!gen.ok()) {
    th.fail(gen.status());
    return;
  }
  workload::Rng rng = th.rng();
  for (uint32_t k = 0; k < f.coroutines; ++k) {
    Status s = c->scheduler().spawn(run_loop(t, sh, &th, pt, &*gen, rng.next_u64()));
    if (!s.ok()) th.fail(s);
  }
  c->scheduler().run_until_idle();
}

// Opens the thread's handle of the structure.
Result<std::unique_ptr<HashTable>> open_handle(ThreadClient* c, YcsbShared* sh, HashTable*) {
  return c->run(HashTable::open(c, sh->table, sh->table_options));
}
Result<std::unique_ptr<BTree>> open_handle(ThreadClient* c, YcsbShared* sh, BTree*) {
  return c->run(BTree::open(c, sh->table, sh->tree_options));
}
Result<std::unique_ptr<KvHandle>> open_handle(ThreadClient* c, YcsbShared* sh, KvHandle*) {
  auto h = std::make_unique<KvHandle>();
  auto store = kv::Store::open(c, sh->store_options);
  if (!store.ok()) return store.status();
  h->store = std::move(*store);
  auto pool = sync_wait(h->store->open_pool(sh->table));
  if (!pool.ok()) return pool.status();
  h->pool = std::move(*pool);
  return h;
}
void note_shape(const KvHandle&, YcsbThread*) {}
// Closes what the handle holds open on the nodes (the kv pool; the others hold nothing).
void close_handle(HashTable&) {}
void close_handle(BTree&) {}
void close_handle(KvHandle& h) { (void)sync_wait(h.store->close_pool(*h.pool)); }
void note_shape(const HashTable& t, YcsbThread* pt) {
  for (uint32_t i = 0; i < t.shard_count(); ++i) pt->subtables += t.subtable_count(i);
}
void note_shape(const BTree& t, YcsbThread* pt) { pt->height = t.height(); }

// A thread: open a handle, load its share of the records, run the mix, keep the counters.
template <typename S>
void thread_body(BenchThread& th, ThreadClient* c, YcsbShared* sh, YcsbThread* pt) {
  auto handle = open_handle(c, sh, static_cast<S*>(nullptr));
  if (!handle.ok()) {
    th.fail(handle.status());
    return;
  }
  S* t = handle->get();
  if (!th.arrive_and_wait()) return;
  load_stage(th, c, t, sh);
  pt->load_stats = counters_of(*t);
  note_shape(*t, pt);
  if (!th.arrive_and_wait()) return;
  pt->measure_base = pt->load_stats;
  th.on_measure([pt, t] {  // what warm-up did is not reported
    pt->measure_base = counters_of(*t);
    pt->misses = {};
  });
  run_stage(th, c, t, sh, pt);
  pt->stats = counters_of(*t) - pt->measure_base;
  if (th.error().ok()) close_handle(*t);
}

// ---- Main thread, in order

int check_flags(const Bench& bench, const BenchYcsbFlags& f) {
  auto spec = workload::workload_by_name(f.workload);
  if (!spec.ok()) return bench.fail(2, spec.status().to_string());
  if (spec->proportion(OpType::kScan) > 0 && f.structure == "hash") {
    return bench.fail(2, fmt::format("workload {} needs range scans, which --structure hash does "
                                     "not have (keys are hashed); run it with --structure btree",
                                     f.workload));
  }
  if (spec->proportion(OpType::kScan) > 0 && f.structure == "kv") {
    return bench.fail(2, fmt::format("workload {} needs range scans, which --structure kv does "
                                     "not have; run it with --structure btree",
                                     f.workload));
  }
  if (f.structure == "btree" && f.key_bytes > ds::btree::kMaxKeyBytes) {
    return bench.fail(2, fmt::format("--structure btree takes keys of at most {} bytes",
                                     ds::btree::kMaxKeyBytes));
  }
  if (auto s = workload::validate_key_bytes(f.key_bytes); !s.ok()) {
    return bench.fail(2, s.to_string());
  }
  if (!workload::distribution_by_name(f.distribution).ok()) {
    return bench.fail(2, "--distribution must be zipfian or uniform");
  }
  return 0;
}

// The pool of --structure kv: created (and closed again) by the main thread; the threads open it.
uint64_t pool_capacity(const BenchYcsbFlags& f) {
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

Status create_pool(ThreadClient* c, const BenchYcsbFlags& f, const YcsbShared& sh) {
  auto store = kv::Store::open(c, admin_store(sh));
  if (!store.ok()) return store.status();
  // A scratch pool is temporary: the node deletes it if this process dies (its session ends).
  const uint32_t flags =
      kv::wire::kPoolCreateOnly | (f.keep_table.empty() ? kv::wire::kPoolTemporary : 0u);
  auto pool = sync_wait((*store)->create_pool(sh.table, pool_capacity(f), f.records, flags));
  if (!pool.ok()) return pool.status();
  return sync_wait((*store)->close_pool(**pool));
}

// Connects and creates the table the threads open.
int setup(Bench& bench, const BenchYcsbFlags& f, YcsbShared* sh, YcsbRun* run) {
  const uint64_t local_bytes =
      std::max<uint64_t>((1ull << 30) + f.records * (256 + 2 * f.value_bytes + 2 * f.key_bytes),
                         f.structure == "kv" ? pool_capacity(f) + (256ull << 20) : 0);
  int rc = bench.connect(local_bytes, [&f](client::ClientOptions* o) {
    if (!f.direct.empty()) o->direct_access = f.direct == "on";
  });
  if (rc != 0) return rc;
  sh->flags = &f;
  sh->key_counter.store(f.records);
  // A scratch table lives as long as this process's sessions and is destroyed at the end;
  // --keep-table names one that stays.
  sh->table =
      f.keep_table.empty() ? fmt::format("ycsb-{}-{}", getpid(), std::time(nullptr)) : f.keep_table;
  sh->table_options.temporary = f.keep_table.empty();
  sh->table_options.speculative_lookup = !f.no_speculative;
  if (f.initial_depth >= 0)
    sh->table_options.initial_depth = static_cast<uint32_t>(f.initial_depth);
  sh->table_options.spec_cache_log2 = f.spec_cache_log2;
  sh->tree_options.temporary = f.keep_table.empty();
  sh->tree_options.cache_bytes = f.index_cache_bytes;
  sh->store_options.mode = *kv::parse_kv_mode(f.kv_mode);
  sh->store_options.coalesce = f.coalesce == "on";
  sh->store_options.max_in_flight = f.kv_in_flight;
  sh->store_options.max_batch = f.kv_batch;
  sh->store_options.location_cache_log2 = f.kv_cache_log2;
  ThreadClient* c = *bench.cluster()->thread_client();
  run->main_client = c;
  run->used_before = nodes_used(*bench.cluster(), c);
  Status st;
  if (f.structure == "kv") {
    st = create_pool(c, f, *sh);
  } else if (f.structure == "btree") {
    st = c->run(BTree::create(c, sh->table, sh->tree_options)).status();
  } else {
    st = c->run(HashTable::create(c, sh->table, sh->table_options)).status();
  }
  if (!st.ok()) return bench.fail(1, "creating the " + f.structure + ": " + st.to_string());
  return 0;
}

// Starts the threads and lets them load the records; prints the load line.
int load(Bench& bench, const BenchYcsbFlags& f, YcsbShared* sh, std::vector<YcsbThread>* per,
         YcsbRun* run) {
  if (f.structure == "btree") {
    bench.start_threads([sh, per](BenchThread& th, ThreadClient* c) {
      thread_body<BTree>(th, c, sh, &(*per)[th.index()]);
    });
  } else if (f.structure == "kv") {
    bench.start_threads([sh, per](BenchThread& th, ThreadClient* c) {
      thread_body<KvHandle>(th, c, sh, &(*per)[th.index()]);
    });
  } else {
    bench.start_threads([sh, per](BenchThread& th, ThreadClient* c) {
      thread_body<HashTable>(th, c, sh, &(*per)[th.index()]);
    });
  }
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
  for (const auto& p : *per) {
    run->load_splits += p.load_stats.splits;
    run->load_split_waits += p.load_stats.split_waits;
    run->subtables = std::max(run->subtables, p.subtables);
    run->height = std::max(run->height, p.height);
  }
  if (f.structure == "kv") {
    fmt::print(stderr, "  [load] {} records in {:.2f} s ({:.0f} puts/s), nodes use {} bytes\n",
               f.records, run->load_s, f.records / run->load_s, run->used_after_load);
    return 0;
  }
  if (f.structure == "btree") {
    fmt::print(stderr,
               "  [load] {} records in {:.2f} s ({:.0f} puts/s), nodes use {} bytes; the tree "
               "grew to {} levels ({} splits)\n",
               f.records, run->load_s, f.records / run->load_s, run->used_after_load, run->height,
               run->load_splits);
    return 0;
  }
  fmt::print(stderr,
             "  [load] {} records in {:.2f} s ({:.0f} puts/s), nodes use {} bytes; the table "
             "grew to {} subtables ({} splits, {} operations waited for one)\n",
             f.records, run->load_s, f.records / run->load_s, run->used_after_load, run->subtables,
             run->load_splits, run->load_split_waits);
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

// Destroys a scratch table; takes the nodes' usage before and after.
// After a failed run it asks nothing: a node may be gone, and a scratch table is temporary, so
// the nodes take its memory back when this process's sessions end.
void cleanup(const Bench& bench, const BenchYcsbFlags& f, const YcsbShared& sh, YcsbRun* run) {
  if (!bench.first_error().ok()) return;
  ThreadClient* c = run->main_client;
  run->used_end = nodes_used(*bench.cluster(), c);
  run->used_after = run->used_end;
  if (!f.keep_table.empty()) return;
  Status s;
  if (f.structure == "kv") {
    auto store = kv::Store::open(c, admin_store(sh));
    s = store.ok() ? sync_wait((*store)->delete_pool(sh.table)) : store.status();
  } else if (f.structure == "btree") {
    s = c->run(BTree::destroy(c, sh.table));
  } else {
    s = c->run(HashTable::destroy(c, sh.table));
  }
  if (!s.ok()) bench.fail(1, "destroying the " + f.structure + ": " + s.to_string());
  run->used_after = nodes_used(*bench.cluster(), c);
}

// ---- Report

struct YcsbTotals {
  std::array<uint64_t, kOps> misses{};
  DsCounters stats;  // run phase
  double rtt_per_get = 0;
  double spec_rate = 0;
  double cache_rate = 0;  // tree: index-cache hits per lookup, percent
};

YcsbTotals totals(const std::vector<YcsbThread>& per) {
  YcsbTotals t;
  DsCounters& st = t.stats;
  for (const auto& p : per) {
    for (int i = 0; i < kOps; ++i) t.misses[i] += p.misses[i];
    st.gets += p.stats.gets;
    st.get_round_trips += p.stats.get_round_trips;
    st.spec_hits += p.stats.spec_hits;
    st.spec_misses += p.stats.spec_misses;
    st.cas_failures += p.stats.cas_failures;
    st.splits += p.stats.splits;
    st.page_reads += p.stats.page_reads;
    st.cache_hits += p.stats.cache_hits;
    st.cache_misses += p.stats.cache_misses;
    st.scan_records += p.stats.scan_records;
    st.kv_messages += p.stats.kv_messages;
    st.kv_ops += p.stats.kv_ops;
  }
  t.rtt_per_get = st.gets ? static_cast<double>(st.get_round_trips) / st.gets : 0.0;
  t.spec_rate =
      st.spec_hits + st.spec_misses ? 100.0 * st.spec_hits / (st.gets ? st.gets : 1) : 0.0;
  t.cache_rate = st.cache_hits + st.cache_misses
                     ? 100.0 * st.cache_hits / static_cast<double>(st.cache_hits + st.cache_misses)
                     : 0.0;
  return t;
}

void print_lines(const Bench& bench, const BenchYcsbFlags& f, const YcsbTotals& t,
                 const YcsbRun& run) {
  const double secs = bench.seconds();
  const Histogram all = bench.histogram_all();
  const LatencyUs lat = latency_us(all);
  // The structure's own figures: round trips per get and the speculative cache (hash); pages
  // read per get and per operation, the index cache and scanned records (tree).
  const double per_msg = t.stats.kv_messages ? double(t.stats.kv_ops) / t.stats.kv_messages : 0;
  const std::string own =
      f.structure == "kv" ? fmt::format(
                                "rtt/get={:.3f} kv_mode={} one_sided_hits={:.1f}% keys/msg={:.1f} "
                                "coalesce={} in_flight={} batch={}",
                                t.rtt_per_get, f.kv_mode, t.spec_rate, per_msg, f.coalesce,
                                f.kv_in_flight, f.kv_batch)
      : f.structure == "btree"
          ? fmt::format(
                "page_reads/get={:.3f} page_reads/op={:.3f} index_cache_hits={:.1f}% "
                "scan_records/s={:.0f} lock_retries={} height={}",
                t.rtt_per_get, all.count() ? t.stats.page_reads / double(all.count()) : 0.0,
                t.cache_rate, t.stats.scan_records / secs, t.stats.cas_failures, run.height)
          : fmt::format("rtt/get={:.3f} spec_hits={:.1f}% cas_retries={} spec_cache=2^{}",
                        t.rtt_per_get, t.spec_rate, t.stats.cas_failures, f.spec_cache_log2);
  fmt::print(
      "ycsb: structure={} workload={} records={} key={}B value={}B {} threads={} coroutines={} "
      "ops/s={:.0f} p50={:.2f}us p99={:.2f}us p999={:.2f}us {} transport={}{}\n",
      f.structure, f.workload, f.records, f.key_bytes, f.value_bytes,
      f.distribution == "zipfian" ? fmt::format("zipfian({})", f.zipf) : f.distribution,
      f.bench.threads, f.coroutines, all.count() / secs, lat.p50, lat.p99, lat.p999, own,
      bench.cluster()->transports(), bench.result_suffix());
  for (int i = 0; i < kOps; ++i) {
    const Histogram h = bench.histogram(i);
    if (h.count() == 0) continue;
    const LatencyUs l = latency_us(h);
    fmt::print("  {:<7} count={} ops/s={:.0f} p50={:.2f}us p99={:.2f}us p999={:.2f}us{}\n",
               kOpNames[i], h.count(), h.count() / secs, l.p50, l.p99, l.p999,
               t.misses[i] ? fmt::format(" absent={}", t.misses[i]) : "");
  }
  fmt::print(
      "  memory nodes: {} bytes used before, {} after load, {} at the end, {} after {}\n",
      run.used_before, run.used_after_load, run.used_end, run.used_after,
      f.keep_table.empty() ? "the table was destroyed" : "(table kept: " + f.keep_table + ")");
}

nlohmann::ordered_json per_op_json(const Bench& bench, const YcsbTotals& t) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (int i = 0; i < kOps; ++i) {
    const Histogram h = bench.histogram(i);
    if (h.count() == 0) continue;
    const LatencyUs l = latency_us(h);
    ops[kOpNames[i]] = {{"count", h.count()}, {"ops_per_s", h.count() / bench.seconds()},
                        {"p50_us", l.p50},    {"p99_us", l.p99},
                        {"p999_us", l.p999},  {"absent", t.misses[i]}};
  }
  return ops;
}

int write_json(const Bench& bench, const BenchYcsbFlags& f, const YcsbTotals& t,
               const YcsbRun& run) {
  const Histogram all = bench.histogram_all();
  const LatencyUs lat = latency_us(all);
  nlohmann::ordered_json r = bench.report_record();
  r["structure"] = f.structure;
  r["workload"] = f.workload;
  r["records"] = f.records;
  r["key_bytes"] = f.key_bytes;
  r["value_bytes"] = f.value_bytes;
  r["distribution"] = f.distribution;
  r["zipf"] = f.zipf;
  r["threads"] = f.bench.threads;
  r["coroutines"] = f.coroutines;
  r["duration_s"] = bench.seconds();
  r["ops_per_s"] = all.count() / bench.seconds();
  r["p50_us"] = lat.p50;
  r["p99_us"] = lat.p99;
  r["p999_us"] = lat.p999;
  r["get_round_trips_avg"] = t.rtt_per_get;
  r["spec_hit_percent"] = t.spec_rate;
  r["cas_retries"] = t.stats.cas_failures;
  r["spec_cache_log2"] = f.spec_cache_log2;
  r["load_s"] = run.load_s;
  r["used_bytes_after_load"] = run.used_after_load;
  r["used_bytes_end"] = run.used_end;
  r["used_bytes_before"] = run.used_before;
  r["used_bytes_after_destroy"] = run.used_after;
  r["subtables_after_load"] = run.subtables;
  r["load_splits"] = run.load_splits;
  r["run_splits"] = t.stats.splits;
  if (f.structure == "kv") {
    r["kv_mode"] = f.kv_mode;
    r["coalesce"] = f.coalesce == "on";
    r["kv_in_flight"] = f.kv_in_flight;
    r["kv_batch"] = f.kv_batch;
    r["one_sided_hit_percent"] = t.spec_rate;
    r["keys_per_message"] =
        t.stats.kv_messages ? double(t.stats.kv_ops) / t.stats.kv_messages : 0.0;
    r["kv_messages"] = t.stats.kv_messages;
    r["kv_cache_log2"] = f.kv_cache_log2;
  }
  if (f.structure == "btree") {
    const double secs = bench.seconds();
    r["page_reads_per_get"] = t.rtt_per_get;
    r["page_reads_per_op"] = all.count() ? t.stats.page_reads / double(all.count()) : 0.0;
    r["index_cache_hit_percent"] = t.cache_rate;
    r["index_cache_bytes"] = f.index_cache_bytes;
    r["scans_per_s"] = bench.histogram(static_cast<int>(OpType::kScan)).count() / secs;
    r["scan_records_per_s"] = t.stats.scan_records / secs;
    r["max_scan_length"] = f.max_scan_length;
    r["tree_height"] = run.height;
  }
  r["transport"] = bench.cluster()->transports();
  r["cluster"] = bench.local() ? "local" : "remote";
  r["ops"] = per_op_json(bench, t);
  return bench.finish_report(std::move(r));
}

int report(const Bench& bench, const BenchYcsbFlags& f, const std::vector<YcsbThread>& per,
           const YcsbRun& run) {
  if (Status s = bench.first_error(); !s.ok()) return bench.fail(1, s.to_string());
  const YcsbTotals t = totals(per);
  print_lines(bench, f, t, run);
  return write_json(bench, f, t, run);
}

}  // namespace

int run_bench_ycsb(const BenchYcsbFlags& f) {
  Bench bench("ycsb", f.bench, {kOpNames.begin(), kOpNames.end()});
  if (int rc = check_flags(bench, f); rc != 0) return rc;
  YcsbShared sh;
  YcsbRun state;
  if (int rc = setup(bench, f, &sh, &state); rc != 0) return rc;
  std::vector<YcsbThread> per(f.bench.threads);
  if (int rc = load(bench, f, &sh, &per, &state); rc != 0) return rc;
  run_phase(bench, state);
  cleanup(bench, f, sh, &state);
  return report(bench, f, per, state);
}

}  // namespace farmem::apps
