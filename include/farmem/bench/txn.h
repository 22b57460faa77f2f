// `farmem bench txn`: distributed transactions on farmem::txn, FORD's benchmarks (SmallBank,
// TATP) and TPC-C at their standard mixes.
//
// A run creates the workload's tables (temporary: gone when the run ends), loads them from every
// thread's coroutines (progress lines on stderr), then each thread runs `coroutines`
// coordinators until the duration ends; a transaction is retried with backoff until it commits,
// at most max_attempts times. After the run the workload's invariant is checked (SmallBank's
// money, TATP's record counts, TPC-C's consistency conditions 1-4). Prints a line per
// transaction type, the result line and the invariant's line; the report file gets one record.
// Exit 1 when the invariant does not hold.
// Thread safety: run_txn_bench runs on the calling thread and starts the run's threads.
#pragma once

#include <cstdint>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"

namespace farmem::bench {

enum class TxnWorkloadKind { kSmallBank, kTatp, kTpcc };
inline constexpr EnumNames<TxnWorkloadKind, 3> kTxnWorkloadNames{
    {{"smallbank", TxnWorkloadKind::kSmallBank},
     {"tatp", TxnWorkloadKind::kTatp},
     {"tpcc", TxnWorkloadKind::kTpcc}}};

struct TxnBenchOptions {
  BenchOptions bench = bench_options_lasting(5);
  TxnWorkloadKind workload = TxnWorkloadKind::kSmallBank;
  uint32_t coroutines = 8;     // transactions in flight per thread
  double scale = 1;            // x 100,000 accounts (smallbank) or subscribers (tatp); tpcc: W
  uint32_t max_attempts = 64;  // attempts per transaction before it is given up
  // tpcc: NewOrders/s (all threads) that the growing tables are sized for (no resizes).
  double tpcc_orders_per_s = 12000;
  uint32_t tpcc_items = 100000;    // NON-STANDARD below 100,000 (tests only)
  uint32_t tpcc_customers = 3000;  // per district; NON-STANDARD below 3,000 (tests only)
  // Every node must keep its data (power durability; the local node is started so): commits
  // are durable, as a database's with fsync on.
  bool durable = false;
};

// Runs the benchmark; 0, or 1 (failed run, invariant violated) / 2 (bad options) with the error
// printed.
int run_txn_bench(const TxnBenchOptions& options);

}  // namespace farmem::bench
