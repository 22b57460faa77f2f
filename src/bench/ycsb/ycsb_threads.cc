// The threads of `farmem bench ycsb` (ycsb_run.h): each opens its handle of the structure, loads
// its share of the records from its coroutines, then runs the workload's mix until the harness
// stops the run. Every operation is timed with the TSC; the kv store has no update-if-present,
// so YCSB updates of a pool are plain puts.
#include <utility>

#include "farmem/bench/workload/key_format.h"
#include "farmem/bench/workload/value_format.h"
#include "farmem/common/clock.h"
#include "farmem/kv/pool.h"
#include "farmem/runtime/scheduler.h"
#include "ycsb_run.h"

namespace farmem::bench {
namespace {

using client::ThreadClient;
using ds::btree::BTree;
using ds::hash::HashStats;
using ds::hash::HashTable;
using runtime::Task;
using workload::OpType;

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
  c.served_ops = s.served_gets + s.served_updates + s.served_inserts;
  c.served_fallbacks = s.served_fallbacks;
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
  c.served_ops = s.served_calls;
  c.served_fallbacks = s.served_fallbacks;
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

// An update of a key that is not there (yet) is a miss of the workload, not an error.
Status absent_is_miss(Status s, uint64_t* misses) {
  if (s.code() != StatusCode::kNotFound) return s;
  ++*misses;
  return OkStatus();
}

template <typename S>
Task<void> load_loop(S* t, YcsbShared* sh, BenchThread* th, uint64_t first, uint64_t stride) {
  const auto& f = *sh->options;
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
  const auto& f = *sh->options;
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
  const auto& f = *sh->options;
  const uint64_t stride = uint64_t{f.bench.threads} * f.coroutines;
  for (uint32_t k = 0; k < f.coroutines && th.error().ok(); ++k) {
    Status s = c->scheduler().spawn(load_loop(t, sh, &th, th.index() * f.coroutines + k, stride));
    if (!s.ok()) th.fail(s);
  }
  c->scheduler().run_until_idle();
}

template <typename S>
void run_stage(BenchThread& th, ThreadClient* c, S* t, YcsbShared* sh, YcsbThread* pt) {
  const auto& f = *sh->options;
  workload::OpGeneratorOptions go;
  go.spec = *workload::workload_by_name(name_of(kYcsbWorkloadNames, f.workload));
  go.spec.max_scan_length = f.max_scan_length;
  go.record_count = f.records;
  go.distribution = f.distribution;
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
  FARMEM_ASSIGN_OR_RETURN(h->store, kv::Store::open(c, sh->store_options));
  FARMEM_ASSIGN_OR_RETURN(h->pool, runtime::sync_wait(h->store->open_pool(sh->table)));
  return h;
}
// Closes what the handle holds open on the nodes (the kv pool; the others hold nothing).
void close_handle(HashTable&) {}
void close_handle(BTree&) {}
void close_handle(KvHandle& h) { (void)runtime::sync_wait(h.store->close_pool(*h.pool)); }
void note_shape(const HashTable& t, YcsbThread* pt) {
  for (uint32_t i = 0; i < t.shard_count(); ++i) pt->subtables += t.subtable_count(i);
}
void note_shape(const BTree& t, YcsbThread* pt) { pt->height = t.height(); }
void note_shape(const KvHandle&, YcsbThread*) {}

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

template <typename S>
Bench::ThreadBody body_on(YcsbShared* sh, std::vector<YcsbThread>* per) {
  return [sh, per](BenchThread& th, ThreadClient* c) {
    thread_body<S>(th, c, sh, &(*per)[th.index()]);
  };
}

}  // namespace

DsCounters DsCounters::operator-(const DsCounters& b) const {
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
  d.served_ops -= b.served_ops;
  d.served_fallbacks -= b.served_fallbacks;
  return d;  // cas_failures and split_waits stay totals
}

void DsCounters::add(const DsCounters& o) {
  gets += o.gets;
  get_round_trips += o.get_round_trips;
  spec_hits += o.spec_hits;
  spec_misses += o.spec_misses;
  cas_failures += o.cas_failures;
  splits += o.splits;
  page_reads += o.page_reads;
  cache_hits += o.cache_hits;
  cache_misses += o.cache_misses;
  scan_records += o.scan_records;
  kv_messages += o.kv_messages;
  kv_ops += o.kv_ops;
  served_ops += o.served_ops;
  served_fallbacks += o.served_fallbacks;
}

namespace {
template <typename F>
uint64_t sum_over_nodes(const client::Cluster& cluster, ThreadClient* c, F field) {
  uint64_t sum = 0;
  for (const auto& n : cluster.nodes()) {
    auto st = c->run(c->stats(n.node_id));
    if (st.ok()) sum += field(*st);
  }
  return sum;
}
}  // namespace

uint64_t nodes_used(const client::Cluster& cluster, ThreadClient* c) {
  return sum_over_nodes(cluster, c, [](const auto& s) { return s.used_bytes; });
}

uint64_t nodes_syncs(const client::Cluster& cluster, ThreadClient* c) {
  return sum_over_nodes(cluster, c, [](const auto& s) { return s.syncs; });
}

Bench::ThreadBody ycsb_thread_body(YcsbShared* sh, std::vector<YcsbThread>* per) {
  switch (sh->options->structure) {
    case YcsbStructure::kBtree:
      return body_on<BTree>(sh, per);
    case YcsbStructure::kKv:
      return body_on<KvHandle>(sh, per);
    case YcsbStructure::kHash:
      break;
  }
  return body_on<HashTable>(sh, per);
}

}  // namespace farmem::bench
