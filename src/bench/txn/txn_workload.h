// One workload of `farmem bench txn` (txn_bench.cc is the driver: threads, coroutines, retries,
// statistics, JSON, progress). A workload says which tables it needs, which rows the load puts
// in (per load unit, so that loading is split over the threads and their coroutines), how a
// transaction is drawn and run, and how its invariant is checked after the run.
//
// Implementations: smallbank.cc, tatp.cc, tpcc*.cc (make_* below).
// Thread safety: after construction and create_tables(), a workload is read-only and shared by
// every bench thread (params, body, load_rows are const and reentrant); check() runs on the
// main thread once every coordinator has stopped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "farmem/bench/txn.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/runtime/task.h"
#include "farmem/txn/transaction.h"

namespace farmem::bench {

// A transaction's inputs, drawn once and kept across its retries.
struct TxnParams {
  int type = 0;
  uint64_t a = 0, b = 0, c = 0, d = 0;
};

// One coordinator coroutine's identity (for keys the run inserts: unique per stream).
struct TxnStream {
  uint64_t id = 0;        // thread index * 4096 + coroutine index
  uint64_t sequence = 0;  // advanced by the workload
};

struct LoadRow {
  const txn::Table* table;
  uint64_t key;
  std::string value;
};

struct TableSpec {
  txn::Table* table;
  std::string name;
  uint32_t record_bytes;
  uint64_t capacity;
};

// The result of a workload's invariant check.
struct TxnCheck {
  std::string line;  // printed after the result line
  bool ok = false;
  nlohmann::ordered_json json = nlohmann::ordered_json::object();  // extra report fields
};

class TxnWorkload {
 public:
  virtual ~TxnWorkload() = default;

  virtual const std::vector<std::string>& type_names() const = 0;
  virtual bool read_only(int type) const = 0;
  // false: a read-only type whose reads need not be validated (an isolation level below
  // serializable that its specification allows; its reads still never see uncommitted data,
  // a locked record aborts the read). It ends with abort(), counted as its commit.
  virtual bool validated(int type) const { return true; }
  // The tables (created before the load, destroyed at the end).
  virtual std::vector<TableSpec> tables() = 0;
  // Rows the load inserts (for the loading line and the local node's size).
  virtual uint64_t load_row_count() const = 0;
  // Bytes of the local node when no --servers are given.
  virtual uint64_t local_bytes() const;
  virtual txn::TxnClientOptions client_options() const { return {}; }
  // The load is [0, load_units()), split over threads then coroutines; load_rows(from, to)
  // appends the rows of units [from, to) (an error: the data cannot be loaded as specified).
  virtual uint64_t load_units() const = 0;
  virtual Status load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const = 0;
  virtual TxnParams params(workload::Rng& rng, TxnStream* stream) const = 0;
  // One attempt of the transaction p in x (not committed here). *delta: the workload's
  // invariant delta of this attempt, counted if it commits.
  virtual runtime::Task<Status> body(txn::Transaction& x, TxnParams p, int64_t* delta) const = 0;
  // After the run: verifies the invariant; committed_delta sums the committed deltas.
  virtual runtime::Task<Status> check(txn::TxnClient* tc, int64_t committed_delta,
                                      TxnCheck* out) const = 0;
  virtual uint32_t replicas() const = 0;
  // Words for the result line and fields for the report (after the check).
  virtual std::string result_words() const { return ""; }
};

std::unique_ptr<TxnWorkload> make_smallbank(const TxnBenchOptions& flags);
std::unique_ptr<TxnWorkload> make_tatp(const TxnBenchOptions& flags);
// Setup (may throw std::invalid_argument on flags TPC-C cannot run with).
std::unique_ptr<TxnWorkload> make_tpcc(const TxnBenchOptions& flags);

// ---- helpers shared by the workloads (txn_workload.cc)

inline std::string u64s(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
inline int64_t i64_of(const std::string& s) {
  int64_t v = 0;
  std::memcpy(&v, s.data(), std::min<size_t>(8, s.size()));
  return v;
}

// Reads `keys` of `table` in read-only transactions of up to 64 reads (retried on conflict) and
// calls visit(index into keys, value) for each present one, in order.
runtime::Task<Status> scan_rows(txn::TxnClient* tc, const txn::Table* table,
                                std::vector<uint64_t> keys,
                                std::function<void(size_t, const std::string&)> visit);
// The sum (modulo 2^64) of the first 8 bytes of each present record of `keys`, and how many.
runtime::Task<Status> scan(txn::TxnClient* tc, const txn::Table* table, std::vector<uint64_t> keys,
                           int64_t* sum, uint64_t* present);
std::vector<uint64_t> key_range(uint64_t from, uint64_t to);

}  // namespace farmem::bench
