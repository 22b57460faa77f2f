// farmem bench ado-filter (farmem/bench/ado_filter.h): why near-data compute matters. A pool holds
// --records records (keys "rec<9 digits>", values of --value-bytes made of 8-byte signed fields);
// one query (plugins/filter/filter_query.h, e.g. "sum 0 where 1 ge 500") is answered two ways,
// alternately,
// --repeat times each:
//   client: fetch every record (gets from --coroutines coroutines, coalesced, one-sided where the
//           kv client reads one-sidedly) and filter/aggregate on the client;
//   ado:    one key-less invoke_ado of the pool's filter plugin, which scans the records in place
//           on the memory node and sends back only the answer.
// Both answers must agree (else exit 1). For each way it prints the best time and the bytes
// moved between client and node, and the ratios. Bytes moved are payload bytes on the wire,
// counted from the message formats (rpc.md, kv.md) and the store's counters: RPC header (32 B)
// + request and reply payloads per message, plus 32 B + key + value per one-sided record read
// (a copy out of the node's memory). The node must run the kv service with ADO plugins
// ([kv] ado_plugin_dir containing libfarmem_ado_filter.so, shared memory in its UCX context):
// bench/ado_filter.sh starts one and runs this over shared memory and over TCP.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "farmem/bench/ado_filter.h"
#include "farmem/bench/harness/bench.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/common/clock.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/record.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "filter/filter_query.h"

