// Transactions on a durable memory node: kill -9 of the node at a seeded moment while
// coroutines transfer money between accounts; after a restart on the same directory the money
// is all there (no transfer half applied), every acknowledged transfer counted, and new
// transactions commit over the locks the dead coordinators left (recovered as met). Every wait
// is a hang guard, never a measurement.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "farmem/common/clock.h"
#include "farmem/runtime/when_all.h"
#include "farmem/txn/transaction.h"
#include "sync_boundaries.h"
#include "test_knob.h"
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

// What a probe at one sync boundary finds: the node comes back on the rebuilt directory; once
// the accounts' insert was acknowledged, the money adds up, the counter holds every transfer
// acknowledged by then and none not yet begun, and a new transfer commits over whatever locks
// the coordinators left. "" or what failed.
std::string check_transfers_at(const DurableNode& recorded, const std::vector<std::string>& args,
                               const SyncBoundary& b, bool setup_known, uint64_t acked,
                               uint64_t begun) {
  DurableNode probe(recorded.tls(), recorded.capacity_bytes());
  probe.extra_args = args;
  std::string why;
  if (!start_on_copy(probe, b.dir, "power", "256KiB", &why)) return why;
  if (!setup_known) return "";  // the table may be there or not, whole or in part
  client::ThreadClient* c = &probe.client();
  auto table = c->run(Table::open(c, "bank"));
  if (!table.ok()) return "open: " + table.status().to_string();
  auto tc = c->run(TxnClient::create(c));
  if (!tc.ok()) return "txn client: " + tc.status().to_string();
  auto found = c->run(audit(tc->get(), &*table));
  if (!found.ok()) return "audit: " + found.status().to_string();
  if (found->first != kAccounts * kStart) return fmt::format("the money is {}", found->first);
  if (found->second < acked || found->second > begun) {
    return fmt::format("{} transfers counted, {} acknowledged, {} begun", found->second, acked,
                       begun);
  }
  auto body = [&](Transaction& t) { return transfer(t, &*table, 0, 1, 1); };
  Status s = c->run(txn::run_transaction(tc->get(), 10000, body));
  if (!s.ok()) return "a new transfer: " + s.to_string();
  (void)c->run((*tc)->close());
  return "";
}

// Power loss at every sync boundary of FARMEM_POWER_SWEEP_TRANSFERS transfers (default 48; the
// persistence work's long run sets 10000) from 8 coroutines (sync_boundaries.h).
TEST_P(TxnDurableTest, PowerLossAtEverySyncBoundaryKeepsAcknowledgedTransfers) {
  const uint64_t seed = test_seed();
  DurableNode node(GetParam().tls, 64ull << 20);
  std::vector<std::string> args;
  std::string why;
  ASSERT_TRUE(record_syncs(node, "power", "256KiB", &args, &why)) << why;
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
    for (uint64_t k = 0; k <= kCounter; ++k) {
      ASSERT_TRUE(c->run(x.insert(table, k, u64_value(k == kCounter ? 0 : kStart))).ok());
    }
    ASSERT_TRUE(c->run(x.commit()).ok());
  }
  const auto setup_acked = static_cast<int64_t>(now_ns());
  const uint64_t transfers = test_knob("FARMEM_POWER_SWEEP_TRANSFERS", 48);
  std::vector<std::pair<int64_t, int64_t>> done;  // (begun, acknowledged) per transfer
  uint64_t started = 0;
  auto worker = [&](uint64_t w) -> Task<Status> {
    std::mt19937_64 r(seed * 31 + w);
    while (started < transfers) {
      ++started;
      const uint64_t from = r() % kAccounts;
      const uint64_t to = (from + 1 + r() % (kAccounts - 1)) % kAccounts;
      const auto begun = static_cast<int64_t>(now_ns());
      auto body = [&](Transaction& t) { return transfer(t, &table, from, to, 1 + r() % 50); };
      FARMEM_CO_TRY(co_await txn::run_transaction(tc->get(), 10000, body));
      done.emplace_back(begun, static_cast<int64_t>(now_ns()));
    }
    co_return OkStatus();
  };
  std::vector<Task<Status>> tasks;
  for (uint64_t w = 0; w < 8; ++w) tasks.push_back(worker(w));
  for (const Status& e : c->run(runtime::when_all(std::move(tasks)))) {
    ASSERT_TRUE(e.ok()) << "seed " << seed << ": " << e.to_string();
  }
  EXPECT_TRUE(c->run((*tc)->close()).ok());
  tc->reset();
  table = Table{};
  ASSERT_EQ(node.stop(), 0);
  for_each_sync_boundary(node, seed, [&](const SyncBoundary& b) {
    uint64_t acked = 0, begun = 0;
    for (const auto& [call, ret] : done) {
      acked += ret < b.horizon_ns ? 1 : 0;
      begun += call < b.horizon_ns ? 1 : 0;
    }
    return check_transfers_at(node, args, b, setup_acked < b.horizon_ns, acked, begun);
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnDurableTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
