// The key-value store's client (farmem::kv: Store, Pool, coalescer, location cache) against a
// real memory node with the kv service, over shared memory and TCP: every operation and its
// contract, boundary sizes, direct transfers, ranges, locks, find, attributes, coalescing,
// one-sided gets, Porcupine-checked concurrent histories in each mode, and a killed node.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "farmem/kv/codec.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "history.h"
#include "kv_history_target.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using kv::KvMode;
using kv::Pool;
using kv::Store;
using runtime::Task;
namespace w = kv::wire;

constexpr uint64_t kPoolBytes = 64ull << 20;

// CRC-32 (zlib polynomial, reflected), bit by bit: the reference for Attribute::kCrc32.
uint32_t crc32_of(std::string_view s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 9)) & 0xFF);
  return s;
}

std::unique_ptr<Store> store(ThreadClient* c, KvMode mode = KvMode::kAuto, bool coalesce = true) {
  kv::StoreOptions o;
  o.mode = mode;
  o.coalesce = coalesce;
  auto s = Store::open(c, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

std::unique_ptr<Pool> create(Store* s, const std::string& name) {
  auto p = sync_wait(s->create_pool(name, kPoolBytes, 1000, w::kPoolCreateOnly));
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? std::move(*p) : nullptr;
}

class KvClientTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.tls = GetParam().tls;
    o.capacity_bytes = 512ull << 20;
    o.extra_args = {"--workers", "2"};  // pools on either shard; requests forwarded between
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    cluster_ = connect();
    ASSERT_NE(cluster_, nullptr);
    client_ = *cluster_->thread_client();
  }

  std::unique_ptr<Cluster> connect() {
    auto c = Cluster::connect(config_for({server_.get()}, GetParam().tls));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Cluster> cluster_;
  ThreadClient* client_ = nullptr;
};

TEST_P(KvClientTest, PoolsHaveTheirContracts) {
  auto s = store(client_);
  auto p = create(s.get(), "users");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->created());
  EXPECT_GE(p->capacity_bytes(), kPoolBytes);
  EXPECT_EQ(sync_wait(s->create_pool("users", kPoolBytes, 0, w::kPoolCreateOnly)).status().code(),
            StatusCode::kAlreadyExists);
  auto again = sync_wait(s->create_pool("users", kPoolBytes));  // without create-only: opens it
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_FALSE((*again)->created());
  EXPECT_EQ(sync_wait(s->open_pool("nobody")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(sync_wait(s->create_pool("", kPoolBytes)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(s->create_pool(std::string(w::kMaxPoolNameBytes + 1, 'n'), kPoolBytes))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(s->create_pool("tiny", 1024)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(s->create_pool("huge", 1ull << 40)).status().code(),
            StatusCode::kInvalidArgument);  // more than the node's region
  auto list = sync_wait(s->list_pools());
  ASSERT_TRUE(list.ok()) << list.status().to_string();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].name, "users");
  EXPECT_EQ((*list)[0].open_handles, 2u);

  // Another session has it open: delete is busy until that handle closes.
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto os = store(oc);
  auto op = sync_wait(os->open_pool("users"));
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  ASSERT_TRUE(sync_wait((*op)->put("k", "v")).ok());
  ASSERT_TRUE(sync_wait(s->close_pool(**again)).ok());
  EXPECT_EQ(sync_wait(s->close_pool(**again)).code(),
            StatusCode::kInvalidArgument);  // closed twice
  EXPECT_EQ(sync_wait(s->delete_pool("users")).code(), StatusCode::kBusy);
  ASSERT_TRUE(sync_wait(os->close_pool(**op)).ok());
  ASSERT_TRUE(
      sync_wait(s->delete_pool("users")).ok());  // the deleting session's own handle goes too
  EXPECT_EQ(sync_wait(s->delete_pool("users")).code(), StatusCode::kNotFound);
  EXPECT_EQ(sync_wait(s->open_pool("users")).status().code(), StatusCode::kNotFound);
  // A new pool of the same name starts empty.
  auto fresh = create(s.get(), "users");
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(*sync_wait(fresh->count()), 0u);
  auto stats = sync_wait(s->shard_stats(cluster_->nodes()[0].node_id));
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->size(), 2u);  // one per worker
  uint64_t puts = 0, pools = 0;
  for (const auto& sh : *stats) puts += sh.puts, pools += sh.pools;
  EXPECT_GE(puts, 1u);
  EXPECT_EQ(pools, 1u);
}

TEST_P(KvClientTest, KeyValueOperationsHaveTheirContracts) {
  for (KvMode mode : {KvMode::kRpc, KvMode::kOneTwoSided}) {
    SCOPED_TRACE(kv::kv_mode_name(mode));
    auto s = store(client_, mode);
    auto p = create(s.get(), std::string("ops-") + kv::kv_mode_name(mode));
    ASSERT_NE(p, nullptr);
    std::string v;
    EXPECT_FALSE(*sync_wait(p->get("apple", &v)));
    ASSERT_TRUE(sync_wait(p->put("apple", "red")).ok());
    ASSERT_TRUE(*sync_wait(p->get("apple", &v)));
    EXPECT_EQ(v, "red");
    ASSERT_TRUE(*sync_wait(p->get("apple", &v)));  // one-two-sided: a one-sided hit now
    EXPECT_EQ(v, "red");
    EXPECT_EQ(sync_wait(p->put("apple", "green", w::kPutCreateOnly)).code(),
              StatusCode::kAlreadyExists);
    bool existed = false;
    ASSERT_TRUE(sync_wait(p->put("apple", "blue", w::kPutDontOverwrite, &existed)).ok());
    EXPECT_TRUE(existed);
    ASSERT_TRUE(sync_wait(p->put("pear", "yellow", w::kPutDontOverwrite, &existed)).ok());
    EXPECT_FALSE(existed);
    ASSERT_TRUE(*sync_wait(p->get("apple", &v)));
    EXPECT_EQ(v, "red");
    ASSERT_TRUE(sync_wait(p->put("apple", "crimson")).ok());
    ASSERT_TRUE(*sync_wait(p->get("apple", &v)));
    EXPECT_EQ(v, "crimson");
    EXPECT_EQ(*sync_wait(p->count()), 2u);
    ASSERT_TRUE(sync_wait(p->erase("apple")).ok());
    EXPECT_EQ(sync_wait(p->erase("apple")).code(), StatusCode::kNotFound);
    EXPECT_FALSE(*sync_wait(p->get("apple", &v)));
    EXPECT_EQ(sync_wait(p->put("x", "y", 0x80)).code(), StatusCode::kInvalidArgument);
    // Attributes.
    ASSERT_TRUE(sync_wait(p->put("fig", "purple fruit")).ok());
    EXPECT_EQ(*sync_wait(p->attribute(w::Attribute::kValueLength, "fig")), 12u);
    EXPECT_EQ(*sync_wait(p->attribute(w::Attribute::kCrc32, "fig")), crc32_of("purple fruit"));
    const uint64_t epoch = *sync_wait(p->attribute(w::Attribute::kWriteEpoch, "fig"));
    EXPECT_GT(epoch, 0u);
    ASSERT_TRUE(sync_wait(p->put("fig", "green fruit")).ok());
    EXPECT_GT(*sync_wait(p->attribute(w::Attribute::kWriteEpoch, "fig")), epoch);
    EXPECT_EQ(sync_wait(p->attribute(w::Attribute::kValueLength, "nope")).status().code(),
              StatusCode::kNotFound);
    EXPECT_EQ(*sync_wait(p->attribute(w::Attribute::kCount)), 2u);
    EXPECT_GE(*sync_wait(p->attribute(w::Attribute::kCapacity)), kPoolBytes);
    auto info = sync_wait(p->info());
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    EXPECT_EQ(info->count, 2u);
    EXPECT_GT(info->used_bytes, 0u);
    EXPECT_EQ(info->flags & w::kPoolHasIndex, 0u);
    // A read-only handle (of a session with no writable one) reads but does not write.
    auto other = connect();
    ThreadClient* oc = *other->thread_client();
    auto os = store(oc, mode);
    auto ro = sync_wait(os->open_pool(p->name(), w::kPoolReadOnly));
    ASSERT_TRUE(ro.ok());
    ASSERT_TRUE(*sync_wait((*ro)->get("pear", &v)));
    EXPECT_EQ(v, "yellow");
    EXPECT_NE(sync_wait((*ro)->put("pear", "x")).code(), StatusCode::kOk);
    EXPECT_NE(sync_wait((*ro)->erase("pear")).code(), StatusCode::kOk);
    ASSERT_TRUE(sync_wait(os->close_pool(**ro)).ok());
    const kv::StoreStats st = s->stats();
    if (mode == KvMode::kOneTwoSided) {
      EXPECT_GT(st.one_sided_hits, 0u);
    } else {
      EXPECT_EQ(st.one_sided_hits + st.one_sided_misses, 0u);
    }
    ASSERT_TRUE(sync_wait(s->close_pool(*p)).ok());
    EXPECT_EQ(sync_wait(p->get("pear", &v)).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_P(KvClientTest, BoundarySizesTakeTheRightPath) {
  auto s = store(client_, KvMode::kAuto);
  auto p = create(s.get(), "sizes");
  ASSERT_NE(p, nullptr);
  std::string v;
  const std::string key1 = "k", key64k(w::kMaxKeyBytes, 'K');
  ASSERT_TRUE(sync_wait(p->put(key1, "")).ok());  // 1-byte key, empty value
  ASSERT_TRUE(*sync_wait(p->get(key1, &v)));
  EXPECT_EQ(v, "");
  ASSERT_TRUE(sync_wait(p->put(key64k, "long key")).ok());
  ASSERT_TRUE(*sync_wait(p->get(key64k, &v)));
  EXPECT_EQ(v, "long key");
  EXPECT_EQ(sync_wait(p->put("", "v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(p->put(std::string(w::kMaxKeyBytes + 1, 'K'), "v")).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(sync_wait(p->put(key64k, "a longer value, through locate")).ok());
  ASSERT_TRUE(*sync_wait(p->get(key64k, &v)));
  EXPECT_EQ(v, "a longer value, through locate");
  // The largest put a message carries, one byte more (through locate), and multi-MiB values.
  const size_t inline_max = w::kMaxRpcPayloadBytes - 32 - 8;
  for (size_t n : {inline_max, inline_max + 1, size_t{3} << 20}) {
    SCOPED_TRACE(n);
    const std::string big = pattern(n, static_cast<uint32_t>(n));
    ASSERT_TRUE(sync_wait(p->put("bigkey", big)).ok());
    ASSERT_TRUE(*sync_wait(p->get("bigkey", &v)));
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(v == big);
  }
  EXPECT_GT(s->stats().locates, 0u);
  // The same large value from another handle (no cached location: kReplyNeedsLocate).
  auto s2 = store(client_, KvMode::kRpc);
  auto p2 = sync_wait(s2->open_pool("sizes"));
  ASSERT_TRUE(p2.ok());
  ASSERT_TRUE(*sync_wait((*p2)->get("bigkey", &v)));
  EXPECT_EQ(v.size(), size_t{3} << 20);
  EXPECT_GT(s2->stats().locates, 0u);
  // Many medium values asked for in one round: their replies cannot all fit in 64 KiB.
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(sync_wait((*p2)->put("m" + std::to_string(i), pattern(9000, i))).ok());
  }
  std::vector<std::string> got(12);
  std::vector<Task<Result<bool>>> gets;
  std::vector<std::string> keys;
  for (int i = 0; i < 12; ++i) keys.push_back("m" + std::to_string(i));
  for (int i = 0; i < 12; ++i) gets.push_back((*p2)->get(keys[i], &got[i]));
  auto results = client_->run(runtime::when_all(std::move(gets)));
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(results[i].ok() && *results[i]) << i;
    EXPECT_TRUE(got[i] == pattern(9000, i)) << i;
  }
  EXPECT_GT(s2->stats().refetches + s2->stats().locates, 1u);
  ASSERT_TRUE(sync_wait(s2->close_pool(**p2)).ok());
}

TEST_P(KvClientTest, DirectTransfersRangesAndLocks) {
  auto s = store(client_);
  auto p = create(s.get(), "direct");
  ASSERT_NE(p, nullptr);
  const std::string value = pattern(200000, 3);
  ASSERT_TRUE(sync_wait(p->put_direct("blob", value.data(), value.size())).ok());
  std::string buf(300000, '\0');
  auto n = sync_wait(p->get_direct("blob", buf.data(), buf.size()));
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  ASSERT_EQ(*n, value.size());
  EXPECT_TRUE(buf.compare(0, value.size(), value) == 0);
  EXPECT_EQ(sync_wait(p->get_direct("blob", buf.data(), 10)).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(sync_wait(p->get_direct("none", buf.data(), 10)).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(sync_wait(p->put_direct("blob", "x", 1, w::kPutCreateOnly)).code(),
            StatusCode::kAlreadyExists);
  bool existed = false;
  ASSERT_TRUE(sync_wait(p->put_direct("blob", "x", 1, w::kPutDontOverwrite, &existed)).ok());
  EXPECT_TRUE(existed);
  ASSERT_TRUE(sync_wait(p->put_direct("empty", nullptr, 0)).ok());
  EXPECT_EQ(*sync_wait(p->get_direct("empty", buf.data(), buf.size())), 0u);
  // Ranges.
  char part[16] = {};
  auto r = sync_wait(p->read_range("blob", 1000, part, sizeof(part)));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, sizeof(part));
  EXPECT_EQ(std::string(part, sizeof(part)), value.substr(1000, sizeof(part)));
  r = sync_wait(p->read_range("blob", value.size() - 4, part, sizeof(part)));  // runs off the end
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4u);
  ASSERT_TRUE(sync_wait(p->write_range("blob", 5, "HELLO", 5)).ok());
  std::string v;
  ASSERT_TRUE(*sync_wait(p->get("blob", &v)));
  EXPECT_EQ(v.substr(0, 12), value.substr(0, 5) + "HELLO" + value.substr(10, 2));
  EXPECT_EQ(v.size(), value.size());
  EXPECT_EQ(sync_wait(p->write_range("blob", value.size() - 2, "abcd", 4)).code(),
            StatusCode::kOutOfRange);
  // Locks: far memory addressed directly; other sessions see kBusy until unlock.
  ASSERT_TRUE(sync_wait(p->put("counter", "00000000")).ok());
  auto lock = sync_wait(p->lock("counter", kv::LockMode::kWrite));
  ASSERT_TRUE(lock.ok()) << lock.status().to_string();
  EXPECT_EQ(lock->value_bytes, 8u);
  ASSERT_TRUE(sync_wait(client_->write(lock->address, "00000042", 8)).ok());
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto os = store(oc);
  auto op = sync_wait(os->open_pool("direct"));
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(sync_wait((*op)->get("counter", &v)).status().code(), StatusCode::kBusy);
  EXPECT_EQ(sync_wait((*op)->put("counter", "x")).code(), StatusCode::kBusy);
  EXPECT_EQ(sync_wait((*op)->lock("counter", kv::LockMode::kRead)).status().code(),
            StatusCode::kBusy);
  ASSERT_TRUE(sync_wait(p->unlock(*lock)).ok());
  ASSERT_TRUE(*sync_wait((*op)->get("counter", &v)));
  EXPECT_EQ(v, "00000042");
  auto rlock = sync_wait((*op)->lock("counter", kv::LockMode::kRead));
  ASSERT_TRUE(rlock.ok());
  char word[8];
  ASSERT_TRUE(sync_wait(oc->read(rlock->address, word, 8)).ok());
  EXPECT_EQ(std::string(word, 8), "00000042");
  ASSERT_TRUE(sync_wait((*op)->unlock(*rlock)).ok());
  EXPECT_NE(sync_wait((*op)->unlock(*rlock)).code(), StatusCode::kOk);  // released already
  ASSERT_TRUE(sync_wait(os->close_pool(**op)).ok());
}

TEST_P(KvClientTest, FindIteratesTheSecondaryIndex) {
  auto s = store(client_);
  auto p = create(s.get(), "index");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(sync_wait(p->find("prefix:a")).status().code(), StatusCode::kInvalidArgument);
  for (const char* k : {"apple", "apricot", "banana", "avocado", "cherry"}) {
    ASSERT_TRUE(sync_wait(p->put(k, "fruit")).ok());
  }
  ASSERT_TRUE(sync_wait(p->configure("AddIndex::VolatileTree")).ok());
  EXPECT_EQ(sync_wait(p->configure("NoSuchCommand::x")).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(sync_wait(p->put("apex", "new after the index")).ok());
  std::vector<std::string> found;
  uint64_t start = 0;
  for (;;) {
    auto m = sync_wait(p->find("prefix:ap", start));
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
      break;
    }
    found.push_back(m->key);
    start = m->position + 1;
  }
  EXPECT_EQ(found, (std::vector<std::string>{"apex", "apple", "apricot"}));
  auto ex = sync_wait(p->find("exact:banana"));
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->key, "banana");
  EXPECT_EQ(ex->position, 4u);  // apex apple apricot avocado banana cherry
  auto re = sync_wait(p->find("regex:c.*y"));
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(re->key, "cherry");
  auto nx = sync_wait(p->find("next:", 1));
  ASSERT_TRUE(nx.ok());
  EXPECT_EQ(nx->key, "apple");
  EXPECT_EQ(sync_wait(p->find("next:", 6)).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(sync_wait(p->erase("apple")).ok());
  auto after = sync_wait(p->find("prefix:app"));
  EXPECT_EQ(after.status().code(), StatusCode::kNotFound);
  EXPECT_NE(sync_wait(p->info())->flags & w::kPoolHasIndex, 0u);
}

// Coroutines of one thread that ask in the same round share messages; with coalescing off
// every operation is a message.
Task<void> get_many(Pool* p, int first, int n, int* errors) {
  std::string v;
  for (int i = first; i < first + n; ++i) {
    auto r = co_await p->get("key" + std::to_string(i % 50), &v);
    if (!r.ok() || !*r || v != "value" + std::to_string(i % 50)) ++*errors;
  }
}

TEST_P(KvClientTest, OperationsOfOneRoundShareAMessage) {
  for (bool coalesce : {true, false}) {
    SCOPED_TRACE(coalesce ? "coalescing" : "one message per operation");
    auto s = store(client_, KvMode::kRpc, coalesce);
    auto p = sync_wait(s->create_pool("round", kPoolBytes));
    ASSERT_TRUE(p.ok());
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(
          sync_wait((*p)->put("key" + std::to_string(i), "value" + std::to_string(i))).ok());
    }
    const kv::StoreStats before = s->stats();
    int errors = 0;
    for (int c = 0; c < 32; ++c) {
      ASSERT_TRUE(client_->scheduler().spawn(get_many(p->get(), c * 20, 20, &errors)).ok());
    }
    client_->scheduler().run_until_idle();
    EXPECT_EQ(errors, 0);
    const kv::StoreStats after = s->stats();
    const uint64_t ops = after.coalesced_ops - before.coalesced_ops;
    const uint64_t messages = after.ops_messages - before.ops_messages;
    EXPECT_EQ(ops, 640u);
    if (coalesce) {
      EXPECT_LE(messages * 8, ops) << messages << " messages";  // >= 8 operations each
    } else {
      EXPECT_EQ(messages, ops);
    }
    ASSERT_TRUE(sync_wait(s->close_pool(**p)).ok());
  }
  auto stats = sync_wait(store(client_)->shard_stats(cluster_->nodes()[0].node_id));
  ASSERT_TRUE(stats.ok());
  uint64_t ops = 0, messages = 0;
  for (const auto& sh : *stats) ops += sh.coalesced_ops, messages += sh.ops_messages;
  EXPECT_GT(ops, messages);  // the node saw several operations per message
}

TEST_P(KvClientTest, OneSidedGetsNeverReturnAStaleValue) {
  auto s = store(client_, KvMode::kOneTwoSided);
  auto p = create(s.get(), "stale");
  ASSERT_NE(p, nullptr);
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto os = store(oc, KvMode::kRpc);
  auto op = sync_wait(os->open_pool("stale"));
  ASSERT_TRUE(op.ok());
  std::string v;
  for (int i = 0; i < 20; ++i) {
    const std::string mine = "v" + std::to_string(i);
    ASSERT_TRUE(sync_wait((*op)->put("key", mine)).ok());  // the cached location is now stale
    ASSERT_TRUE(*sync_wait(p->get("key", &v)));
    EXPECT_EQ(v, mine);
    ASSERT_TRUE(*sync_wait(p->get("key", &v)));  // cached again: one-sided
    EXPECT_EQ(v, mine);
  }
  ASSERT_TRUE(sync_wait((*op)->erase("key")).ok());
  EXPECT_FALSE(*sync_wait(p->get("key", &v)));
  const kv::StoreStats st = s->stats();
  EXPECT_EQ(st.one_sided_hits, 20u);
  EXPECT_EQ(st.one_sided_misses, 21u);
  EXPECT_EQ(p->one_sided(), true);
  EXPECT_EQ(store(client_, KvMode::kAuto)->one_sided(p->node()), GetParam().name == "shm");
  ASSERT_TRUE(sync_wait(os->close_pool(**op)).ok());
}

// ---- concurrency: Porcupine-checked histories ------------------------------------------

struct Written {
  std::mutex mu;
  std::set<std::string> values;
};

// Mixed operations on hot keys (history.h's apply_op: get 40%, put 20%, insert 20%, erase 20%).
Task<void> mixed_worker(Pool* p, int id, int ops, int keys, History* h, Written* written,
                        std::atomic<int>* torn) {
  std::mt19937 rng(static_cast<uint32_t>(test_seed() + 7000 + id));
  KvHistoryTarget target(p);
  for (int i = 0; i < ops; ++i) {
    HistoryOp o;
    o.client = id;
    o.key = "hot" + std::to_string(rng() % keys);
    int dice = static_cast<int>(rng() % 10);
    if (dice == 7) dice = 6;  // no update: another insert
    if (dice >= 4) {
      // Values of different lengths (records of one to six cache lines, read inline or not),
      // so a torn read cannot pass for a whole one.
      o.value = "c" + std::to_string(id) + "n" + std::to_string(i) + std::string(i * 37 % 300, 'x');
      std::lock_guard<std::mutex> lock(written->mu);
      written->values.insert(o.value);
    }
    co_await apply_op(&target, dice, &o);
    if (o.op == "get" && o.ok && !o.unknown) {
      std::lock_guard<std::mutex> lock(written->mu);
      if (!written->values.count(o.value)) torn->fetch_add(1);
    }
    h->add(std::move(o));
  }
}

void run_history(Cluster* cluster, ThreadClient* client, KvMode mode, const std::string& name) {
  auto s = store(client, mode);
  auto p = create(s.get(), name);
  ASSERT_NE(p, nullptr);
  constexpr int kThreads = 3, kCoroutines = 6, kOps = 120, kKeys = 5;
  History history;
  Written written;
  std::atomic<int> torn{0};
  std::atomic<uint64_t> hits{0}, misses{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      ThreadClient* tc = *cluster->thread_client();
      auto ts = store(tc, mode);
      auto tp = sync_wait(ts->open_pool(name));
      ASSERT_TRUE(tp.ok()) << tp.status().to_string();
      for (int k = 0; k < kCoroutines; ++k) {
        ASSERT_TRUE(tc->scheduler()
                        .spawn(mixed_worker(tp->get(), th * kCoroutines + k, kOps, kKeys, &history,
                                            &written, &torn))
                        .ok());
      }
      tc->scheduler().run_until_idle();
      hits += ts->stats().one_sided_hits;
      misses += ts->stats().one_sided_misses;
      EXPECT_TRUE(sync_wait(ts->close_pool(**tp)).ok());
      cluster->release_thread_client();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn.load(), 0) << "a get returned a value nobody wrote";
  int unknown = 0;
  for (const auto& o : history.ops) {
    if (o.unknown)
      std::printf("unknown outcome: %s %s: %s\n", o.op.c_str(), o.key.c_str(), o.error.c_str());
    unknown += o.unknown;
  }
  EXPECT_EQ(unknown, 0);
  ASSERT_EQ(history.ops.size(), size_t{kThreads} * kCoroutines * kOps);
  std::printf("mode %s: one-sided hits %llu, misses %llu\n", kv::kv_mode_name(mode),
              static_cast<unsigned long long>(hits.load()),
              static_cast<unsigned long long>(misses.load()));
  if (mode == KvMode::kOneTwoSided) {
    EXPECT_GT(hits.load() + misses.load(), 0u);
  }
  expect_linearizable(history, name);
}

TEST_P(KvClientTest, ContendedHistoryIsLinearizableOverRpc) {
  run_history(cluster_.get(), client_, KvMode::kRpc, "lin-rpc-" + GetParam().name);
}

TEST_P(KvClientTest, ContendedHistoryIsLinearizableWithOneSidedGets) {
  run_history(cluster_.get(), client_, KvMode::kOneTwoSided, "lin-1s-" + GetParam().name);
}

// ---- failure -----------------------------------------------------------------------------

Task<void> until_error(Pool* p, int id, std::atomic<int>* done_ops, Status* out) {
  std::string v;
  for (int i = 0;; ++i) {
    const std::string key = "k" + std::to_string((id * 31 + i) % 64);
    Status s;
    if (i % 2 == 0) {
      s = co_await p->put(key, "value" + std::to_string(i));
    } else {
      auto r = co_await p->get(key, &v);
      s = r.ok() ? OkStatus() : r.status();
    }
    if (!s.ok()) {
      *out = s;
      co_return;
    }
    done_ops->fetch_add(1);
  }
}

Task<void> kill_after(ThreadClient* c, ServerProcess* server, std::atomic<int>* done_ops, int ops) {
  while (done_ops->load() < ops) co_await c->scheduler().yield();
  server->signal(SIGKILL);
}

TEST_P(KvClientTest, KilledNodeFailsEveryOperationWithPeerFailed) {
  for (KvMode mode : {KvMode::kRpc, KvMode::kOneTwoSided}) {
    // The first round's node dies; the second round gets a fresh one.
    if (mode == KvMode::kOneTwoSided) {
      SetUp();
      if (HasFatalFailure()) return;
    }
    SCOPED_TRACE(kv::kv_mode_name(mode));
    auto s = store(client_, mode);
    auto p = create(s.get(), "doomed");
    ASSERT_NE(p, nullptr);
    constexpr int kCoroutines = 24;
    std::vector<Status> results(kCoroutines);
    std::atomic<int> done{0};
    for (int k = 0; k < kCoroutines; ++k) {
      ASSERT_TRUE(client_->scheduler().spawn(until_error(p.get(), k, &done, &results[k])).ok());
    }
    ASSERT_TRUE(client_->scheduler().spawn(kill_after(client_, server_.get(), &done, 500)).ok());
    client_->scheduler().run_until_idle();  // every loop ends with an error: no hang
    for (const Status& st : results) {
      EXPECT_EQ(st.code(), StatusCode::kPeerFailed) << st.to_string();
    }
    std::string v;
    EXPECT_EQ(sync_wait(p->get("k1", &v)).status().code(), StatusCode::kPeerFailed);
    EXPECT_EQ(sync_wait(p->put("k1", "v")).code(), StatusCode::kPeerFailed);
    EXPECT_EQ(sync_wait(s->list_pools()).status().code(), StatusCode::kPeerFailed);
  }
}

// ---- the farmem tool ------------------------------------------------------------------------

TEST(KvCliTest, CommandsAndTheirExitCodes) {
  ServerOptions o;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  const std::string kv = std::string(FARMEM_CLI_BIN) + " kv ";
  const std::string at = " --servers " + server->address();
  auto run = [&](const std::string& args, std::string* out) {
    out->clear();
    return run_command(kv + args + at + " 2>&1", out);
  };
  std::string out;
  EXPECT_EQ(run("create-pool fruits --capacity 1MiB", &out), 0) << out;
  EXPECT_NE(out.find("created pool 'fruits'"), std::string::npos) << out;
  EXPECT_EQ(run("create-pool fruits --create-only", &out), 4) << out;
  EXPECT_EQ(run("put fruits apple red", &out), 0) << out;
  EXPECT_EQ(run("put fruits apple green --create-only", &out), 4) << out;
  EXPECT_EQ(run("put fruits apple green --dont-overwrite", &out), 0) << out;
  EXPECT_EQ(run("get fruits apple", &out), 0) << out;
  EXPECT_EQ(out, "red\n");
  EXPECT_EQ(run("get fruits pear", &out), 3) << out;
  EXPECT_NE(out.find("no key 'pear' in pool 'fruits'"), std::string::npos) << out;
  EXPECT_EQ(run("get vegetables leek", &out), 3) << out;
  EXPECT_NE(out.find("no pool 'vegetables'"), std::string::npos) << out;
  EXPECT_EQ(run("put fruits banana yellow", &out), 0) << out;
  EXPECT_EQ(run("count fruits", &out), 0) << out;
  EXPECT_EQ(out, "2\n");
  EXPECT_EQ(run("find fruits prefix:b", &out), 2) << out;  // no secondary index
  EXPECT_EQ(run("configure fruits AddIndex::VolatileTree", &out), 0) << out;
  EXPECT_EQ(run("find fruits prefix:b", &out), 0) << out;
  EXPECT_EQ(out, "1 banana\n");
  EXPECT_EQ(run("configure fruits AddIndex::Nonsense", &out), 2) << out;
  EXPECT_EQ(run("configure vegetables RemoveIndex", &out), 3) << out;
  EXPECT_NE(out.find("no pool 'vegetables'"), std::string::npos) << out;
  EXPECT_EQ(run("configure fruits RemoveIndex", &out), 0) << out;
  EXPECT_EQ(run("find fruits prefix:b", &out), 2) << out;
  EXPECT_EQ(run("erase fruits apple", &out), 0) << out;
  EXPECT_EQ(run("erase fruits apple", &out), 3) << out;
  EXPECT_EQ(run("pools", &out), 0) << out;
  EXPECT_NE(out.find("fruits"), std::string::npos) << out;
  EXPECT_EQ(run("stats fruits", &out), 0) << out;
  EXPECT_NE(out.find("keys 1"), std::string::npos) << out;
  EXPECT_EQ(run("invoke fruits banana count", &out), 1) << out;  // no ADO plugins configured
  EXPECT_EQ(run("delete-pool fruits", &out), 0) << out;
  EXPECT_EQ(run("delete-pool fruits", &out), 3) << out;
  EXPECT_EQ(run_command(kv + "pools 2>&1", &out), 2) << out;  // no cluster given
  EXPECT_NE(out.find("--servers"), std::string::npos) << out;
}

TEST(KvCliTest, BenchYcsbRunsOnAPoolInEachMode) {
  const std::string json = "/tmp/farmem-kv-ycsb-" + std::to_string(getpid()) + ".json";
  struct Run {
    const char* workload;
    const char* flags;
  };
  for (const Run& r : {Run{"c", "--kv-mode one-two-sided"}, Run{"a", "--kv-mode rpc"},
                       Run{"f", "--coalesce off"}}) {
    std::string out;
    int rc = run_command(std::string(FARMEM_CLI_BIN) +
                             " bench ycsb --structure kv --records 2000 --duration 0.3 "
                             "--coroutines 16 --workload " +
                             r.workload + " " + r.flags + " --out " + json + " 2>&1",
                         &out);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("structure=kv"), std::string::npos) << out;
    EXPECT_NE(out.find("keys/msg="), std::string::npos) << out;
  }
  std::ifstream in(json);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"structure", "workload", "ops_per_s", "p50_us", "kv_mode",
                            "one_sided_hit_percent", "keys_per_message", "coalesce", "ops"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_GT(j["ops_per_s"].get<double>(), 0.0);
    if (j["kv_mode"] == "one-two-sided") {
      EXPECT_GT(j["one_sided_hit_percent"].get<double>(), 50.0);  // 2000 keys, warm cache
    }
    if (j["coalesce"] == false) {
      EXPECT_DOUBLE_EQ(j["keys_per_message"].get<double>(), 1.0);
    }
    ++lines;
  }
  EXPECT_EQ(lines, 3);
  std::remove(json.c_str());
  std::string out;
  EXPECT_EQ(run_command(std::string(FARMEM_CLI_BIN) +
                            " bench ycsb --structure kv --workload e --records 10 2>&1",
                        &out),
            2);
}

INSTANTIATE_TEST_SUITE_P(Transports, KvClientTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
