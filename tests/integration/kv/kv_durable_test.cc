// The key-value store on a durable memory node: kill -9 of the node at a seeded moment while
// coroutines put, overwrite and erase (now and then a value of 300 KB, a block of its own), a
// restart on the same directory, and then every acknowledged write is there, no key shows a
// value nobody wrote, the secondary index and the pool's settings came back, a temporary pool
// is gone, and the pool takes new writes. Two shards, so pools recover on either worker.
// Every wait is a hang guard, never a measurement.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_history.h"
#include "durable_node.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/record.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "kv_history_target.h"
#include "power_loss_sweep.h"
#include "test_knob.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using kv::Pool;
using kv::Store;
using runtime::Task;
namespace w = kv::wire;

class KvDurableTest : public ::testing::TestWithParam<Transport> {};

std::string key_of(uint64_t k) { return fmt::format("key-{:05}", k); }
// Version 0 is "erased"; values of version v have a length that depends on (k, v).
std::string value_of(uint64_t k, uint64_t version) {
  // One in 499 is past the largest size class of a 384 MiB pool (256 KiB): a heap block of its own.
  const size_t bytes = (k * 7 + version * 13) % 499 == 0 ? 300'000 + k % 1000 : (k + version) % 200;
  std::string v = fmt::format("v{}-of-{}:", version, k);
  v.resize(std::max(v.size(), bytes), static_cast<char>('a' + (k + version) % 26));
  return v;
}

