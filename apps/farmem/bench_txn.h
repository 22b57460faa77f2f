// `farmem bench txn --workload smallbank|tatp|tpcc`: distributed transactions (bench_txn.cc).
#pragma once

#include <cstdint>
#include <string>

#include "commands.h"

namespace CLI {
class App;
}

namespace farmem::apps {

struct BenchTxnFlags {
  BenchFlags bench = bench_flags_lasting(5);
  std::string workload = "smallbank";  // smallbank | tatp | tpcc
  uint32_t coroutines = 8;             // transactions in flight per thread
  double scale = 1;            // x 100,000 accounts (smallbank) or subscribers (tatp); tpcc: W
  uint32_t max_attempts = 64;  // attempts per transaction before it is given up
  // tpcc: NewOrders/s (all threads) that the growing tables are sized for (no resizes).
  double tpcc_orders_per_s = 12000;
  uint32_t tpcc_items = 100000;    // NON-STANDARD below 100,000 (tests only)
  uint32_t tpcc_customers = 3000;  // per district; NON-STANDARD below 3,000 (tests only)
};
CLI::App* add_bench_txn(CLI::App* bench, BenchTxnFlags* flags);
int run_bench_txn(const BenchTxnFlags& flags);

}  // namespace farmem::apps
