// Transactions on a durable memory node: kill -9 of the node at a seeded moment while
// coroutines transfer money between accounts; after a restart on the same directory the money
// is all there (no transfer half applied), every acknowledged transfer counted, and new
// transactions commit over the locks the dead coordinators left (recovered as met). Every wait
// is a hang guard, never a measurement.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "farmem/runtime/when_all.h"
#include "farmem/txn/transaction.h"
#include "test_seed.h"
#include "txn_fixture.h"

namespace farmem::testing {
namespace {

using runtime::Task;
using txn::Table;
using txn::Transaction;
using txn::TxnClient;

constexpr uint64_t kAccounts = 64;
constexpr uint64_t kStart = 1000;
constexpr uint64_t kCounter = kAccounts;  // the key counting committed transfers

class TxnDurableTest : public ::testing::TestWithParam<Transport> {};

// Moves `amount` from `from` to `to` and counts the transfer, in one transaction.
Task<Status> transfer(Transaction& t, const Table* table, uint64_t from, uint64_t to,
                      uint64_t amount) {
  std::string a, b, n;
  FARMEM_CO_TRY(co_await t.read_for_update(*table, from, &a));
  FARMEM_CO_TRY(co_await t.read_for_update(*table, to, &b));
  FARMEM_CO_TRY(co_await t.read_for_update(*table, kCounter, &n));
  const uint64_t moved = std::min(amount, value_u64(a));
  FARMEM_CO_TRY(co_await t.update(*table, from, u64_value(value_u64(a) - moved)));
  FARMEM_CO_TRY(co_await t.update(*table, to, u64_value(value_u64(b) + moved)));
  Status s = co_await t.update(*table, kCounter, u64_value(value_u64(n) + 1));
  co_return s;
}

// Reads every account and the counter: *out = {sum of balances, counter}.
Task<Status> read_all(Transaction& t, const Table* table, std::pair<uint64_t, uint64_t>* out) {
  *out = {0, 0};
  for (uint64_t k = 0; k <= kCounter; ++k) {
    std::string v;
    FARMEM_CO_TRY(co_await t.read(*table, k, &v));
    (k == kCounter ? out->second : out->first) += value_u64(v);
  }
  co_return OkStatus();
}

// The accounts' sum and the counter, read in one transaction.
Task<Result<std::pair<uint64_t, uint64_t>>> audit(TxnClient* tc, const Table* table) {
  std::pair<uint64_t, uint64_t> out;
  auto body = [&](Transaction& t) { return read_all(t, table, &out); };
  FARMEM_CO_TRY(co_await txn::run_transaction(tc, 10000, body));
  co_return out;
}

// Transfers until the node is killed at a seeded moment (with power_loss, a kill that takes
// everything not yet synced: --simulate-power-loss), then a restart and the audit.
void transfers_across_a_kill(const Transport& transport, bool power_loss) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  DurableNode node(transport.tls, 128ull << 20);
  if (power_loss) node.extra_args = {"--simulate-power-loss"};
  std::string why;
  ASSERT_TRUE(node.start(&why, "power", "256KiB")) << why;
  client::ThreadClient* c = &node.client();
  txn::TableOptions o;
  o.record_bytes = 8;
  o.capacity = 256;
  auto created = c->run(Table::create(c, "bank", o));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Table table = std::move(*created);
  auto tc = c->run(TxnClient::create(c));
  ASSERT_TRUE(tc.ok()) << tc.status().to_string();
  {
    Transaction x = (*tc)->begin();
    for (uint64_t k = 0; k < kAccounts; ++k) {
      ASSERT_TRUE(c->run(x.insert(table, k, u64_value(kStart))).ok());
    }
    ASSERT_TRUE(c->run(x.insert(table, kCounter, u64_value(0))).ok());
    ASSERT_TRUE(c->run(x.commit()).ok());
  }

  const uint64_t kill_after = 100 + rng() % 400;
  std::atomic<uint64_t> acked{0};
  std::thread killer = node.kill_when(acked, kill_after);
  auto worker = [&](uint64_t w) -> Task<Status> {
    std::mt19937_64 r(seed * 31 + w);
    for (;;) {
      const uint64_t from = r() % kAccounts;
      const uint64_t to = (from + 1 + r() % (kAccounts - 1)) % kAccounts;
      const uint64_t amount = 1 + r() % 50;
      auto body = [&](Transaction& t) { return transfer(t, &table, from, to, amount); };
      FARMEM_CO_TRY(co_await txn::run_transaction(tc->get(), 10000, body));
      acked.fetch_add(1);
    }
  };
  constexpr uint64_t kWorkers = 8;
  std::vector<Task<Status>> tasks;
  for (uint64_t w = 0; w < kWorkers; ++w) tasks.push_back(worker(w));
  const std::vector<Status> ended = c->run(runtime::when_all(std::move(tasks)));
  killer.join();
  for (const Status& e : ended) EXPECT_FALSE(e.ok());  // they stop only when the node dies
  tc->reset();
  table = Table{};
  node.kill();

  ASSERT_TRUE(node.start(&why, "power", "256KiB")) << why;
  c = &node.client();
  auto opened = c->run(Table::open(c, "bank"));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  table = std::move(*opened);
  auto tc2 = c->run(TxnClient::create(c));
  ASSERT_TRUE(tc2.ok()) << tc2.status().to_string();
  auto before = c->run(audit(tc2->get(), &table));
  ASSERT_TRUE(before.ok()) << "seed " << seed << ": " << before.status().to_string();
  EXPECT_EQ(before->first, kAccounts * kStart) << "seed " << seed;
  // Every acknowledged transfer, and at most the ones in flight (one per worker) besides.
  EXPECT_GE(before->second, acked.load()) << "seed " << seed;
  EXPECT_LE(before->second, acked.load() + kWorkers) << "seed " << seed;
  // Transactions go on over whatever locks the dead coordinators left.
  for (uint64_t i = 0; i < 2 * kAccounts; ++i) {
    auto body = [&](Transaction& t) {
      return transfer(t, &table, i % kAccounts, (i + 1) % kAccounts, 1);
    };
    ASSERT_TRUE(c->run(txn::run_transaction(tc2->get(), 10000, body)).ok()) << "seed " << seed;
  }
  auto after = c->run(audit(tc2->get(), &table));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->first, kAccounts * kStart);
  EXPECT_EQ(after->second, before->second + 2 * kAccounts);
  EXPECT_TRUE(c->run((*tc2)->close()).ok());
}

TEST_P(TxnDurableTest, AcknowledgedTransfersSurviveAKillAndTheMoneyAddsUp) {
  transfers_across_a_kill(GetParam(), /*power_loss=*/false);
}

TEST_P(TxnDurableTest, AcknowledgedTransfersSurviveAPowerLossAndTheMoneyAddsUp) {
  transfers_across_a_kill(GetParam(), /*power_loss=*/true);
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnDurableTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
