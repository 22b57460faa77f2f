// The one-sided hash table against real memory nodes, over every transport: operations,
// boundary sizes, opening by name, sharding, concurrency on hot keys, speculative lookups,
// reclamation, and linearizability of recorded histories (Porcupine via tools/lincheck).
#include "farmem/ds/hash/hash_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "farmem/runtime/scheduler.h"
#include "harness.h"
#include "history.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using ds::hash::HashTable;
using ds::hash::HashTableOptions;
using runtime::Task;

HashTableOptions small_table() {
  HashTableOptions o;
  o.main_buckets_log2 = 10;  // 1024 main buckets per subtable
  o.initial_depth = 2;
  return o;
}

class HashTableTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    for (uint16_t id : {1, 2}) {
      ServerOptions o;
      o.tls = GetParam().tls;
      o.node_id = id;
      o.capacity_bytes = 256ull << 20;
      servers_.push_back(ServerProcess::start(o));
      ASSERT_NE(servers_.back(), nullptr);
    }
    cluster_ = connect();
    client_ = *cluster_->thread_client();
  }

  std::unique_ptr<Cluster> connect() {
    auto c = Cluster::connect(config_for({servers_[0].get(), servers_[1].get()}, GetParam().tls));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<HashTable> create(const std::string& name, HashTableOptions o = small_table()) {
    auto t = client_->run(HashTable::create(client_, name, o));
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return t.ok() ? std::move(*t) : nullptr;
  }

  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::unique_ptr<Cluster> cluster_;
  ThreadClient* client_ = nullptr;
};

TEST_P(HashTableTest, EveryOperationHasItsContract) {
  auto t = create("ops");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shard_count(), 2u);
  std::string v;
  EXPECT_FALSE(*sync_wait(t->get("apple", &v)));
  ASSERT_TRUE(sync_wait(t->insert("apple", "red")).ok());
  EXPECT_EQ(sync_wait(t->insert("apple", "green")).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(*sync_wait(t->get("apple", &v)));
  EXPECT_EQ(v, "red");
  ASSERT_TRUE(sync_wait(t->update("apple", "yellow")).ok());
  ASSERT_TRUE(*sync_wait(t->get("apple", &v)));
  EXPECT_EQ(v, "yellow");
  EXPECT_EQ(sync_wait(t->update("pear", "x")).code(), StatusCode::kNotFound);
  ASSERT_TRUE(sync_wait(t->put("pear", "green")).ok());
  ASSERT_TRUE(*sync_wait(t->get("pear", &v)));
  EXPECT_EQ(v, "green");
  ASSERT_TRUE(sync_wait(t->put("pear", "brown")).ok());
  ASSERT_TRUE(*sync_wait(t->get("pear", &v)));
  EXPECT_EQ(v, "brown");
  ASSERT_TRUE(sync_wait(t->erase("apple")).ok());
  EXPECT_EQ(sync_wait(t->erase("apple")).code(), StatusCode::kNotFound);
  EXPECT_FALSE(*sync_wait(t->get("apple", &v)));
  ASSERT_TRUE(sync_wait(t->insert("apple", "again")).ok());
  ASSERT_TRUE(*sync_wait(t->get("apple", &v)));
  EXPECT_EQ(v, "again");
}

