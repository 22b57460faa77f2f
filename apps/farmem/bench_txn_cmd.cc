// farmem bench txn --workload smallbank|tatp|tpcc [--coroutines N] [--scale X]
//                  [--max-attempts N] [--tpcc-orders-per-s R] [--durable] <bench flags>
//                                                             (farmem/bench/txn.h)
#include "command.h"
#include "farmem/bench/txn.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_flags(CLI::App* app, bench::TxnBenchOptions* o) {
  add_bench_flags(app, &o->bench, "measured seconds");
  add_enum_option(app, "--workload", &o->workload, bench::kTxnWorkloadNames,
                  "smallbank | tatp | tpcc");
  app->add_option("--coroutines", o->coroutines, "transactions in flight per thread")
      ->check(CLI::Range(1, 1024));
  app->add_option("--scale", o->scale,
                  "x 100,000 accounts (smallbank) or subscribers (tatp); warehouses (tpcc, "
                  "an integer >= 1)")
      ->check(CLI::Range(0.0001, 100.0));
  app->add_option("--max-attempts", o->max_attempts, "attempts per transaction")
      ->check(CLI::Range(1, 1'000'000));
  app->add_option("--tpcc-orders-per-s", o->tpcc_orders_per_s,
                  "tpcc: NewOrders/s (whole run) the ORDER, NEW-ORDER, ORDER-LINE and HISTORY "
                  "tables are sized for (no resizes; a full table ends the run)")
      ->check(CLI::Range(1.0, 1e7));
  app->add_option("--tpcc-items", o->tpcc_items,
                  "tpcc, NON-STANDARD (tests only): items (and stock rows per warehouse); the "
                  "specification's 100,000 is the default")
      ->check(CLI::Range(20, 100000));
  app->add_flag("--durable", o->durable,
                "durable commits: the local node keeps its data (--durability power in a "
                "temporary data directory); with --servers every node must be durable");
  app->add_option("--tpcc-customers", o->tpcc_customers,
                  "tpcc, NON-STANDARD (tests only): customers (and initial orders) per "
                  "district; the specification's 3,000 is the default")
      ->check(CLI::Range(10, 3000));
}

}  // namespace

Command bench_txn_command() {
  return make_command<bench::TxnBenchOptions>(
      "bench", "txn", "distributed transactions (FORD): smallbank | tatp | tpcc", add_flags,
      bench::run_txn_bench);
}

}  // namespace farmem::apps