std::unique_ptr<Store> open_store(client::ThreadClient& c) {
  auto s = Store::open(&c, kv::StoreOptions{});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

// What the writers know of every key: the last acknowledged version (0: erased, -1: never
// written) and the last one written or in flight; each writer's next fresh key.
constexpr uint64_t kWriters = 16;
constexpr uint64_t kKeys = kWriters * 200'000;
struct KeyStates {
  std::vector<int64_t> acked = std::vector<int64_t>(kKeys, -1);
  std::vector<int64_t> tried = std::vector<int64_t>(kKeys, -1);
  std::vector<uint64_t> next = std::vector<uint64_t>(kWriters, 0);
};

// 16 writers each own keys w, w + 16, ...: they put new ones and now and then overwrite or
// erase one of theirs, until the node dies (a watcher kills it after kill_after writes).
void write_until_killed(DurableNode& node, Pool& pool, KeyStates& ks, uint64_t seed,
                        uint64_t kill_after) {
  std::atomic<uint64_t> done{0};
  std::thread killer = node.kill_when(done, kill_after);
  auto writer = [&](uint64_t wr) -> Task<Status> {
    std::mt19937_64 r(seed + wr);
    for (uint64_t& n = ks.next[wr]; n < kKeys / kWriters; ++n) {
      uint64_t k = wr + kWriters * n;
      int64_t version = 1;
      if (n > 0 && r() % 3 == 0) {
        k = wr + kWriters * (r() % n);
        version = r() % 4 == 0 ? 0 : std::max<int64_t>(ks.acked[k], 0) + 1;
      }
      ks.tried[k] = version;
      if (version == 0) {
        const Status s = co_await pool.erase(key_of(k));
        if (!s.ok() && s.code() != StatusCode::kNotFound) co_return s;
      } else {
        FARMEM_CO_TRY(co_await pool.put(key_of(k), value_of(k, static_cast<uint64_t>(version))));
      }
      ks.acked[k] = version;
      done.fetch_add(1);
    }
    co_return OkStatus();
  };
  std::vector<Task<Status>> tasks;
  for (uint64_t wr = 0; wr < kWriters; ++wr) tasks.push_back(writer(wr));
  const std::vector<Status> ended = node.client().run(runtime::when_all(std::move(tasks)));
  killer.join();
  for (const Status& e : ended) EXPECT_FALSE(e.ok());  // they stop only when the node dies
}

// Every key holds its last acknowledged version or the one in flight; then that is what the
// writers know. Returns the keys present; *live_bytes: the memory their records need.
uint64_t check_keys(client::ThreadClient& c, Pool& pool, KeyStates& ks, uint64_t seed,
                    uint64_t* live_bytes) {
  uint64_t present = 0;
  *live_bytes = 0;
  for (uint64_t k = 0; k < kKeys; ++k) {
    if (ks.tried[k] < 0) continue;
    std::string v;
    auto got = c.run(pool.get(key_of(k), &v));
    EXPECT_TRUE(got.ok()) << "seed " << seed << " key " << k << ": " << got.status().to_string();
    if (!got.ok()) return present;
    const auto holds = [&](int64_t version) {
      return version == 0 ? !*got : *got && v == value_of(k, static_cast<uint64_t>(version));
    };
    const bool as_acked = holds(ks.acked[k]) || (ks.acked[k] < 0 && !*got);
    EXPECT_TRUE(as_acked || holds(ks.tried[k]))
        << "seed " << seed << " key " << k << " acked " << ks.acked[k] << " tried " << ks.tried[k]
        << (*got ? " holds '" + v.substr(0, 40) + "'" : " is absent");
    if (!as_acked) ks.acked[k] = ks.tried[k];  // the write in flight took effect
    ks.tried[k] = ks.acked[k];
    if (*got) {
      ++present;
      *live_bytes += kv::record_alloc_bytes(key_of(k).size(), v.size());
    }
  }
  return present;
}

// FARMEM_KV_KILL_CYCLES cycles (default 2) of {writes, kill -9 of the node at a seeded moment,
// restart, check}: the 50-cycle run of the persistence work sets it to 50.
TEST_P(KvDurableTest, AcknowledgedWritesSurviveKillsDuringPutsAndErases) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const int cycles = static_cast<int>(test_knob("FARMEM_KV_KILL_CYCLES", 2));
  DurableNode node(GetParam().tls, 512ull << 20);
  node.extra_args = {"--workers", "2"};
  std::string why;
  ASSERT_TRUE(node.start(&why, "power", "1MiB")) << why;
  auto store = open_store(node.client());
  ASSERT_NE(store, nullptr);
  auto made = node.client().run(store->create_pool("durable", 384ull << 20, 0, w::kPoolCreateOnly));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  std::unique_ptr<Pool> pool = std::move(*made);
  ASSERT_TRUE(node.client().run(pool->configure("AddIndex::VolatileTree")).ok());
  ASSERT_TRUE(node.client().run(pool->configure("AdoParam::answer=42")).ok());
  KeyStates ks;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    auto temp = node.client().run(store->create_pool("scratch", 1 << 20, 0, w::kPoolTemporary));
    ASSERT_TRUE(temp.ok()) << temp.status().to_string();
    ASSERT_TRUE(node.client().run((*temp)->put("k", "v")).ok());
    const uint64_t kill_after = 1000 + rng() % 6000;
    write_until_killed(node, *pool, ks, seed + cycle * kWriters, kill_after);
    pool.reset();
    temp->reset();
    store.reset();
    node.kill();

    ASSERT_TRUE(node.start(&why, "power", "1MiB")) << why;
    client::ThreadClient& c = node.client();
    store = open_store(c);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(c.run(store->open_pool("scratch")).status().code(), StatusCode::kNotFound);
    auto opened = c.run(store->open_pool("durable"));
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    pool = std::move(*opened);
    uint64_t live = 0;
    const uint64_t present = check_keys(c, *pool, ks, seed, &live);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed << " cycle " << cycle;
    auto info = c.run(pool->info());
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->count, present);
    EXPECT_NE(info->flags & w::kPoolHasIndex, 0u) << "the secondary index came back";
    // Memory comes back: the pool holds at most twice what its records and index need plus a
    // few chunks, cycle after cycle (a leak would grow it with every kill).
    EXPECT_LE(info->used_bytes, 2 * (live + info->index_slots * 32) + (8ull << 20))
        << "cycle " << cycle;
    std::printf(
        "[ CYCLE    ] %d: killed after %lu writes; %lu keys present, their records %lu bytes, "
        "the pool holds %lu\n",
        cycle, kill_after, present, live, info->used_bytes);
  }
  client::ThreadClient& c = node.client();
  auto first = c.run(pool->find("prefix:key-", 0));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  // New writes go on, and the pool holds exactly them.
  for (uint64_t k = 0; k < 300; ++k) {
    ASSERT_TRUE(c.run(pool->put(key_of(k), value_of(k, 100))).ok()) << "seed " << seed;
  }
  for (uint64_t k = 0; k < 300; ++k) {
    std::string v;
    ASSERT_TRUE(*c.run(pool->get(key_of(k), &v)));
    ASSERT_EQ(v, value_of(k, 100));
  }
}

