// The B+tree on a durable memory node: kill -9 of the node at a seeded moment during inserts,
// updates (some out of place, in blocks of their own) and page splits, a restart on the same
// directory, and then every acknowledged write is there, no key shows a value nobody wrote, and
// the tree takes new writes (durable_writes.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "durable_history.h"
#include "durable_node.h"
#include "durable_writes.h"
#include "farmem/ds/btree/btree.h"
#include "harness.h"
#include "power_loss_sweep.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using ds::btree::BTree;
using ds::btree::BTreeOptions;

class DurableBTreeTest : public ::testing::TestWithParam<Transport> {};

// Every fifth version is longer than the tree's inline values: a block of its own.
std::string value_of(uint64_t k, uint64_t version) {
  std::string v = fmt::format("v{}-of-{}", version, k);
  if (version % 5 == 0) v.resize(200, 'x');
  return v;
}

TEST_P(DurableBTreeTest, AcknowledgedWritesSurviveAKillDuringInsertsAndSplits) {
  DurableNode node(GetParam().tls, 128ull << 20);
  std::string why;
  ASSERT_TRUE(node.start(&why, "power", "256KiB")) << why;
  BTreeOptions o;
  o.page_bytes = ds::btree::kMinPageBytes;  // small pages: the run splits many times
  auto created = node.client().run(BTree::create(&node.client(), "durable", o));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  kill_during_writes<BTree>(
      node, std::move(*created), test_seed(), "256KiB",
      [](client::ThreadClient* c) { return BTree::open(c, "durable"); }, value_of);
}

// FARMEM_DURABLE_HISTORY_KILLS lives that end in a kill -9 (default 2; the 50-cycle run of the
// persistence work sets 50): the history of gets, puts, inserts, updates and erases across them
// is linearizable (durable_history.h).
TEST_P(DurableBTreeTest, HistoriesAcrossKillsAreLinearizable) {
  DurableNode node(GetParam().tls, 128ull << 20);
  BTreeOptions o;
  o.page_bytes = ds::btree::kMinPageBytes;
  HistoryAcrossKills<BTree> run;
  run.open = [o](client::ThreadClient* c) { return open_or_create<BTree>(c, "history", o); };
  history_across_kills(node, run, test_seed(), "durable-btree-" + GetParam().name);
}

// Power loss at every sync boundary of FARMEM_POWER_SWEEP_OPS operations (default 160; the
// persistence work's long run sets 10000): each recovery holds what was acknowledged
// (power_loss_sweep.h).
TEST_P(DurableBTreeTest, PowerLossAtEverySyncBoundaryKeepsAcknowledgedWrites) {
  DurableNode node(GetParam().tls, 64ull << 20);
  BTreeOptions o;
  o.page_bytes = ds::btree::kMinPageBytes;
  HistoryAcrossKills<BTree> run;
  run.open = [o](client::ThreadClient* c) { return open_or_create<BTree>(c, "sweep", o); };
  power_loss_sweep(node, run, static_cast<int>(test_knob("FARMEM_POWER_SWEEP_OPS", 160)),
                   test_seed(), "sweep-btree-" + GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Transports, DurableBTreeTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
