// farmem bench ycsb: YCSB workloads A, B, C, D, F against a far-memory structure.
//
// Load phase: --records keys (fixed-length keys from workload/key_format.h, values from
// value_format.h) are put by every thread's coroutines. Run phase: each of --threads threads
// opens its own handle and runs --coroutines coroutines, each issuing the workload's operation
// mix with keys from the chosen distribution until --duration ends. Latency is taken per
// operation with the TSC. Prints throughput and p50/p99/p999 per operation type, and the
// average round trips per get counted by the table itself; --out appends JSON.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>
#include <unistd.h>
#include <vector>

#include "commands.h"
#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/common/histogram.h"
#include "farmem/ds/hash/hash_table.h"
#include "farmem/workload/key_format.h"
#include "farmem/workload/op_generator.h"
#include "farmem/workload/value_format.h"
#include "report.h"

namespace farmem::apps {
namespace {

using client::ThreadClient;
using ds::hash::HashTable;
using ds::hash::HashTableOptions;
using runtime::Task;
using workload::OpType;

constexpr int kOps = workload::kOpTypeCount;
constexpr std::array<const char*, kOps> kOpNames = {"read", "update", "insert", "scan", "rmw"};

struct Shared {
  const BenchYcsbFlags* flags;
  std::string table;
  HashTableOptions table_options;
  std::atomic<uint64_t> key_counter{0};
  std::atomic<uint64_t> loaded{0};
  std::atomic<uint32_t> ready{0};
  std::atomic<int> phase{0};  // 0 setup, 1 load, 2 loaded, 3 run, 4 stop
};

struct alignas(64) PerThread {
  std::atomic<uint64_t> ops{0};
  std::array<Histogram, kOps> hist;
  std::array<uint64_t, kOps> misses{};  // reads of absent keys, updates of absent keys
  Status error;
  ds::hash::HashStats load_stats;
  ds::hash::HashStats stats;
  uint64_t subtables = 0;  // in the handle's directories after the load
};

// An update of a key that is not there (yet) is a miss of the workload, not an error.
Status absent_is_miss(Status s, uint64_t* misses) {
  if (s.code() != StatusCode::kNotFound) return s;
  ++*misses;
  return OkStatus();
}

void record_error(PerThread* pt, Shared* sh, const Status& s) {
  if (pt->error.ok()) pt->error = s;
  sh->phase.store(4);
}

Task<void> load_loop(HashTable* t, Shared* sh, PerThread* pt, uint64_t first, uint64_t stride) {
  const auto& f = *sh->flags;
  std::string key(f.key_bytes, '\0'), value(f.value_bytes, '\0');
  for (uint64_t i = first; i < f.records && sh->phase.load() != 4; i += stride) {
    workload::format_key(i, f.key_bytes, key.data());
    workload::fill_value(i, 0, f.value_bytes, value.data());
    Status s = co_await t->put(key, value);
    if (!s.ok()) {
      record_error(pt, sh, s);
      co_return;
    }
    sh->loaded.fetch_add(1, std::memory_order_relaxed);
  }
}

Task<void> run_loop(HashTable* t, Shared* sh, PerThread* pt, workload::OpGenerator* gen,
                    uint64_t seed) {
  const auto& f = *sh->flags;
  workload::Rng rng(seed);
  std::string key(f.key_bytes, '\0'), value(f.value_bytes, '\0'), got;
  uint64_t version = seed << 20;
  while (sh->phase.load(std::memory_order_relaxed) == 3) {
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
        s = absent_is_miss(co_await t->update(key, value), &pt->misses[type]);
        break;
      case OpType::kInsert:
        workload::fill_value(op.key, 0, f.value_bytes, value.data());
        s = co_await t->insert(key, value);
        if (s.code() == StatusCode::kAlreadyExists) s = OkStatus();
        break;
      case OpType::kReadModifyWrite: {
        auto r = co_await t->get(key, &got);
        s = r.ok() ? OkStatus() : r.status();
        if (s.ok()) {
          workload::fill_value(op.key, ++version, f.value_bytes, value.data());
          s = absent_is_miss(co_await t->update(key, value), &pt->misses[type]);
        }
        break;
      }
      case OpType::kScan:
        s = InvalidArgument("scans need an ordered structure; --structure hash has none");
        break;
    }
    if (!s.ok()) {
      record_error(pt, sh, s);
      co_return;
    }
    pt->hist[type].record(cycles() - t0);
    pt->ops.store(pt->ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

void thread_main(client::Cluster* cluster, Shared* sh, PerThread* pt, uint32_t index) {
  const auto& f = *sh->flags;
  auto tcr = cluster->thread_client();
  if (!tcr.ok()) {
    pt->error = tcr.status();
    sh->ready.fetch_add(1);
    return;
  }
  ThreadClient* c = *tcr;
  auto handle = c->run(HashTable::open(c, sh->table, sh->table_options));
  if (!handle.ok()) {
    pt->error = handle.status();
    sh->ready.fetch_add(1);
    return;
  }
  HashTable* t = handle->get();
  sh->ready.fetch_add(1);
  while (sh->phase.load() < 1) std::this_thread::yield();
  // Load.
  const uint64_t stride = uint64_t{f.threads} * f.coroutines;
  for (uint32_t k = 0; k < f.coroutines && pt->error.ok(); ++k) {
    Status s = c->scheduler().spawn(load_loop(t, sh, pt, index * f.coroutines + k, stride));
    if (!s.ok()) record_error(pt, sh, s);
  }
  c->scheduler().run_until_idle();
  ds::hash::HashStats after_load = t->stats();
  pt->load_stats = after_load;
  for (uint32_t i = 0; i < t->shard_count(); ++i) pt->subtables += t->subtable_count(i);
  sh->ready.fetch_add(1);
  while (sh->phase.load() < 3) std::this_thread::yield();
  // Run.
  workload::OpGeneratorOptions go;
  go.spec = *workload::workload_by_name(f.workload);
  go.record_count = f.records;
  go.distribution = *workload::distribution_by_name(f.distribution);
  go.zipf_theta = f.zipf;
  go.key_counter = &sh->key_counter;
  auto gen = workload::OpGenerator::create(go);
  if (!gen.ok()) {
    record_error(pt, sh, gen.status());
  } else {
    for (uint32_t k = 0; k < f.coroutines; ++k) {
      uint64_t seed = (uint64_t{index} << 32) + k + 1 + static_cast<uint64_t>(getpid()) * 7919;
      Status s = c->scheduler().spawn(run_loop(t, sh, pt, &*gen, seed));
      if (!s.ok()) record_error(pt, sh, s);
    }
    c->scheduler().run_until_idle();
  }
  // Run-phase table counters only.
  ds::hash::HashStats st = t->stats();
  st.gets -= after_load.gets;
  st.get_round_trips -= after_load.get_round_trips;
  st.spec_hits -= after_load.spec_hits;
  st.spec_misses -= after_load.spec_misses;
  pt->stats = st;
  handle->reset();
  cluster->release_thread_client();
}

}  // namespace

int run_bench_ycsb(const BenchYcsbFlags& f) {
  auto spec = workload::workload_by_name(f.workload);
  if (!spec.ok()) {
    fmt::print(stderr, "farmem bench ycsb: {}\n", spec.status().to_string());
    return 2;
  }
  if (spec->proportion(OpType::kScan) > 0) {
    fmt::print(stderr, "farmem bench ycsb: workload {} needs scans, which --structure hash does "
                       "not support (it arrives with the B+tree)\n", f.workload);
    return 2;
  }
  if (auto s = workload::validate_key_bytes(f.key_bytes); !s.ok()) {
    fmt::print(stderr, "farmem bench ycsb: {}\n", s.to_string());
    return 2;
  }
  if (!workload::distribution_by_name(f.distribution).ok()) {
    fmt::print(stderr, "farmem bench ycsb: --distribution must be zipfian or uniform\n");
    return 2;
  }
  ClusterFlags cf = f.cluster;
  cf.local_capacity_bytes = (1ull << 30) + f.records * (256 + 2 * f.value_bytes + 2 * f.key_bytes);
  std::unique_ptr<LocalNode> local;
  auto config = resolve_cluster(cf, &local);
  if (!config.ok()) {
    fmt::print(stderr, "farmem bench ycsb: {}\n", config.status().to_string());
    return 2;
  }
  if (!f.direct.empty()) config->options.direct_access = f.direct == "on";
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) {
    fmt::print(stderr, "farmem bench ycsb: {}\n", cluster.status().to_string());
    return 1;
  }
  Shared sh;
  sh.flags = &f;
  sh.key_counter.store(f.records);
  // A scratch table lives as long as this process's sessions and is destroyed at the end;
  // --keep-table names one that stays.
  sh.table = f.keep_table.empty() ? fmt::format("ycsb-{}-{}", getpid(), std::time(nullptr))
                                  : f.keep_table;
  sh.table_options.temporary = f.keep_table.empty();
  sh.table_options.speculative_lookup = !f.no_speculative;
  if (f.initial_depth >= 0) sh.table_options.initial_depth = static_cast<uint32_t>(f.initial_depth);
  sh.table_options.spec_cache_log2 = f.spec_cache_log2;
  ThreadClient* main_client = *(*cluster)->thread_client();
  auto usage = [&]() {
    uint64_t used = 0;
    for (const auto& n : (*cluster)->nodes()) {
      auto st = main_client->run(main_client->stats(n.node_id));
      if (st.ok()) used += st->used_bytes;
    }
    return used;
  };
  const uint64_t used_before = usage();
  {
    ThreadClient* c = main_client;
    auto t = c->run(HashTable::create(c, sh.table, sh.table_options));
    if (!t.ok()) {
      fmt::print(stderr, "farmem bench ycsb: creating the table: {}\n", t.status().to_string());
      return 1;
    }
  }
  std::vector<PerThread> per(f.threads);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < f.threads; ++i) {
    threads.emplace_back(thread_main, cluster->get(), &sh, &per[i], i);
  }
  while (sh.ready.load() < f.threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  uint64_t load_start = now_ns();
  sh.phase.store(1);
  uint64_t next_progress = load_start + 2'000'000'000ull;
  while (sh.ready.load() < 2 * f.threads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (now_ns() >= next_progress) {
      fmt::print(stderr, "  [load] {} / {} records\n", sh.loaded.load(), f.records);
      next_progress += 2'000'000'000ull;
    }
  }
  double load_s = (now_ns() - load_start) / 1e9;
  uint64_t used_after_load = usage();
  for (auto& p : per) {
    if (!p.error.ok()) {
      sh.phase.store(4);
      for (auto& t : threads) t.join();
      fmt::print(stderr, "farmem bench ycsb: load failed: {}\n", p.error.to_string());
      return 1;
    }
  }
  uint64_t load_splits = 0, load_split_waits = 0, subtables = 0;
  for (const auto& p : per) {
    load_splits += p.load_stats.splits;
    load_split_waits += p.load_stats.split_waits;
    subtables = std::max(subtables, p.subtables);
  }
  fmt::print(stderr,
             "  [load] {} records in {:.2f} s ({:.0f} puts/s), nodes use {} bytes; the table "
             "grew to {} subtables ({} splits, {} operations waited for one)\n",
             f.records, load_s, f.records / load_s, used_after_load, subtables, load_splits,
             load_split_waits);

  uint64_t start = now_ns();
  sh.phase.store(3);
  const uint64_t end = start + static_cast<uint64_t>(f.duration_s * 1e9);
  next_progress = start + 1'000'000'000ull;
  uint64_t last_ops = 0, last_t = start;
  while (sh.phase.load() == 3 && now_ns() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    uint64_t now = now_ns();
    if (f.duration_s > 3 && now >= next_progress) {
      uint64_t total = 0;
      for (auto& p : per) total += p.ops.load(std::memory_order_relaxed);
      // Every 10 s also the memory nodes' usage, to show it stays flat.
      std::string mem;
      if (static_cast<uint64_t>((now - start) / 1e9) % 10 == 0) {
        mem = fmt::format(", nodes use {:.1f} MiB", usage() / 1048576.0);
      }
      fmt::print(stderr, "  [{:5.1f}s] {:.0f} ops/s{}\n", (now - start) / 1e9,
                 (total - last_ops) * 1e9 / static_cast<double>(now - last_t), mem);
      last_ops = total;
      last_t = now;
      next_progress += 1'000'000'000ull;
    }
  }
  uint64_t stop_t = now_ns();
  sh.phase.store(4);
  for (auto& t : threads) t.join();
  double secs = (stop_t - start) / 1e9;
  uint64_t used_end = usage();
  uint64_t used_after = used_end;
  if (f.keep_table.empty()) {
    Status ds = main_client->run(HashTable::destroy(main_client, sh.table));
    if (!ds.ok()) fmt::print(stderr, "farmem bench ycsb: destroying the table: {}\n", ds.to_string());
    used_after = usage();
  }

  std::array<Histogram, kOps> hist;
  Histogram all;
  std::array<uint64_t, kOps> misses{};
  ds::hash::HashStats st;
  for (auto& p : per) {
    if (!p.error.ok()) {
      fmt::print(stderr, "farmem bench ycsb: {}\n", p.error.to_string());
      return 1;
    }
    for (int i = 0; i < kOps; ++i) {
      hist[i].merge(p.hist[i]);
      all.merge(p.hist[i]);
      misses[i] += p.misses[i];
    }
    st.gets += p.stats.gets;
    st.get_round_trips += p.stats.get_round_trips;
    st.spec_hits += p.stats.spec_hits;
    st.spec_misses += p.stats.spec_misses;
    st.cas_failures += p.stats.cas_failures;
    st.splits += p.stats.splits - p.load_stats.splits;
  }
  const double us = 1.0 / (cycles_per_ns() * 1e3);
  const double ops_per_s = all.count() / secs;
  const double rtt_per_get = st.gets ? static_cast<double>(st.get_round_trips) / st.gets : 0.0;
  const double spec_rate =
      st.spec_hits + st.spec_misses ? 100.0 * st.spec_hits / (st.gets ? st.gets : 1) : 0.0;
  std::string transport = (*cluster)->transports();
  fmt::print(
      "ycsb: structure={} workload={} records={} key={}B value={}B {} threads={} coroutines={} "
      "ops/s={:.0f} p50={:.2f}us p99={:.2f}us p999={:.2f}us rtt/get={:.3f} spec_hits={:.1f}% "
      "cas_retries={} spec_cache=2^{} transport={}{}\n",
      f.structure, f.workload, f.records, f.key_bytes, f.value_bytes,
      f.distribution == "zipfian" ? fmt::format("zipfian({})", f.zipf) : f.distribution, f.threads,
      f.coroutines, ops_per_s, all.quantile(0.5) * us, all.quantile(0.99) * us,
      all.quantile(0.999) * us, rtt_per_get, spec_rate, st.cas_failures, f.spec_cache_log2,
      transport,
      local ? " cluster=local" : "");
  for (int i = 0; i < kOps; ++i) {
    if (hist[i].count() == 0) continue;
    fmt::print("  {:<7} count={} ops/s={:.0f} p50={:.2f}us p99={:.2f}us p999={:.2f}us{}\n",
               kOpNames[i], hist[i].count(), hist[i].count() / secs, hist[i].quantile(0.5) * us,
               hist[i].quantile(0.99) * us, hist[i].quantile(0.999) * us,
               misses[i] ? fmt::format(" absent={}", misses[i]) : "");
  }
  fmt::print("  memory nodes: {} bytes used before, {} after load, {} at the end, {} after {}\n",
             used_before, used_after_load, used_end, used_after,
             f.keep_table.empty() ? "the table was destroyed" : "(table kept: " + f.keep_table + ")");
  if (!f.out.empty()) {
    nlohmann::ordered_json r;
    r["bench"] = "ycsb";
    r["structure"] = f.structure;
    r["workload"] = f.workload;
    r["records"] = f.records;
    r["key_bytes"] = f.key_bytes;
    r["value_bytes"] = f.value_bytes;
    r["distribution"] = f.distribution;
    r["zipf"] = f.zipf;
    r["threads"] = f.threads;
    r["coroutines"] = f.coroutines;
    r["duration_s"] = secs;
    r["ops_per_s"] = ops_per_s;
    r["p50_us"] = all.quantile(0.5) * us;
    r["p99_us"] = all.quantile(0.99) * us;
    r["p999_us"] = all.quantile(0.999) * us;
    r["get_round_trips_avg"] = rtt_per_get;
    r["spec_hit_percent"] = spec_rate;
    r["cas_retries"] = st.cas_failures;
    r["spec_cache_log2"] = f.spec_cache_log2;
    r["load_s"] = load_s;
    r["used_bytes_after_load"] = used_after_load;
    r["used_bytes_end"] = used_end;
    r["used_bytes_before"] = used_before;
    r["used_bytes_after_destroy"] = used_after;
    r["subtables_after_load"] = subtables;
    r["load_splits"] = load_splits;
    r["run_splits"] = st.splits;
    r["transport"] = transport;
    r["cluster"] = local ? "local" : "remote";
    nlohmann::ordered_json ops = nlohmann::ordered_json::object();
    for (int i = 0; i < kOps; ++i) {
      if (hist[i].count() == 0) continue;
      ops[kOpNames[i]] = {{"count", hist[i].count()},
                          {"ops_per_s", hist[i].count() / secs},
                          {"p50_us", hist[i].quantile(0.5) * us},
                          {"p99_us", hist[i].quantile(0.99) * us},
                          {"p999_us", hist[i].quantile(0.999) * us},
                          {"absent", misses[i]}};
    }
    r["ops"] = ops;
    r["unix_time"] = static_cast<int64_t>(std::time(nullptr));
    Status s = append_report(f.out, r);
    if (!s.ok()) {
      fmt::print(stderr, "farmem bench ycsb: {}\n", s.to_string());
      return 1;
    }
  }
  return 0;
}

}  // namespace farmem::apps
