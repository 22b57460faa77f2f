// Transactions across two network namespaces (two_hosts.h: the memory node on another
// "host", reached over a veth pair with UCX forced to TCP): the API and a contended
// multi-threaded history checked by sercheck.
#include <latch>
#include <thread>

#include "farmem/txn/transaction.h"
#include "test_seed.h"
#include "two_hosts.h"
#include "txn_history.h"

namespace farmem::testing {
namespace {

class TxnTwoHostTest : public TwoHostTest {};

TEST_F(TxnTwoHostTest, TransactionsAcrossHostsAreSerializable) {
  auto cluster = client::Cluster::connect(config());
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  client::ThreadClient* c = *(*cluster)->thread_client();
  auto tc = c->run(TxnClient::create(c));
  ASSERT_TRUE(tc.ok()) << tc.status().to_string();
  txn::TableOptions o;
  o.capacity = 64;
  o.temporary = true;
  auto t = c->run(Table::create(c, "hosts", o));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->replicas(), 1u);  // one node
  constexpr uint64_t kKeys = 4;
  {
    Transaction x = (*tc)->begin();
    for (uint64_t k = 0; k < kKeys; ++k) ASSERT_TRUE(c->run(x.insert(*t, k, micro_value(0))).ok());
    ASSERT_TRUE(c->run(x.insert(*t, 99, micro_value(9))).ok());
    ASSERT_TRUE(c->run(x.commit()).ok());
    Transaction e = (*tc)->begin();
    ASSERT_TRUE(c->run(e.erase(*t, 99)).ok());
    ASSERT_TRUE(c->run(e.commit()).ok());
    Transaction r = (*tc)->begin_read_only();
    std::string v;
    EXPECT_EQ(c->run(r.read(*t, 99, &v)).code(), StatusCode::kNotFound);
    ASSERT_TRUE(c->run(r.read(*t, 1, &v)).ok());
    ASSERT_TRUE(c->run(r.commit()).ok());
  }
  const uint64_t seed = test_seed();
  constexpr int kThreads = 2;
  Recorder rec;
  std::vector<MicroStats> stats(kThreads);
  std::vector<Status> status(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back(micro_thread, cluster->get(), &*t, kKeys, 4, 40,
                         seed * 1000 + static_cast<uint64_t>(i) * 100, &rec, &stats[i], &status[i],
                         &start);
  }
  for (auto& th : threads) th.join();
  for (const Status& s : status) EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_GT(rec.lines.size(), 0u);
  expect_serializable(rec.lines, "netns");
  EXPECT_TRUE(c->run((*tc)->close()).ok());
}

}  // namespace
}  // namespace farmem::testing