TEST_P(HashTableTest, BoundarySizesAndOversizedInput) {
  auto t = create("sizes");
  ASSERT_NE(t, nullptr);
  std::string v;
  ASSERT_TRUE(sync_wait(t->insert("empty", "")).ok());
  ASSERT_TRUE(*sync_wait(t->get("empty", &v)));
  EXPECT_EQ(v, "");
  ASSERT_TRUE(sync_wait(t->insert("k", "1")).ok());
  const std::string big_key(ds::hash::kMaxKeyBytes, 'K');
  std::string big_value(64 * 1024, '\0');
  for (size_t i = 0; i < big_value.size(); ++i) big_value[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(sync_wait(t->insert(big_key, big_value)).ok());
  ASSERT_TRUE(*sync_wait(t->get(big_key, &v)));
  EXPECT_EQ(v, big_value);
  const std::string max_value(ds::hash::kMaxValueBytes, 'V');
  ASSERT_TRUE(sync_wait(t->put("max", max_value)).ok());
  ASSERT_TRUE(*sync_wait(t->get("max", &v)));
  EXPECT_EQ(v, max_value);
  ASSERT_TRUE(sync_wait(t->update("max", "small now")).ok());
  ASSERT_TRUE(*sync_wait(t->get("max", &v)));
  EXPECT_EQ(v, "small now");
  // Medium values cross the 127-unit inline length.
  const std::string medium(9000, 'm');
  ASSERT_TRUE(sync_wait(t->put("medium", medium)).ok());
  ASSERT_TRUE(*sync_wait(t->get("medium", &v)));
  EXPECT_EQ(v, medium);
  EXPECT_EQ(sync_wait(t->insert(std::string(ds::hash::kMaxKeyBytes + 1, 'x'), "v")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(t->put("k", std::string(ds::hash::kMaxValueBytes + 1, 'x'))).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(t->insert("", "v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(t->get("", &v)).status().code(), StatusCode::kInvalidArgument);
  // Nothing was lost on the way.
  ASSERT_TRUE(*sync_wait(t->get("k", &v)));
  EXPECT_EQ(v, "1");
}

TEST_P(HashTableTest, AnotherProcessOpensTheTableByName) {
  auto t = create("shared");
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(sync_wait(t->insert("key" + std::to_string(i), "value" + std::to_string(i))).ok());
  }
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto o = oc->run(HashTable::open(oc, "shared"));
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  std::string v;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(*sync_wait((*o)->get("key" + std::to_string(i), &v))) << i;
    EXPECT_EQ(v, "value" + std::to_string(i));
  }
  ASSERT_TRUE(sync_wait((*o)->update("key7", "changed")).ok());
  ASSERT_TRUE(*sync_wait(t->get("key7", &v)));
  EXPECT_EQ(v, "changed");
  EXPECT_EQ(client_->run(HashTable::create(client_, "shared", small_table())).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(oc->run(HashTable::open(oc, "missing")).status().code(), StatusCode::kNotFound);
  // A root that is not a hash table.
  auto junk = client_->run(client_->allocate(64));
  ASSERT_TRUE(junk.ok());
  uint64_t zeros[8] = {};
  ASSERT_TRUE(sync_wait(client_->write(*junk, zeros, sizeof(zeros))).ok());
  ASSERT_TRUE(client_->run(client_->publish_root("hash/notatable", *junk)).ok());
  auto bad = oc->run(HashTable::open(oc, "notatable"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("does not point to a hash table"), std::string_view::npos);
}

TEST_P(HashTableTest, ThousandsOfKeysSpreadOverBothNodes) {
  auto t = create("many");
  ASSERT_NE(t, nullptr);
  constexpr int kKeys = 6000;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(sync_wait(t->insert("k" + std::to_string(i), std::to_string(i * 3))).ok()) << i;
  }
  std::string v;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(*sync_wait(t->get("k" + std::to_string(i), &v))) << i;
    ASSERT_EQ(v, std::to_string(i * 3));
  }
  auto s1 = client_->run(client_->stats(1));
  auto s2 = client_->run(client_->stats(2));
  ASSERT_TRUE(s1.ok() && s2.ok());
  // Both shards hold subtables and blocks.
  EXPECT_GT(s1->used_bytes, 1u << 20);
  EXPECT_GT(s2->used_bytes, 1u << 20);
}

TEST_P(HashTableTest, RepeatedGetIsOneRoundTripWithTheSpeculativeCache) {
  HashTableOptions one_sided = small_table();
  one_sided.served_procedures = false;  // the one-sided path on every transport
  auto t = create("spec", one_sided);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(sync_wait(t->insert("hot", "v1")).ok());
  std::string v;
  ASSERT_TRUE(*sync_wait(t->get("hot", &v)));
  auto before = t->stats();
  ASSERT_TRUE(*sync_wait(t->get("hot", &v)));
  EXPECT_EQ(v, "v1");
  EXPECT_EQ(t->stats().get_round_trips - before.get_round_trips, 1u);
  EXPECT_EQ(t->stats().spec_hits - before.spec_hits, 1u);
  // Changed by another client: the cached slot is stale, the get still returns the new value.
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto o = oc->run(HashTable::open(oc, "spec"));
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(sync_wait((*o)->update("hot", "v2")).ok());
  before = t->stats();
  ASSERT_TRUE(*sync_wait(t->get("hot", &v)));
  EXPECT_EQ(v, "v2");
  EXPECT_EQ(t->stats().spec_misses - before.spec_misses, 1u);
  EXPECT_LE(t->stats().get_round_trips - before.get_round_trips, 3u);
  // Without the cache a get of a present key costs 2 round trips.
  HashTableOptions plain = one_sided;
  plain.speculative_lookup = false;
  auto p = client_->run(HashTable::open(client_, "spec", plain));
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(*sync_wait((*p)->get("hot", &v)));
  EXPECT_EQ((*p)->stats().get_round_trips, 2u);
}

// One coroutine's update of `key`, `times` times, each with a value of its own.
Task<void> update_worker(HashTable* t, std::string key, int id, int times, int* failed) {
  for (int i = 0; i < times; ++i) {
    Status st = co_await t->update(key, "v" + std::to_string(id) + "-" + std::to_string(i));
    if (!st.ok()) ++*failed;
  }
}

TEST_P(HashTableTest, OverTcpGetsAndUpdatesAreOneCallTheNodeRuns) {
  const bool served = GetParam().name == std::string("tcp");
  HashTableOptions o = small_table();
  o.speculative_lookup = false;  // every get looks the key up (served over TCP)
  auto t = create("served", o);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(sync_wait(t->insert("hot", "v0")).ok());
  EXPECT_EQ(sync_wait(t->insert("hot", "again")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(t->stats().served_inserts, served ? 1u : 0u);
  std::string v;
  auto before = t->stats();
  ASSERT_TRUE(*sync_wait(t->get("hot", &v)));
  EXPECT_EQ(v, "v0");
  EXPECT_FALSE(*sync_wait(t->get("cold", &v)));
  EXPECT_EQ(t->stats().served_gets - before.served_gets, served ? 2u : 0u);
  EXPECT_EQ(t->stats().get_round_trips - before.get_round_trips, served ? 2u : 3u);
  // 64 coroutines update one key at once: over TCP the node swings the slot for each, in the
  // order their calls arrive, and no CAS is lost across the network.
  before = t->stats();
  int failed = 0;
  for (int c = 0; c < 64; ++c) {
    ASSERT_TRUE(client_->scheduler().spawn(update_worker(t.get(), "hot", c, 10, &failed)).ok());
  }
  client_->scheduler().run_until_idle();
  EXPECT_EQ(failed, 0);
  if (served) {
    EXPECT_EQ(t->stats().served_updates - before.served_updates, 640u);
    EXPECT_EQ(t->stats().cas_failures - before.cas_failures, 0u);
  } else {
    EXPECT_EQ(t->stats().served_updates, 0u);
  }
  ASSERT_TRUE(*sync_wait(t->get("hot", &v)));
  EXPECT_EQ(v.substr(v.size() - 2), "-9") << v;  // some coroutine's last value
  auto copies = client_->run(t->committed_copies("hot"));
  ASSERT_TRUE(copies.ok());
  EXPECT_EQ(*copies, 1);
  // A value longer than the reply slot makes room for: read one-sided once, then served.
  const std::string big(5000, 'b');
  ASSERT_TRUE(sync_wait(t->put("big", big)).ok());
  before = t->stats();
  ASSERT_TRUE(*sync_wait(t->get("big", &v)));
  EXPECT_EQ(v, big);
  ASSERT_TRUE(*sync_wait(t->get("big", &v)));
  EXPECT_EQ(v, big);
  EXPECT_EQ(t->stats().served_fallbacks - before.served_fallbacks, served ? 1u : 0u);
  EXPECT_EQ(t->stats().served_gets - before.served_gets, served ? 1u : 0u);
}

TEST_P(HashTableTest, UpdateHeavyLoadReusesRetiredBlocks) {
  HashTableOptions o = small_table();
  o.retire_grace_ms = 20;  // one client, one coroutine: nobody else holds slot words
  auto t = create("reclaim", o);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(sync_wait(t->insert("k" + std::to_string(i), "0")).ok());
  client_->run(t->reclaim(true));
  auto before = client_->run(client_->stats(1));
  ASSERT_TRUE(before.ok());
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(
          sync_wait(t->update("k" + std::to_string(i), std::string(100, 'a' + round % 26))).ok());
    }
  }
  client_->run(t->reclaim(true));
  EXPECT_EQ(t->stats().reclaimed, t->stats().retired);
  EXPECT_GE(t->stats().retired, 2000u);
  // Second wave reuses the first wave's blocks: node usage stays flat.
  auto mid = client_->run(client_->stats(1));
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(
          sync_wait(t->update("k" + std::to_string(i), std::string(100, 'A' + round % 26))).ok());
    }
  }
  client_->run(t->reclaim(true));
  auto after = client_->run(client_->stats(1));
  ASSERT_TRUE(mid.ok() && after.ok());
  EXPECT_LE(after->used_bytes, mid->used_bytes + (2u << 20)) << "usage kept growing";
  std::string v;
  ASSERT_TRUE(*sync_wait(t->get("k3", &v)));
  EXPECT_EQ(v, std::string(100, 'A' + 39 % 26));
}

// ---- growth -------------------------------------------------------------------------------

HashTableOptions tiny_table() {
  HashTableOptions o;
  o.main_buckets_log2 = 4;  // 16 main buckets, 168 slots per subtable
  o.initial_depth = 0;      // one subtable per shard at creation
  return o;
}

TEST_P(HashTableTest, GrowsOnlineFromOneSubtablePerShard) {
  auto t = create("grow", tiny_table());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->subtable_count(0), 1u);
  constexpr int kKeys = 2000;  // ~6x what the two initial subtables (2 x 168 slots) can hold
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(sync_wait(t->insert("g" + std::to_string(i), "v" + std::to_string(i))).ok()) << i;
  }
  EXPECT_GT(t->stats().splits, 10u);
  for (uint32_t sh = 0; sh < t->shard_count(); ++sh) {
    EXPECT_GT(t->global_depth(sh), 2u) << "shard " << sh;
    EXPECT_GT(t->subtable_count(sh), 4u) << "shard " << sh;
  }
  std::string v;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(*sync_wait(t->get("g" + std::to_string(i), &v))) << i;
    ASSERT_EQ(v, "v" + std::to_string(i));
  }
  // A handle opened elsewhere reads the grown directory.
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto o = oc->run(HashTable::open(oc, "grow"));
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  for (int i = 0; i < kKeys; i += 7) {
    ASSERT_TRUE(*sync_wait((*o)->get("g" + std::to_string(i), &v))) << i;
    ASSERT_EQ(v, "v" + std::to_string(i));
  }
  // Erase half, update the rest, re-insert: still one committed copy of each key.
  for (int i = 0; i < kKeys; i += 2) ASSERT_TRUE(sync_wait(t->erase("g" + std::to_string(i))).ok());
  for (int i = 1; i < kKeys; i += 2) {
    ASSERT_TRUE(sync_wait((*o)->update("g" + std::to_string(i), "u" + std::to_string(i))).ok());
  }
  for (int i = 0; i < kKeys; i += 2) {
    ASSERT_TRUE(sync_wait(t->insert("g" + std::to_string(i), "again")).ok()) << i;
  }
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(*sync_wait(t->get("g" + std::to_string(i), &v))) << i;
    ASSERT_EQ(v, i % 2 == 0 ? "again" : "u" + std::to_string(i));
  }
  for (int i = 0; i < kKeys; i += 97) {
    auto copies = client_->run(t->committed_copies("g" + std::to_string(i)));
    ASSERT_TRUE(copies.ok());
    EXPECT_EQ(*copies, 1) << i;
  }
}

