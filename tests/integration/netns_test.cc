// Two hosts on one machine (two_hosts.h): one-sided operations, a node killed, the hash table
// and the B+tree across a network namespace over TCP.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "farmem/ds/btree/btree.h"
#include "farmem/ds/hash/hash_table.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "two_hosts.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using runtime::Task;

Task<void> add_loop(ThreadClient* c, GlobalAddress a, int n, int* errors) {
  for (int i = 0; i < n; ++i) {
    uint64_t old = 0;
    Status s = co_await c->faa(a, 1, &old);
    if (!s.ok()) ++*errors;
  }
}

TEST_F(TwoHostTest, OneSidedOperationsCrossTheNamespaceOverTcp) {
  auto c = Cluster::connect(config());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_NE((*c)->transports().find("tcp/" + host_if_), std::string::npos) << (*c)->transports();
  ThreadClient* tc = *(*c)->thread_client();
  auto a = tc->run(tc->allocate_on((*c)->nodes()[0].node_id, 4 << 20));
  ASSERT_TRUE(a.ok());
  std::vector<uint8_t> out(4 << 20), in(4 << 20);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 31);
  ASSERT_TRUE(sync_wait(tc->write(*a, out.data(), out.size())).ok());
  ASSERT_TRUE(sync_wait(tc->read(*a, in.data(), in.size())).ok());
  EXPECT_EQ(out, in);
  uint64_t zero = 0;
  ASSERT_TRUE(sync_wait(tc->write(*a, &zero, 8)).ok());
  int errors = 0;
  for (int k = 0; k < 8; ++k)
    ASSERT_TRUE(tc->scheduler().spawn(add_loop(tc, *a, 100, &errors)).ok());
  tc->scheduler().run_until_idle();
  EXPECT_EQ(errors, 0);
  uint64_t total = 0;
  ASSERT_TRUE(sync_wait(tc->read(*a, &total, 8)).ok());
  EXPECT_EQ(total, 800u);
  uint64_t old = 0;
  ASSERT_TRUE(sync_wait(tc->cas(*a, 800, 1, &old)).ok());
  EXPECT_EQ(old, 800u);
}

TEST_F(TwoHostTest, RemoteNodeKilledGivesPeerFailure) {
  auto c = Cluster::connect(config());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ThreadClient* tc = *(*c)->thread_client();
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());
  // ip netns exec execs the server, so the pid is the server's.
  server_->signal(SIGKILL);
  // The closed door connection tells at once; reads end with kPeerFailed, never a hang (each
  // has its deadline). The loop bound is a hang guard.
  Status s;
  uint64_t v = 0;
  for (int i = 0; i < 100000 && s.ok(); ++i) s = sync_wait(tc->read(*a, &v, 8));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kPeerFailed) << s.to_string();
}

Task<void> table_worker(ds::hash::HashTable* t, int id, int ops, int* errors) {
  for (int i = 0; i < ops; ++i) {
    std::string key = "k" + std::to_string((id * 7 + i) % 20);
    std::string value = "w" + std::to_string(id) + "-" + std::to_string(i);
    Status s = co_await t->put(key, value);
    std::string got;
    auto r = co_await t->get(key, &got);
    if (!s.ok() || !r.ok() || !*r || got.empty() || got[0] != 'w') ++*errors;
  }
}

TEST_F(TwoHostTest, HashTableAcrossTheNamespace) {
  auto c = Cluster::connect(config());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ThreadClient* tc = *(*c)->thread_client();
  ds::hash::HashTableOptions o;
  o.main_buckets_log2 = 4;  // one 168-slot subtable: the table has to grow across the link
  o.initial_depth = 0;
  auto t = tc->run(ds::hash::HashTable::create(tc, "netns", o));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  for (int i = 0; i < 600; ++i) {
    ASSERT_TRUE(sync_wait((*t)->insert("key" + std::to_string(i), std::to_string(i))).ok()) << i;
  }
  EXPECT_GT((*t)->stats().splits, 1u);
  EXPECT_GT((*t)->global_depth(0), 1u);
  std::string v;
  for (int i = 0; i < 600; ++i) {
    ASSERT_TRUE(*sync_wait((*t)->get("key" + std::to_string(i), &v)));
    EXPECT_EQ(v, std::to_string(i));
  }
  ASSERT_TRUE(sync_wait((*t)->update("key5", "five")).ok());
  ASSERT_TRUE(sync_wait((*t)->erase("key6")).ok());
  EXPECT_FALSE(*sync_wait((*t)->get("key6", &v)));
  // A second client process view opens it by name over the same link.
  auto other = Cluster::connect(config());
  ASSERT_TRUE(other.ok());
  ThreadClient* oc = *(*other)->thread_client();
  auto ot = oc->run(ds::hash::HashTable::open(oc, "netns"));
  ASSERT_TRUE(ot.ok());
  ASSERT_TRUE(*sync_wait((*ot)->get("key5", &v)));
  EXPECT_EQ(v, "five");
  // Concurrent coroutines over TCP on a small hot key set.
  int errors = 0;
  for (int k = 0; k < 6; ++k) {
    ASSERT_TRUE(tc->scheduler().spawn(table_worker(t->get(), k, 40, &errors)).ok());
  }
  tc->scheduler().run_until_idle();
  EXPECT_EQ(errors, 0);
}