// A pool with the store that holds it, as durable_history.h opens it in each life.
struct DurablePoolHandle : KvHistoryTarget {
  DurablePoolHandle(std::unique_ptr<Store> s, std::unique_ptr<Pool> p)
      : KvHistoryTarget(p.get()), store(std::move(s)), pool(std::move(p)) {}
  std::unique_ptr<Store> store;
  std::unique_ptr<Pool> pool;
};

Task<Result<std::unique_ptr<DurablePoolHandle>>> open_history_pool(client::ThreadClient* c) {
  FARMEM_CO_ASSIGN_OR_RETURN(auto store, Store::open(c, kv::StoreOptions{}));
  auto pool = co_await store->create_pool("history", 16 << 20, 0, 0);
  if (!pool.ok()) co_return pool.status();
  // Memory comes back: eight small keys fit in one chunk of the heap, life after life.
  auto info = co_await (*pool)->info();
  if (!info.ok()) co_return info.status();
  EXPECT_LE(info->used_bytes, 1u << 20) << "the pool grows with every restart";
  co_return std::make_unique<DurablePoolHandle>(std::move(store), std::move(*pool));
}

// FARMEM_DURABLE_HISTORY_KILLS lives that end in a kill -9 (default 2; the 50-cycle run of the
// persistence work sets 50): the history of puts, inserts, erases and gets (one-sided where
// the transport allows) across them is linearizable (durable_history.h).
TEST_P(KvDurableTest, HistoriesAcrossKillsAreLinearizable) {
  DurableNode node(GetParam().tls, 128ull << 20);
  node.extra_args = {"--workers", "2"};
  HistoryAcrossKills<DurablePoolHandle> run;
  run.open = open_history_pool;
  run.has_update = false;
  history_across_kills(node, run, test_seed(), "durable-kv-" + GetParam().name);
}

// Power loss at every sync boundary of FARMEM_POWER_SWEEP_OPS operations (default 160; the
// persistence work's long run sets 10000): each recovery holds what was acknowledged
// (power_loss_sweep.h).
TEST_P(KvDurableTest, PowerLossAtEverySyncBoundaryKeepsAcknowledgedWrites) {
  DurableNode node(GetParam().tls, 64ull << 20);
  node.extra_args = {"--workers", "2"};
  HistoryAcrossKills<DurablePoolHandle> run;
  run.open = open_history_pool;
  run.has_update = false;
  power_loss_sweep(node, run, static_cast<int>(test_knob("FARMEM_POWER_SWEEP_OPS", 160)),
                   test_seed(), "sweep-kv-" + GetParam().name);
}

TEST_P(KvDurableTest, AProcessNodeKeepsPoolsAcrossACleanRestart) {
  DurableNode node(GetParam().tls, 64ull << 20);
  std::string why;
  ASSERT_TRUE(node.start(&why, "process")) << why;
  {
    auto store = open_store(node.client());
    ASSERT_NE(store, nullptr);
    for (int p = 0; p < 5; ++p) {
      auto pool = node.client().run(store->create_pool(fmt::format("p{}", p), 4 << 20, 0, 0));
      ASSERT_TRUE(pool.ok()) << pool.status().to_string();
      for (uint64_t k = 0; k < 200; ++k) {
        ASSERT_TRUE(node.client().run((*pool)->put(key_of(k), value_of(k, p + 1))).ok());
      }
    }
  }
  node.kill();
  ASSERT_TRUE(node.start(&why, "process")) << why;
  auto store = open_store(node.client());
  ASSERT_NE(store, nullptr);
  auto listed = node.client().run(store->list_pools());
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 5u);
  for (int p = 0; p < 5; ++p) {
    auto pool = node.client().run(store->open_pool(fmt::format("p{}", p)));
    ASSERT_TRUE(pool.ok()) << pool.status().to_string();
    EXPECT_EQ(*node.client().run((*pool)->count()), 200u);
    for (uint64_t k = 0; k < 200; k += 17) {
      std::string v;
      ASSERT_TRUE(*node.client().run((*pool)->get(key_of(k), &v)));
      EXPECT_EQ(v, value_of(k, p + 1));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, KvDurableTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