TEST_P(HashTableTest, StopsGrowingAtMaxDepthWithAClearError) {
  HashTableOptions o = tiny_table();
  o.max_depth = 1;  // at most 2 subtables per shard
  auto t = create("capped", o);
  ASSERT_NE(t, nullptr);
  Status last;
  int inserted = 0;
  for (int i = 0; i < 2000 && last.ok(); ++i) {
    last = sync_wait(t->insert("c" + std::to_string(i), "v"));
    if (last.ok()) ++inserted;
  }
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted) << last.to_string();
  EXPECT_NE(last.message().find("maximum depth"), std::string_view::npos) << last.to_string();
  EXPECT_GT(inserted, 200);  // two shards x two subtables of 168 slots, partly filled
  // Everything acknowledged is still there.
  std::string v;
  for (int i = 0; i < inserted; ++i)
    ASSERT_TRUE(*sync_wait(t->get("c" + std::to_string(i), &v))) << i;
  HashTableOptions bad = tiny_table();
  bad.initial_depth = 3;
  bad.max_depth = 2;
  EXPECT_EQ(client_->run(HashTable::create(client_, "bad", bad)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(HashTableTest, SplitThatCannotAllocateUndoesItself) {
  // One small node whose memory we fill once the table has its first keys, leaving room in the
  // current chunk for blocks but none for new subtables: the next split fails.
  ServerOptions so;
  so.tls = GetParam().tls;
  so.node_id = 9;
  so.capacity_bytes = 2ull << 20;
  auto node = ServerProcess::start(so);
  ASSERT_NE(node, nullptr);
  client::ClusterConfig cfg = config_for({node.get()}, GetParam().tls);
  cfg.options.chunk_bytes = 256 * 1024;  // 4,096 blocks of 64 bytes
  auto cluster = Cluster::connect(cfg);
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  ThreadClient* c = *(*cluster)->thread_client();
  HashTableOptions o = tiny_table();  // 168-slot subtables
  o.retire_grace_ms = 20;             // one client, one coroutine
  auto t = c->run(HashTable::create(c, "oom", o));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_TRUE(sync_wait((*t)->insert("m0", "value")).ok());  // takes the block chunk
  std::vector<GlobalAddress> ballast;
  for (uint64_t bytes = 1ull << 20; bytes >= 4096; bytes /= 2) {
    for (;;) {
      auto a = c->run(c->allocate_on(9, bytes, 4096));
      if (!a.ok()) break;
      ballast.push_back(*a);
    }
  }
  ASSERT_FALSE(ballast.empty());
  Status last;
  int inserted = 1;
  for (int i = 1; i < 2000 && last.ok(); ++i) {
    last = sync_wait((*t)->insert("m" + std::to_string(i), "value"));
    if (last.ok()) ++inserted;
  }
  ASSERT_EQ(last.code(), StatusCode::kResourceExhausted) << last.to_string();
  EXPECT_NE(last.message().find("out of remote memory"), std::string_view::npos)
      << last.to_string();
  EXPECT_GT((*t)->stats().split_failures, 0u);
  EXPECT_GT(inserted, 50);
  // Nothing acknowledged is lost and the failed split unfroze its subtable: every key reads
  // back without waiting, and updates and erases work.
  std::string v;
  for (int i = 0; i < inserted; ++i) {
    auto r = sync_wait((*t)->get("m" + std::to_string(i), &v));
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
    ASSERT_TRUE(*r) << i;
  }
  EXPECT_EQ((*t)->stats().split_waits, 0u);
  ASSERT_TRUE(sync_wait((*t)->update("m0", "changed")).ok());
  // With the memory back, the same inserts split the table and succeed.
  for (GlobalAddress a : ballast) ASSERT_TRUE(c->run(c->free_on(a)).ok());
  for (int i = inserted; i < inserted + 300; ++i) {
    ASSERT_TRUE(sync_wait((*t)->insert("m" + std::to_string(i), "value")).ok()) << i;
  }
  EXPECT_GT((*t)->stats().splits, (*t)->stats().split_failures);
  ASSERT_TRUE(*sync_wait((*t)->get("m0", &v)));
  EXPECT_EQ(v, "changed");
}

// Sets or clears the frozen bit of every slot of shard 0's only subtable, and sets its lock
// word to `holder` (0 when clearing), the way a splitter that froze it would leave them.
void set_frozen(ThreadClient* c, const std::string& table, uint32_t m, bool frozen,
                uint64_t holder = 0) {
  using namespace ds::hash;
  auto root = c->run(c->lookup_root("hash/" + table));
  ASSERT_TRUE(root.ok());
  uint64_t dir_packed = 0;
  ASSERT_TRUE(sync_wait(c->read(*root + sizeof(TableMeta), &dir_packed, 8)).ok());
  GlobalAddress dir = GlobalAddress::unpack(dir_packed);
  uint64_t entry = 0;
  ASSERT_TRUE(sync_wait(c->read(dir + sizeof(DirectoryHeader), &entry, 8)).ok());
  GlobalAddress sub(dir.node(), dir_entry_offset(entry));
  std::string image(subtable_bytes(m), '\0');
  ASSERT_TRUE(sync_wait(c->read(sub, image.data(), image.size())).ok());
  for (uint64_t b = 0; b < subtable_buckets(m); ++b) {
    for (uint32_t k = 0; k < kSlotsPerBucket; ++k) {
      char* p = image.data() + subtable_slot_offset(b, k);
      uint64_t w;
      std::memcpy(&w, p, 8);
      w = frozen ? (w | kSlotFrozenBit) : (w & ~kSlotFrozenBit);
      std::memcpy(p, &w, 8);
    }
  }
  uint64_t lock = frozen ? holder : 0;
  std::memcpy(image.data(), &lock, 8);
  ASSERT_TRUE(sync_wait(c->write(sub, image.data(), image.size())).ok());
}

// A split whose client is alive but does not finish (stopped): operations on its subtable wait
// up to split_wait_ms and then fail clearly; the keys are intact once it finishes.
TEST_P(HashTableTest, SplitHeldByALiveSessionTimesOutClearlyAndLosesNothing) {
  HashTableOptions o = tiny_table();
  o.split_wait_ms = 300;
  auto t = create("stuck", o);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(sync_wait(t->insert("a" + std::to_string(i), "v")).ok());
  auto other = connect();  // a live session of another client, shown as the splitter
  ASSERT_NE(other, nullptr);
  ThreadClient* oc = *other->thread_client();
  const uint16_t first = std::min(cluster_->nodes()[0].node_id, cluster_->nodes()[1].node_id);
  const uint64_t holder = oc->session_id(first);  // shard 0 lives on the lowest node id
  set_frozen(client_, "stuck", o.main_buckets_log2, true, holder);
  int timed_out = 0, fine = 0;
  std::string v, frozen_key;
  for (int i = 0; i < 60 && timed_out < 3; ++i) {
    auto r = sync_wait(t->get("a" + std::to_string(i), &v));
    if (r.ok()) {
      EXPECT_TRUE(*r);
      ++fine;
      continue;
    }
    EXPECT_EQ(r.status().code(), StatusCode::kTimedOut) << r.status().to_string();
    EXPECT_NE(r.status().message().find("frozen by a split"), std::string_view::npos);
    if (frozen_key.empty()) frozen_key = "a" + std::to_string(i);
    ++timed_out;
  }
  EXPECT_EQ(timed_out, 3);
  EXPECT_GT(fine, 0);
  EXPECT_EQ(sync_wait(t->update(frozen_key, "x")).code(), StatusCode::kTimedOut);
  EXPECT_EQ(sync_wait(t->insert(frozen_key, "x")).code(), StatusCode::kTimedOut);
  EXPECT_EQ(t->stats().takeovers, 0u);  // a live holder keeps its lease
  set_frozen(client_, "stuck", o.main_buckets_log2, false);
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(*sync_wait(t->get("a" + std::to_string(i), &v))) << i;
    EXPECT_EQ(v, "v");
  }
}

// A split left frozen by a session that ended (its client died) is undone by the next client
// that waits on it: no key is lost and the table grows again.
TEST_P(HashTableTest, SplitLeftByAnEndedSessionIsUndoneAndTheTableGrowsOn) {
  HashTableOptions o = tiny_table();
  auto t = create("orphan", o);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(sync_wait(t->insert("a" + std::to_string(i), "v")).ok());
  uint64_t dead = 0;
  {
    auto other = connect();
    ASSERT_NE(other, nullptr);
    ThreadClient* oc = *other->thread_client();
    const uint16_t first = std::min(cluster_->nodes()[0].node_id, cluster_->nodes()[1].node_id);
    dead = oc->session_id(first);
  }  // its sessions end here
  set_frozen(client_, "orphan", o.main_buckets_log2, true, dead);
  std::string v;
  for (int i = 0; i < 60; ++i) {
    auto r = sync_wait(t->get("a" + std::to_string(i), &v));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(*r) << i;
  }
  EXPECT_GE(t->stats().takeovers, 1u);
  for (int i = 60; i < 400; ++i) {
    ASSERT_TRUE(sync_wait(t->insert("a" + std::to_string(i), "w")).ok()) << i;
  }
  for (int i = 0; i < 400; ++i) ASSERT_TRUE(*sync_wait(t->get("a" + std::to_string(i), &v))) << i;
}

// A client that dies at any step of a split leaves its locks with a session that ends; the
// next client that needs the subtable takes over and finishes or undoes the split, and every
// key inserted before is still there.
TEST_P(HashTableTest, ClientDyingAtEveryStepOfASplitLosesNothing) {
  const int only = std::getenv("FARMEM_STEP") ? std::atoi(std::getenv("FARMEM_STEP")) : 0;
  for (int step = 1; step <= 5; ++step) {
    if (only != 0 && step != only) continue;
    SCOPED_TRACE(::testing::Message() << "split stopped after step " << step);
    HashTableOptions o = tiny_table();
    const std::string name = "crash" + std::to_string(step);
    auto t = create(name, o);
    ASSERT_NE(t, nullptr);
    std::vector<std::string> keys;
    Status stopped;
    {
      auto dying = connect();
      ASSERT_NE(dying, nullptr);
      ThreadClient* dc = *dying->thread_client();
      auto h = dc->run(HashTable::open(dc, name, o));
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      (*h)->set_split_stop_after_for_test(step);
      for (int i = 0; i < 2000 && stopped.ok(); ++i) {
        std::string k = "k" + std::to_string(i);
        stopped = sync_wait((*h)->insert(k, "v" + std::to_string(i)));
        if (stopped.ok()) keys.push_back(k);
      }
      ASSERT_EQ(stopped.code(), StatusCode::kCancelled) << stopped.to_string();
    }  // the dying client's sessions end: its locks' leases are over
    std::string v;
    for (size_t i = 0; i < keys.size(); ++i) {
      auto r = sync_wait(t->get(keys[i], &v));
      ASSERT_TRUE(r.ok()) << keys[i] << ": " << r.status().to_string();
      ASSERT_TRUE(*r) << keys[i] << " of " << keys.size() << " takeovers " << t->stats().takeovers
                      << " depth " << t->global_depth(0) << "/" << t->global_depth(1) << " waits "
                      << t->stats().split_waits << " dirreads " << t->stats().directory_reads;
    }
    for (int i = 2000; i < 2400; ++i) {
      ASSERT_TRUE(sync_wait(t->insert("k" + std::to_string(i), "w")).ok()) << i;
    }
    for (const std::string& k : keys) ASSERT_TRUE(*sync_wait(t->get(k, &v))) << k;
    EXPECT_GE(t->stats().takeovers, 1u);
    ASSERT_TRUE(client_->run(t->destroy()).ok());
  }
}

// ---- concurrency and linearizability ----------------------------------------------------

Task<void> mixed_worker(HashTable* t, int id, int ops, int keys, History* h, std::atomic<int>* torn,
                        std::set<std::string>* written, std::mutex* written_mu) {
  std::mt19937 rng(static_cast<uint32_t>(test_seed() + 1000 + id));
  for (int i = 0; i < ops; ++i) {
    HistoryOp o;
    o.client = id;
    o.key = "hot" + std::to_string(rng() % keys);
    const int dice = rng() % 10;
    if (dice >= 4) {
      o.value = "c" + std::to_string(id) + "n" + std::to_string(i);
      std::lock_guard<std::mutex> lock(*written_mu);
      written->insert(o.value);
    }
    co_await apply_op(t, dice, &o);
    if (o.op == "get" && o.ok && !o.unknown) {
      std::lock_guard<std::mutex> lock(*written_mu);
      if (!written->count(o.value)) torn->fetch_add(1);
    }
    h->add(std::move(o));
  }
}

// Inserts `count` unique keys (forcing splits in a tiny table) and records which succeeded.
Task<void> filler_worker(HashTable* t, int id, int count, std::atomic<int>* failed) {
  for (int i = 0; i < count; ++i) {
    std::string key = "fill" + std::to_string(id) + "-" + std::to_string(i);
    Status st = co_await t->insert(key, "f" + key);
    if (!st.ok()) {
      std::fprintf(stderr, "filler insert %s: %s\n", key.c_str(), st.to_string().c_str());
      failed->fetch_add(1);
    }
  }
}

struct ContendedRun {
  const char* table;
  HashTableOptions options;
  int filler_keys_per_thread = 0;  // unique inserts running beside the hot-key workers
};

// 3 threads (each with its own handle) x 6 coroutines x 150 mixed operations on 6 hot keys;
// checks values, single commits, errors, and linearizability with Porcupine.
void run_contended(HashTableTest* test, Cluster* cluster, ThreadClient* client,
                   const ContendedRun& run, const std::string& transport) {
  auto t = client->run(HashTable::create(client, run.table, run.options));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  constexpr int kThreads = 3, kCoroutines = 6, kOps = 150, kKeys = 6;
  History history;
  std::atomic<int> torn{0}, filler_failed{0};
  std::set<std::string> written;
  std::mutex written_mu;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> cas_failures{0}, splits{0}, split_waits{0};
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      ThreadClient* tc = *cluster->thread_client();
      HashTableOptions ho = run.options;
      if (std::getenv("FARMEM_TEST_NO_SPEC")) ho.speculative_lookup = false;
      // Over TCP two threads' handles use the node's procedures, the third stays one-sided:
      // node-side and client-side CAS on the same slots.
      ho.served_procedures = th != 2;
      auto handle = tc->run(HashTable::open(tc, run.table, ho));
      ASSERT_TRUE(handle.ok());
      for (int k = 0; k < kCoroutines; ++k) {
        int id = th * kCoroutines + k;
        ASSERT_TRUE(tc->scheduler()
                        .spawn(mixed_worker(handle->get(), id, kOps, kKeys, &history, &torn,
                                            &written, &written_mu))
                        .ok());
      }
      if (run.filler_keys_per_thread > 0) {
        ASSERT_TRUE(
            tc->scheduler()
                .spawn(filler_worker(handle->get(), th, run.filler_keys_per_thread, &filler_failed))
                .ok());
      }
      tc->scheduler().run_until_idle();
      cas_failures.fetch_add((*handle)->stats().cas_failures);
      splits.fetch_add((*handle)->stats().splits);
      split_waits.fetch_add((*handle)->stats().split_waits);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(torn.load(), 0) << "a get returned a value nobody wrote";
  for (int k = 0; k < kKeys; ++k) {
    auto copies = client->run((*t)->committed_copies("hot" + std::to_string(k)));
    ASSERT_TRUE(copies.ok());
    EXPECT_LE(*copies, 1) << "key hot" << k << " is committed in several slots";
  }
  int unknown = 0;
  for (const auto& o : history.ops) unknown += o.unknown;
  EXPECT_EQ(unknown, 0);
  ASSERT_EQ(history.ops.size(), size_t{kThreads} * kCoroutines * kOps);
  if (run.filler_keys_per_thread > 0) {
    // Growth happened during the history, and no acknowledged insert was lost in it.
    EXPECT_EQ(filler_failed.load(), 0);
    EXPECT_GT(splits.load(), 3u);
    std::string v;
    for (int th = 0; th < kThreads; ++th) {
      for (int i = 0; i < run.filler_keys_per_thread; ++i) {
        std::string key = "fill" + std::to_string(th) + "-" + std::to_string(i);
        auto r = sync_wait((*t)->get(key, &v));
        ASSERT_TRUE(r.ok() && *r) << key;
        ASSERT_EQ(v, "f" + key);
      }
    }
    std::printf("splits: %llu, operations that waited for a split: %llu\n",
                static_cast<unsigned long long>(splits.load()),
                static_cast<unsigned long long>(split_waits.load()));
  }
  std::printf("CAS races retried: %llu\n", static_cast<unsigned long long>(cas_failures.load()));
  expect_linearizable(history, transport + "-" + run.table);
  (void)test;
}

TEST_P(HashTableTest, ContendedMixedOperationsAreLinearizable) {
  run_contended(this, cluster_.get(), client_, ContendedRun{"hot", small_table(), 0},
                GetParam().name);
}

TEST_P(HashTableTest, GrowthUnderContendedOperationsIsLinearizable) {
  // Each thread inserts 400 unique keys while its coroutines hammer the hot keys: the tiny
  // table (one 168-slot subtable per shard) splits many times during the recorded history.
  run_contended(this, cluster_.get(), client_, ContendedRun{"hotgrow", tiny_table(), 400},
                GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Transports, HashTableTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