namespace farmem::bench {
namespace {

using runtime::Task;
namespace af = ado_filter;
namespace kw = kv::wire;

constexpr uint64_t kRpcHeaderBytes = sizeof(wire::RpcHeader);

uint64_t pad8(uint64_t n) { return (n + 7) / 8 * 8; }

std::string key_of(uint64_t i) { return fmt::format("rec{:09}", i); }

std::string value_of(uint64_t seed, uint64_t i, size_t bytes) {
  std::string v(bytes, '\0');
  workload::Rng rng = workload::Rng::for_thread(seed, static_cast<uint32_t>(i));
  for (size_t f = 0; f + 8 <= bytes; f += 8) {
    int64_t x = static_cast<int64_t>(rng.next_u64() % 1000);
    std::memcpy(v.data() + f, &x, 8);
  }
  return v;
}

Task<Status> load_slice(kv::Pool* pool, uint64_t begin, uint64_t end, uint64_t step, uint64_t seed,
                        size_t value_bytes) {
  for (uint64_t i = begin; i < end; i += step) {
    FARMEM_CO_TRY(co_await pool->put(key_of(i), value_of(seed, i, value_bytes)));
  }
  co_return OkStatus();
}

// Gets every step-th record from begin and folds it into *acc (coroutines of one thread).
Task<Status> fetch_slice(kv::Pool* pool, uint64_t begin, uint64_t end, uint64_t step,
                         af::Accumulator* acc) {
  std::string value;
  for (uint64_t i = begin; i < end; i += step) {
    std::string key = key_of(i);
    auto found = co_await pool->get(key, &value);
    FARMEM_CO_TRY(found);
    if (!*found) co_return NotFound(fmt::format("record {} vanished", key));
    if (acc->key_matches(key)) {
      acc->add(key, reinterpret_cast<const uint8_t*>(value.data()), value.size());
    }
  }
  co_return OkStatus();
}

Status run_all(client::ThreadClient* c, std::vector<Task<Status>> tasks) {
  std::vector<Status> results = c->run(runtime::when_all(std::move(tasks)));
  for (auto& s : results) FARMEM_TRY(s);
  return OkStatus();
}

// Payload bytes a set of gets moved, from the store's counters between two snapshots.
uint64_t get_bytes(const kv::StoreStats& a, const kv::StoreStats& b, uint64_t gets,
                   size_t key_bytes, size_t value_bytes) {
  uint64_t hits = b.one_sided_hits - a.one_sided_hits;
  uint64_t messages = b.ops_messages - a.ops_messages;
  uint64_t by_rpc = gets - std::min(gets, hits);
  uint64_t record = kv::record_bytes(key_bytes, value_bytes);
  uint64_t per_message =
      2 * kRpcHeaderBytes + sizeof(kw::KvOpsHeader) + sizeof(kw::KvOpsReplyHeader);
  uint64_t per_op =
      sizeof(kw::KvOpRequest) + pad8(key_bytes) + sizeof(kw::KvOpReply) + pad8(value_bytes);
  return hits * record + messages * per_message + by_rpc * per_op;
}

uint64_t ado_bytes(const std::string& query, const kv::AdoResult& r) {
  uint64_t reply = sizeof(kw::KvAdoReply);
  for (const auto& resp : r.responses) reply += sizeof(kw::KvAdoResponse) + pad8(resp.data.size());
  return 2 * kRpcHeaderBytes + sizeof(kw::KvAdoRequest) + query.size() + reply;
}

struct Way {
  double best_ms = 0;
  uint64_t bytes = 0;
  af::FilterResult result;
};

// The run's store and its scratch pool (deleted at the end).
struct AdoRun {
  client::ThreadClient* c = nullptr;
  std::unique_ptr<kv::Store> store;
  std::string name;
  std::unique_ptr<kv::Pool> pool;
  // Closes and deletes the pool; returns rc.
  int cleanup(int rc) {
    (void)runtime::sync_wait(store->close_pool(*pool));
    pool.reset();
    (void)runtime::sync_wait(store->delete_pool(name));
    return rc;
  }
};

// Connects, opens the store, creates the scratch pool; 0, or the error printed.
int setup(Bench& bench, const AdoFilterOptions& f, AdoRun* r) {
  if (int rc = bench.connect(0); rc != 0) return rc;
  auto tc = bench.cluster()->thread_client();
  if (!tc.ok()) return bench.fail(1, tc.status().to_string());
  r->c = *tc;
  kv::StoreOptions so;
  so.location_cache_log2 = 20;  // every record's location fits: a fair client
  auto store = kv::Store::open(r->c, so);
  if (!store.ok()) return bench.fail(1, store.status().to_string());
  r->store = std::move(*store);
  r->name = fmt::format("bench-ado-filter-{}", getpid());
  const uint64_t record = kv::record_alloc_bytes(12, f.value_bytes);
  const uint64_t capacity = std::max<uint64_t>(f.records * record * 3 + (64ull << 20), 1ull << 26);
  auto created =
      runtime::sync_wait(r->store->create_pool(r->name, capacity, f.records, kw::kPoolCreateOnly));
  if (!created.ok()) return bench.fail(1, "create_pool: " + created.status().to_string());
  r->pool = std::move(*created);
  return 0;
}

// Configures the filter plugin and loads the records; 0, or the error printed.
int load(const Bench& bench, const AdoFilterOptions& f, AdoRun* r) {
  Status s = runtime::sync_wait(r->pool->configure("AdoPlugins::libfarmem_ado_filter.so"));
  if (!s.ok()) return bench.fail(1, "configure: " + s.to_string());
  uint64_t t0 = now_ns();
  std::vector<Task<Status>> loads;
  for (uint32_t k = 0; k < f.coroutines; ++k) {
    loads.push_back(
        load_slice(r->pool.get(), k, f.records, f.coroutines, f.bench.seed, f.value_bytes));
  }
  s = run_all(r->c, std::move(loads));
  if (!s.ok()) return bench.fail(1, "load: " + s.to_string());
  double load_s = (now_ns() - t0) / 1e9;
  fmt::print("ado-filter: loaded {} records of {} B in {:.2f} s; query '{}'; transports {}\n",
             f.records, f.value_bytes, load_s, f.query, r->c->transports());
  return 0;
}

// Client-side: fetch everything, filter here.
Status client_way(const AdoFilterOptions& f, const af::Query& q, AdoRun* r, uint32_t round,
                  Way* way) {
  af::Accumulator acc(q);
  kv::StoreStats before = r->store->stats();
  uint64_t a = now_ns();
  std::vector<Task<Status>> fetches;
  for (uint32_t k = 0; k < f.coroutines; ++k) {
    fetches.push_back(fetch_slice(r->pool.get(), k, f.records, f.coroutines, &acc));
  }
  Status s = run_all(r->c, std::move(fetches));
  double ms = (now_ns() - a) / 1e6;
  if (!s.ok()) return Status(s.code(), "client-side fetch: " + s.to_string());
  uint64_t bytes = get_bytes(before, r->store->stats(), f.records, 12, f.value_bytes);
  if (round == 0 || ms < way->best_ms) way->best_ms = ms;
  way->bytes = bytes;
  way->result = acc.result();
  return OkStatus();
}

// ADO: one invocation; the error's message is the line printed.
Status ado_way(const AdoFilterOptions& f, AdoRun* r, uint32_t round, Way* way) {
  uint64_t a = now_ns();
  auto res = runtime::sync_wait(r->pool->invoke_ado("", f.query, kw::kAdoReadOnly));
  double ms = (now_ns() - a) / 1e6;
  if (!res.ok()) return Internal("invoke_ado: " + res.status().to_string());
  if (res->plugin_status != 0) {
    return Internal(fmt::format("filter plugin status {}", res->plugin_status));
  }
  const kv::AdoResponse* result = nullptr;
  for (const auto& resp : res->responses) {
    if (resp.layer == af::kLayerResult && resp.data.size() == sizeof(af::FilterResult)) {
      result = &resp;
    }
  }
  if (result == nullptr) return Internal("the filter plugin sent no result");
  std::memcpy(&way->result, result->data.data(), sizeof(af::FilterResult));
  if (round == 0 || ms < way->best_ms) way->best_ms = ms;
  way->bytes = ado_bytes(f.query, *res);
  return OkStatus();
}

// --repeat rounds of both ways; the answers must agree. 0, or the error printed and 1.
int rounds(const Bench& bench, const AdoFilterOptions& f, const af::Query& q, AdoRun* r,
           Way* client, Way* ado) {
  for (uint32_t round = 0; round < f.repeat; ++round) {
    Status s = client_way(f, q, r, round, client);
    if (s.ok()) s = ado_way(f, r, round, ado);
    if (!s.ok()) return bench.fail(1, s.message());
    const af::FilterResult& x = client->result;
    const af::FilterResult& y = ado->result;
    if (x.matched != y.matched || x.sum != y.sum || x.scanned != y.scanned ||
        (x.matched > 0 && (x.min != y.min || x.max != y.max))) {
      return bench.fail(
          1, fmt::format("answers differ: client matched={} sum={}, ado matched={} sum={}",
                         x.matched, x.sum, y.matched, y.sum));
    }
  }
  return 0;
}

int report(const Bench& bench, const AdoFilterOptions& f, const AdoRun& r, const Way& client,
           const Way& ado) {
  const af::FilterResult& res = ado.result;
  double time_ratio = client.best_ms / std::max(ado.best_ms, 1e-9);
  double byte_ratio = static_cast<double>(client.bytes) / std::max<uint64_t>(ado.bytes, 1);
  fmt::print("  answer: scanned={} matched={} sum={} min={} max={}\n", res.scanned, res.matched,
             res.sum, res.matched ? res.min : 0, res.matched ? res.max : 0);
  fmt::print("  client-side (fetch all, filter here): {:9.2f} ms  {:12} bytes moved\n",
             client.best_ms, client.bytes);
  fmt::print("  ado (one invoke, filter on the node): {:9.2f} ms  {:12} bytes moved\n", ado.best_ms,
             ado.bytes);
  fmt::print("  ratio client/ado: time {:.1f}x, bytes {:.0f}x (best of {}){}\n", time_ratio,
             byte_ratio, f.repeat, bench.result_suffix());
  nlohmann::ordered_json rec = bench.report_record();
  rec["records"] = f.records;
  rec["value_bytes"] = f.value_bytes;
  rec["query"] = f.query;
  rec["transports"] = r.c->transports();
  rec["coroutines"] = f.coroutines;
  rec["repeat"] = f.repeat;
  rec["client_ms"] = client.best_ms;
  rec["client_bytes"] = client.bytes;
  rec["ado_ms"] = ado.best_ms;
  rec["ado_bytes"] = ado.bytes;
  rec["time_ratio"] = time_ratio;
  rec["bytes_ratio"] = byte_ratio;
  rec["matched"] = res.matched;
  rec["sum"] = res.sum;
  return bench.finish_report(rec);
}

}  // namespace

int run_ado_filter(const AdoFilterOptions& f) {
  Bench bench("ado-filter", f.bench, {"client", "ado"});
  if (f.bench.cluster.servers.empty() && f.bench.cluster.config.empty()) {
    return bench.fail(2,
                      "needs --servers or --config: a farmem-server whose [kv] ado_plugin_dir "
                      "holds libfarmem_ado_filter.so (bench/ado_filter.sh starts one)");
  }
  af::Query q;
  std::string error;
  if (!af::parse_query(f.query, &q, &error)) return bench.fail(2, error);
  if (f.value_bytes < 8 || f.value_bytes % 8 != 0) {
    return bench.fail(2, "--value-bytes must be a positive multiple of 8");
  }
  AdoRun r;
  if (int rc = setup(bench, f, &r); rc != 0) return rc;
  if (int rc = load(bench, f, &r); rc != 0) return r.cleanup(rc);
  Way client, ado;
  if (int rc = rounds(bench, f, q, &r, &client, &ado); rc != 0) return r.cleanup(rc);
  return r.cleanup(report(bench, f, r, client, ado));
}

}  // namespace farmem::bench