Task<void> tree_worker(ds::btree::BTree* t, int id, int ops, int* errors) {
  for (int i = 0; i < ops; ++i) {
    std::string key = "t" + std::to_string(100 + (id * 7 + i) % 20);
    Status s = co_await t->put(key, "w" + std::to_string(id));
    std::string got;
    auto r = co_await t->get(key, &got);
    if (!s.ok() || !r.ok() || !*r || got.empty() || got[0] != 'w') ++*errors;
  }
}

TEST_F(TwoHostTest, BTreeAcrossTheNamespace) {
  auto c = Cluster::connect(config());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ThreadClient* tc = *(*c)->thread_client();
  auto t = tc->run(ds::btree::BTree::create(tc, "netns-tree"));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  for (int i = 0; i < 300; ++i) {  // splits and a root growth across the link
    ASSERT_TRUE(sync_wait((*t)->insert("key" + std::to_string(1000 + i), std::to_string(i))).ok())
        << i;
  }
  EXPECT_GE((*t)->height(), 2u);
  ASSERT_TRUE(sync_wait((*t)->erase("key1006")).ok());
  std::vector<std::pair<std::string, std::string>> out;
  ASSERT_TRUE(sync_wait((*t)->scan("key1000", "key1010", 0, &out)).ok());
  ASSERT_EQ(out.size(), 9u);
  EXPECT_EQ(out[5].first, "key1005");
  EXPECT_EQ(out[6].first, "key1007");
  // A second client opens it by name over the same link; coroutines contend on hot keys.
  auto other = Cluster::connect(config());
  ASSERT_TRUE(other.ok());
  ThreadClient* oc = *(*other)->thread_client();
  auto ot = oc->run(ds::btree::BTree::open(oc, "netns-tree"));
  ASSERT_TRUE(ot.ok());
  std::string v;
  ASSERT_TRUE(*sync_wait((*ot)->get("key1299", &v)));
  EXPECT_EQ(v, "299");
  int errors = 0;
  for (int k = 0; k < 6; ++k) {
    ASSERT_TRUE(tc->scheduler().spawn(tree_worker(t->get(), k, 30, &errors)).ok());
  }
  tc->scheduler().run_until_idle();
  EXPECT_EQ(errors, 0);
  std::vector<uint64_t> pages;
  Status s = tc->run((*t)->check(&pages));
  EXPECT_TRUE(s.ok()) << s.to_string();
}

Task<void> kv_worker(kv::Pool* p, int id, int n, int* errors) {
  std::string v;
  for (int i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(id) + "-" + std::to_string(i);
    Status s = co_await p->put(key, "v" + key);
    if (!s.ok()) ++*errors;
    auto r = co_await p->get(key, &v);
    if (!r.ok() || !*r || v != "v" + key) ++*errors;
  }
}

TEST_F(TwoHostTest, KeyValueStoreAcrossTheNamespace) {
  auto c = Cluster::connect(config());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ThreadClient* tc = *(*c)->thread_client();
  auto store = kv::Store::open(tc);  // auto: RPC gets, the node is reached over TCP
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE((*store)->one_sided((*c)->nodes()[0].node_id));
  auto p = sync_wait((*store)->create_pool("netns-kv", 16 << 20));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  int errors = 0;
  for (int k = 0; k < 16; ++k) {
    ASSERT_TRUE(tc->scheduler().spawn(kv_worker(p->get(), k, 40, &errors)).ok());
  }
  tc->scheduler().run_until_idle();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(*sync_wait((*p)->count()), 640u);
  const kv::StoreStats st = (*store)->stats();
  EXPECT_GT(st.coalesced_ops, st.ops_messages);  // coalesced across the link
  std::string big(1 << 20, 'b');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i >> 12);
  ASSERT_TRUE(sync_wait((*p)->put("big", big)).ok());
  std::string v;
  ASSERT_TRUE(*sync_wait((*p)->get("big", &v)));
  EXPECT_TRUE(v == big);
  ASSERT_TRUE(sync_wait((*store)->delete_pool("netns-kv")).ok());
}

}  // namespace
}  // namespace farmem::testing
