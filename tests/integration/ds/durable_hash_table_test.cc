// The hash table on a durable memory node: kill -9 of the node at a seeded moment during
// inserts, updates and splits, a restart on the same directory, and then every acknowledged
// write is there, no key shows a value nobody wrote, and the table takes new writes
// (durable_writes.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "durable_history.h"
#include "durable_node.h"
#include "durable_writes.h"
#include "farmem/ds/hash/hash_table.h"
#include "harness.h"
#include "power_loss_sweep.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using ds::hash::HashTable;
using ds::hash::HashTableOptions;

class DurableHashTableTest : public ::testing::TestWithParam<Transport> {};

std::string value_of(uint64_t k, uint64_t version) { return fmt::format("v{}-of-{}", version, k); }

TEST_P(DurableHashTableTest, AcknowledgedWritesSurviveAKillDuringInsertsAndSplits) {
  DurableNode node(GetParam().tls, 128ull << 20);
  std::string why;
  ASSERT_TRUE(node.start(&why, "power", "256KiB")) << why;
  HashTableOptions o;
  o.main_buckets_log2 = 4;  // small subtables: the run splits many times
  auto created = node.client().run(HashTable::create(&node.client(), "durable", o));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  kill_during_writes<HashTable>(
      node, std::move(*created), test_seed(), "256KiB",
      [](client::ThreadClient* c) { return HashTable::open(c, "durable"); }, value_of);
}

// FARMEM_DURABLE_HISTORY_KILLS lives that end in a kill -9 (default 2; the 50-cycle run of the
// persistence work sets 50): the history of gets, puts, inserts, updates and erases across them
// is linearizable (durable_history.h).
TEST_P(DurableHashTableTest, HistoriesAcrossKillsAreLinearizable) {
  DurableNode node(GetParam().tls, 128ull << 20);
  HashTableOptions o;
  o.main_buckets_log2 = 4;
  HistoryAcrossKills<HashTable> run;
  run.open = [o](client::ThreadClient* c) { return open_or_create<HashTable>(c, "history", o); };
  history_across_kills(node, run, test_seed(), "durable-hash-" + GetParam().name);
}

// Power loss at every sync boundary of FARMEM_POWER_SWEEP_OPS operations (default 160; the
// persistence work's long run sets 10000): each recovery holds what was acknowledged
// (power_loss_sweep.h).
TEST_P(DurableHashTableTest, PowerLossAtEverySyncBoundaryKeepsAcknowledgedWrites) {
  DurableNode node(GetParam().tls, 64ull << 20);
  HashTableOptions o;
  o.main_buckets_log2 = 4;
  HistoryAcrossKills<HashTable> run;
  run.open = [o](client::ThreadClient* c) { return open_or_create<HashTable>(c, "sweep", o); };
  power_loss_sweep(node, run, static_cast<int>(test_knob("FARMEM_POWER_SWEEP_OPS", 160)),
                   test_seed(), "sweep-hash-" + GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Transports, DurableHashTableTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
