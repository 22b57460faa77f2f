// `farmem bench txn --workload smallbank|tatp`: distributed transactions (bench_txn.cc).
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
  std::string workload = "smallbank";  // smallbank | tatp
  uint32_t coroutines = 8;             // transactions in flight per thread
  double scale = 1;                    // x 100,000 accounts (smallbank) or subscribers (tatp)
  uint32_t max_attempts = 64;          // attempts per transaction before it is given up
};
CLI::App* add_bench_txn(CLI::App* bench, BenchTxnFlags* flags);
int run_bench_txn(const BenchTxnFlags& flags);

}  // namespace farmem::apps
