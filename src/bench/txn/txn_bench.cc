// `farmem bench txn` (farmem/bench/txn.h): SmallBank, TATP and TPC-C on farmem::txn (FORD's
// benchmarks and TPC-C, standard mixes). The workloads are units of their own (txn_workload.h:
// smallbank.cc, tatp.cc, tpcc*.cc); this file is the driver they share: tables, parallel loading
// with progress, coordinator threads and coroutines, retries, statistics, the invariant check,
// JSON.
//
// Each transaction is retried with backoff until it commits, at most --max-attempts times;
// its latency runs from its first attempt to its commit. Transactions the workload itself
// rolls back (insufficient funds, a missing row, TPC-C's 1% of NewOrders on an unused item)
// count as rolled back, not as aborts.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "farmem/bench/harness/bench.h"
#include "farmem/bench/harness/latency.h"
#include "farmem/bench/txn.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/retry.h"
#include "farmem/runtime/when_all.h"
#include "txn_workload.h"

namespace farmem::bench {

namespace {

using runtime::Task;
using txn::Table;
using txn::Transaction;
using txn::TxnClient;

constexpr uint32_t kLoadBatch = 24;  // inserts per loading transaction (fits a log slot)

struct TypeStats {
  uint64_t attempts = 0, commits = 0, aborts = 0, rolled_back = 0, given_up = 0;
  void add(const TypeStats& o) {
    attempts += o.attempts;
    commits += o.commits;
    aborts += o.aborts;
    rolled_back += o.rolled_back;
    given_up += o.given_up;
  }
};

// One thread's counters; `types` and round trips are reset when measurement begins, the
// invariant delta counts everything the thread committed.
struct ThreadState {
  std::vector<TypeStats> types;
  uint64_t round_trips_at_measure = 0;
  uint64_t round_trips = 0;
  uint64_t unvalidated_at_measure = 0;
  uint64_t unvalidated = 0;  // read-only commits of one stable read
  int64_t delta = 0;         // the workload's invariant delta (smallbank: money, tatp: rows)
};

// One transaction, retried until it commits (at most max_attempts times).
Task<Status> execute(TxnClient* tc, const TxnWorkload* w, TxnParams p, uint32_t max_attempts,
                     ThreadState* st) {
  TypeStats& ts = st->types[p.type];
  ds::RetryLoop loop(tc->client(), "transaction", max_attempts);
  for (;;) {
    Transaction x = w->read_only(p.type) ? tc->begin_read_only() : tc->begin();
    int64_t delta = 0;
    Status s = co_await w->body(x, p, &delta);
    if (s.ok() && !w->validated(p.type)) {
      Status a = co_await x.abort();  // nothing to validate: done
      (void)a;
    } else if (s.ok()) {
      s = co_await x.commit();
    }
    if (!s.ok() && !x.finished()) {
      Status a = co_await x.abort();
      (void)a;
    }
    ++ts.attempts;
    if (s.ok()) {
      ++ts.commits;
      st->delta += delta;
      loop.succeeded();
      co_return OkStatus();
    }
    if (s.code() != StatusCode::kAborted) co_return s;
    if (x.reason() == txn::AbortReason::kUserAbort) {
      ++ts.rolled_back;
      co_return OkStatus();
    }
    ++ts.aborts;
    if (loop.exhausted()) {
      ++ts.given_up;
      co_return OkStatus();
    }
    co_await loop.retry();
  }
}

Task<void> txn_client(BenchThread* t, TxnClient* tc, const TxnWorkload* w, uint32_t stream,
                      uint32_t max_attempts, ThreadState* st) {
  workload::Rng rng = workload::Rng::for_thread(t->seed(), t->index() * 4096 + stream);
  TxnStream ids{t->index() * 4096ull + stream, 0};
  while (t->running()) {
    const TxnParams p = w->params(rng, &ids);
    const uint64_t t0 = cycles();
    Status s = co_await execute(tc, w, p, max_attempts, st);
    if (!s.ok()) {
      t->fail(s);
      co_return;
    }
    t->record(p.type, cycles() - t0);
    t->completed();
  }
  st->round_trips = tc->counters().round_trips;
}

// ------------------------------------------------------------------------------ loading

// Inserts rows in transactions of kLoadBatch, retrying conflicts (loaders share buckets);
// *loaded counts the rows committed (for progress lines).
Task<Status> insert_rows(TxnClient* tc, std::vector<LoadRow> rows, std::atomic<uint64_t>* loaded) {
  for (size_t i = 0; i < rows.size(); i += kLoadBatch) {
    const size_t end = std::min(rows.size(), i + kLoadBatch);
    ds::RetryLoop loop(tc->client(), "loading", 10000);
    for (;;) {
      Transaction x = tc->begin();
      Status s;
      for (size_t j = i; j < end && s.ok(); ++j) {
        s = co_await x.insert(*rows[j].table, rows[j].key, rows[j].value);
      }
      if (s.ok()) s = co_await x.commit();
      if (!s.ok() && !x.finished()) {
        Status a = co_await x.abort();
        (void)a;
      }
      if (s.ok()) break;
      if (s.code() != StatusCode::kAborted || loop.exhausted()) co_return s;
      co_await loop.retry();
    }
    loaded->fetch_add(end - i, std::memory_order_relaxed);
  }
  co_return OkStatus();
}

Task<Status> load_range(TxnClient* tc, const TxnWorkload* w, uint64_t from, uint64_t to,
                        uint32_t coroutines, std::atomic<uint64_t>* loaded) {
  std::vector<Task<Status>> tasks;
  const uint64_t n = to - from;
  for (uint32_t i = 0; i < coroutines; ++i) {
    const uint64_t a = from + n * i / coroutines, b = from + n * (i + 1) / coroutines;
    if (a == b) continue;
    std::vector<LoadRow> rows;
    Status s = w->load_rows(a, b, &rows);
    FARMEM_CO_TRY(s);
    tasks.push_back(insert_rows(tc, std::move(rows), loaded));
  }
  std::vector<Status> r = co_await runtime::when_all(std::move(tasks));
  for (const Status& s : r) {
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

Task<Status> create_tables(client::ThreadClient* c, std::vector<TableSpec> specs) {
  for (const TableSpec& s : specs) {
    txn::TableOptions o;
    o.record_bytes = s.record_bytes;
    o.capacity = s.capacity;
    o.temporary = true;  // bound to the main thread's sessions: gone when the run ends
    auto t = co_await Table::create(c, s.name, o);
    if (!t.ok()) co_return Status(t.status().code(), s.name + ": " + t.status().to_string());
    *s.table = std::move(*t);
  }
  co_return OkStatus();
}

std::unique_ptr<TxnWorkload> make_workload(const TxnBenchOptions& f) {
  switch (f.workload) {
    case TxnWorkloadKind::kSmallBank:
      return make_smallbank(f);
    case TxnWorkloadKind::kTatp:
      return make_tatp(f);
    case TxnWorkloadKind::kTpcc:
      break;
  }
  return make_tpcc(f);
}

double rate(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

// ------------------------------------------------------------------------------ the run

// What the main thread and the coordinator threads of one run share.
struct TxnRun {
  const TxnBenchOptions* options = nullptr;
  std::string name;  // the workload's name
  TxnWorkload* workload = nullptr;
  txn::TxnClientOptions client_options;
  std::vector<ThreadState> states;
  std::atomic<uint64_t> loaded{0};
  double load_s = 0;
  std::string commits;  // what the nodes make of a commit: durable, volatile or partly-durable
};

// A coordinator thread: load its share of the rows, then run its coroutines until the stop.
void coordinator_thread(BenchThread& t, client::ThreadClient* c, TxnRun* run) {
  const TxnBenchOptions& f = *run->options;
  const uint32_t threads = f.bench.threads;
  auto tc = c->run(TxnClient::create(c, run->client_options));
  if (!tc.ok()) return t.fail(tc.status());
  ThreadState* st = &run->states[t.index()];
  const uint64_t n = run->workload->load_units();
  Status s = c->run(load_range(tc->get(), run->workload, n * t.index() / threads,
                               n * (t.index() + 1) / threads, f.coroutines, &run->loaded));
  if (!s.ok()) return t.fail(s);
  TxnClient* raw = tc->get();
  t.on_measure([st, raw] {
    for (auto& ts : st->types) ts = TypeStats{};
    st->round_trips_at_measure = raw->counters().round_trips;
    st->unvalidated_at_measure = raw->counters().unvalidated_commits;
  });
  if (!t.arrive_and_wait()) return;
  for (uint32_t i = 0; i < f.coroutines; ++i) {
    Status sp = c->scheduler().spawn(txn_client(&t, raw, run->workload, i, f.max_attempts, st));
    if (!sp.ok()) t.fail(sp);
  }
  c->scheduler().run_until_idle();
  st->round_trips = raw->counters().round_trips - st->round_trips_at_measure;
  st->unvalidated = raw->counters().unvalidated_commits - st->unvalidated_at_measure;
  (void)c->run((*tc)->close());
}

// Loads the tables (progress lines every second), then the timed run.
int load_and_run(Bench& bench, TxnRun* run) {
  run->states.resize(run->options->bench.threads);
  for (auto& st : run->states) st.types.resize(run->workload->type_names().size());
  const uint64_t load_start = now_ns();
  bench.start_threads(
      [run](BenchThread& t, client::ThreadClient* c) { coordinator_thread(t, c, run); });
  const uint64_t rows = run->workload->load_row_count();
  bench.wait_arrived(1'000'000'000, [&] {
    fmt::print(stderr, "txn {}: loading: {} of about {} rows, {:.0f} s\n", run->name,
               run->loaded.load(std::memory_order_relaxed), rows, (now_ns() - load_start) / 1e9);
  });
  if (!bench.first_error().ok())
    return bench.fail(1, "loading: " + bench.first_error().to_string());
  run->load_s = (now_ns() - load_start) / 1e9;
  fmt::print(stderr, "txn {}: loaded {} rows in {:.1f} s\n", run->name,
             run->loaded.load(std::memory_order_relaxed), run->load_s);
  ProgressFormat progress;
  progress.unit = "txn/s";
  bench.run_timed(progress);
  if (!bench.first_error().ok()) return bench.fail(1, bench.first_error().to_string());
  return 0;
}

// ------------------------------------------------------------------------------ results

struct TxnTotals {
  TypeStats all;
  std::vector<TypeStats> per;  // per transaction type
  uint64_t round_trips = 0;
  uint64_t unvalidated = 0;
  int64_t delta = 0;  // the committed invariant delta
};

TxnTotals totals(const TxnRun& run) {
  TxnTotals t;
  t.per.resize(run.workload->type_names().size());
  for (const auto& st : run.states) {
    t.round_trips += st.round_trips;
    t.unvalidated += st.unvalidated;
    t.delta += st.delta;
    for (size_t i = 0; i < t.per.size(); ++i) t.per[i].add(st.types[i]);
  }
  for (const auto& p : t.per) t.all.add(p);
  return t;
}

// Prints a line per transaction type; returns the report's "per_type".
nlohmann::ordered_json print_types(const Bench& bench, const TxnTotals& t) {
  const double secs = bench.seconds();
  nlohmann::ordered_json per_type = nlohmann::ordered_json::object();
  for (size_t i = 0; i < t.per.size(); ++i) {
    const LatencyUs l = latency_us(bench.histogram(static_cast<int>(i)));
    const auto& p = t.per[i];
    fmt::print(
        "  {:<22} commits/s={:>10.0f} attempted/s={:>10.0f} abort_rate={:.4f} "
        "rolled_back={} given_up={} p50={:.1f}us p99={:.1f}us p999={:.1f}us\n",
        bench.op_names()[i], p.commits / secs, p.attempts / secs, rate(p.aborts, p.attempts),
        p.rolled_back, p.given_up, l.p50, l.p99, l.p999);
    per_type[bench.op_names()[i]] = {{"commits_per_s", p.commits / secs},
                                     {"attempted_per_s", p.attempts / secs},
                                     {"abort_rate", rate(p.aborts, p.attempts)},
                                     {"rolled_back", p.rolled_back},
                                     {"given_up", p.given_up},
                                     {"p50_us", l.p50},
                                     {"p99_us", l.p99},
                                     {"p999_us", l.p999}};
  }
  return per_type;
}

// The workload's invariant, checked on the main thread once every coordinator has stopped.
Status check_invariant(client::ThreadClient* mc, const TxnRun& run, int64_t delta,
                       TxnCheck* check) {
  auto tc = mc->run(TxnClient::create(mc, run.client_options));
  FARMEM_TRY(tc);
  Status s = mc->run(run.workload->check(tc->get(), delta, check));
  (void)mc->run((*tc)->close());
  return s;
}

// The result line, the invariant's line and the record's fields.
void print_result(const Bench& bench, const TxnRun& run, const TxnTotals& t, const TxnCheck& check,
                  nlohmann::ordered_json* rec) {
  const TxnBenchOptions& f = *run.options;
  const double secs = bench.seconds();
  const double commits_per_s = static_cast<double>(t.all.commits) / secs;
  const double attempted_per_s = static_cast<double>(t.all.attempts) / secs;
  const LatencyUs lat = latency_us(bench.histogram_all());
  const double rt_per_commit = rate(t.round_trips, t.all.commits);
  const uint32_t replicas = run.workload->replicas();
  fmt::print(
      "txn {}: commits/s={:.0f} attempted/s={:.0f} abort_rate={:.4f} p50={:.1f}us p99={:.1f}us "
      "p999={:.1f}us round_trips/commit={:.2f} unvalidated={:.1f}% threads={} coroutines={} "
      "scale={} replicas={} commits={}{}{}\n",
      run.name, commits_per_s, attempted_per_s, rate(t.all.aborts, t.all.attempts), lat.p50,
      lat.p99, lat.p999, rt_per_commit, 100 * rate(t.unvalidated, t.all.commits), f.bench.threads,
      f.coroutines, f.scale, replicas, run.commits, run.workload->result_words(),
      bench.result_suffix());
  fmt::print("{}\n", check.line);
  auto& r = *rec;
  r["workload"] = run.name;
  r["durable"] = run.commits == "durable";
  r["commits"] = run.commits;
  r["threads"] = f.bench.threads;
  r["coroutines"] = f.coroutines;
  r["scale"] = f.scale;
  r["replicas"] = replicas;
  r["commits_per_s"] = commits_per_s;
  r["attempted_per_s"] = attempted_per_s;
  r["abort_rate"] = rate(t.all.aborts, t.all.attempts);
  r["rolled_back"] = t.all.rolled_back;  // by the workload itself (not aborts)
  r["p50_us"] = lat.p50;
  r["p99_us"] = lat.p99;
  r["p999_us"] = lat.p999;
  r["round_trips_per_commit"] = rt_per_commit;
  r["unvalidated_commits"] = t.unvalidated;
  r["address_cache_log2"] = run.client_options.cache_log2;
}

// After the run: per-type lines, the invariant, the result lines, the record; the exit code.
int report(Bench& bench, client::ThreadClient* mc, const TxnRun& run,
           const std::vector<TableSpec>& specs) {
  const TxnTotals t = totals(run);
  auto rec = bench.report_record();
  const nlohmann::ordered_json per_type = print_types(bench, t);
  TxnCheck check;
  if (Status s = check_invariant(mc, run, t.delta, &check); !s.ok()) {
    return bench.fail(1, "checking: " + s.to_string());
  }
  print_result(bench, run, t, check, &rec);
  rec["per_type"] = per_type;
  rec["invariant"] = check.line;
  rec["invariant_ok"] = check.ok;
  rec["load_s"] = run.load_s;
  for (const auto& [key, value] : check.json.items()) rec[key] = value;
  for (const TableSpec& s : specs) {
    if (s.table->valid()) (void)mc->run(s.table->destroy(mc));
  }
  bench.cluster()->release_thread_client();
  const int rc = bench.finish_report(rec);
  return check.ok ? rc : 1;
}

}  // namespace

int run_txn_bench(const TxnBenchOptions& f) {
  std::unique_ptr<TxnWorkload> w;
  try {
    w = make_workload(f);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "farmem bench txn: {}\n", e.what());
    return 2;
  }
  BenchOptions bo = f.bench;
  if (f.durable) bo.cluster.local_durability = "power";
  Bench bench("txn", bo, w->type_names());
  if (int rc = bench.connect(w->local_bytes()); rc != 0) return rc;
  auto main_client = bench.cluster()->thread_client();
  if (!main_client.ok()) return bench.fail(1, main_client.status().to_string());
  client::ThreadClient* mc = *main_client;
  size_t live = 0, durable = 0;
  for (const client::NodeInfo& n : bench.cluster()->nodes()) {
    if (f.durable && !n.durable && !n.down) {
      return bench.fail(2, fmt::format("--durable: memory node {} keeps no data (start it with "
                                       "--data-dir and --durability power)",
                                       n.node_id));
    }
    live += n.down ? 0 : 1;
    durable += !n.down && n.durable ? 1 : 0;
  }
  const std::vector<TableSpec> specs = w->tables();
  Status cs = mc->run(create_tables(mc, specs));
  if (!cs.ok()) return bench.fail(1, "creating the tables: " + cs.to_string());
  TxnRun run;
  run.options = &f;
  // The nodes decide: commits persist on a durable node, with or without --durable.
  run.commits = durable == 0 ? "volatile" : durable == live ? "durable" : "partly-durable";
  run.name = std::string(name_of(kTxnWorkloadNames, f.workload));
  run.workload = w.get();
  run.client_options = w->client_options();
  // The address cache sized to the data (direct-mapped: twice the rows, 16 B an entry), from
  // the default up to 2^22 entries (64 MiB a thread): a miss reads the whole bucket, and only a
  // slot read through the cache can be a stable snapshot (docs/formats/txn.md).
  const uint64_t rows = std::max<uint64_t>(1, w->load_row_count());
  run.client_options.cache_log2 =
      std::clamp(64 - __builtin_clzll(rows) + 1, run.client_options.cache_log2, 22);
  // A log slot for every transaction a thread has open (its coroutines), at least the default.
  run.client_options.log_slots = std::max(run.client_options.log_slots, f.coroutines);
  if (int rc = load_and_run(bench, &run); rc != 0) return rc;
  return report(bench, mc, run, specs);
}

}  // namespace farmem::bench
