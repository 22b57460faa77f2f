// Named far containers on a durable memory node: a far Array and a far Vector written through a
// small local cache (evacuations write chunks back between syncs), synced now and then, with
// kill -9 of the node (a simulated power loss) at a seeded moment, a restart on the same
// directory and a new process's cache opening them by name. Every element holds what the last
// acknowledged sync() made it, or a value written after it (a write-back may land before the
// next sync; never anything else); the vector's size is the last acknowledged one, or the one of
// a sync in flight, and every element below it is there. Over shared memory and TCP.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "far_fixture.h"
#include "farmem/far/array.h"
#include "farmem/far/object_manager.h"
#include "farmem/far/thread_cache.h"
#include "farmem/far/vector.h"
#include "harness.h"
#include "test_knob.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using far::Array;
using far::Vector;
using runtime::Task;

constexpr uint64_t kArray = 40'000;  // 8-byte elements: 79 chunks of 4 KiB
uint64_t pushed_value(uint64_t i) { return i * 0x9E3779B97F4A7C15ull + 7; }

// What the test knows: per array element its value as of the last acknowledged sync and the
// values written since; the vector's acknowledged size and the size of a sync in flight.
struct Model {
  std::vector<uint64_t> synced = std::vector<uint64_t>(kArray, 0);
  std::vector<std::vector<uint64_t>> since = std::vector<std::vector<uint64_t>>(kArray);
  uint64_t vector_acked = 0;
  uint64_t vector_syncing = 0;  // 0: none in flight
};

// A process's far-memory side: its object manager, cache and the two named containers.
struct Life {
  std::unique_ptr<far::ObjectManager> manager;
  std::unique_ptr<far::ThreadCache> cache;
  std::unique_ptr<Array<uint64_t>> array;
  std::unique_ptr<Vector<uint64_t>> vec;
};

class FarDurableTest : public ::testing::TestWithParam<Transport> {
 protected:
  // Starts (or restarts) the node and opens the containers through a 256 KiB cache.
  void start(DurableNode& node, Life* life) {
    std::string why;
    ASSERT_TRUE(node.start(&why, "power", "1MiB")) << why;
    far::ObjectManagerOptions mo;
    mo.local_bytes = 256 << 10;
    mo.segment_bytes = 16 << 10;
    auto m = far::ObjectManager::create(mo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    life->manager = std::move(*m);
    life->cache = std::make_unique<far::ThreadCache>(life->manager.get(), &node.client());
    auto a = node.client().run(Array<uint64_t>::open_named(life->cache.get(), "array", kArray));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    life->array = std::make_unique<Array<uint64_t>>(std::move(*a));
    auto v = node.client().run(Vector<uint64_t>::open_named(life->cache.get(), "vector"));
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    life->vec = std::make_unique<Vector<uint64_t>>(std::move(*v));
  }
  static void end(Life* life) {
    life->vec.reset();
    life->array.reset();
    life->cache.reset();
    life->manager.reset();
  }
};

// Rounds of {array writes, vector pushes, sync} until an operation fails (the node died).
Task<Status> write_rounds(Life& life, Model& m, uint64_t seed, std::atomic<uint64_t>& ops) {
  std::mt19937_64 rng(seed);
  for (;;) {
    for (int k = 0; k < 300; ++k) {
      const uint64_t i = rng() % kArray, v = rng() | 1;
      m.since[i].push_back(v);
      FARMEM_CO_TRY(co_await life.array->write(i, v));
      ops.fetch_add(1);
    }
    for (int k = 0; k < 200; ++k) {
      FARMEM_CO_TRY(co_await life.vec->push_back(pushed_value(life.vec->size())));
      ops.fetch_add(1);
    }
    m.vector_syncing = life.vec->size();
    FARMEM_CO_TRY(co_await life.array->sync());
    FARMEM_CO_TRY(co_await life.vec->sync());
    for (uint64_t i = 0; i < kArray; ++i) {
      if (!m.since[i].empty()) m.synced[i] = m.since[i].back();
      m.since[i].clear();
    }
    m.vector_acked = std::exchange(m.vector_syncing, 0);
  }
}

// The reopened containers against the model; then the model is what they hold.
Task<Status> check(Life& life, Model& m, uint64_t seed, int cycle) {
  const uint64_t n = life.vec->size();
  if (n != m.vector_acked && n != m.vector_syncing) {
    co_return Internal(fmt::format("seed {} cycle {}: vector size {}, acknowledged {}, syncing {}",
                                   seed, cycle, n, m.vector_acked, m.vector_syncing));
  }
  for (uint64_t i = 0; i < n; ++i) {
    auto v = co_await life.vec->read(i);
    FARMEM_CO_TRY(v);
    if (*v != pushed_value(i)) {
      co_return Internal(fmt::format("seed {} cycle {}: vector[{}] is {:#x}", seed, cycle, i, *v));
    }
  }
  for (uint64_t i = 0; i < kArray; ++i) {
    auto v = co_await life.array->read(i);
    FARMEM_CO_TRY(v);
    const auto& since = m.since[i];
    if (*v != m.synced[i] && std::find(since.begin(), since.end(), *v) == since.end()) {
      co_return Internal(
          fmt::format("seed {} cycle {}: array[{}] is {:#x}, synced {:#x}, {} "
                      "written since",
                      seed, cycle, i, *v, m.synced[i], since.size()));
    }
    m.synced[i] = *v;
    m.since[i].clear();
  }
  m.vector_acked = n;
  m.vector_syncing = 0;
  co_return OkStatus();
}

// FARMEM_FAR_KILL_CYCLES cycles (default 2) of {writes and syncs, kill -9 of the node at a seeded
// moment, restart, reopen by name, check}.
TEST_P(FarDurableTest, NamedContainersKeepWhatWasSyncedAcrossKills) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const int cycles = static_cast<int>(test_knob("FARMEM_FAR_KILL_CYCLES", 2));
  DurableNode node(GetParam().tls, 256ull << 20);
  node.extra_args = {"--simulate-power-loss"};
  Model m;
  Life life;
  ASSERT_NO_FATAL_FAILURE(start(node, &life));
  for (int cycle = 0; cycle < cycles; ++cycle) {
    std::atomic<uint64_t> ops{0};
    std::thread killer = node.kill_when(ops, 200 + rng() % 3000);
    const Status ended = node.client().run(write_rounds(life, m, seed + cycle, ops));
    killer.join();
    EXPECT_FALSE(ended.ok()) << "the writes end only when the node dies";
    end(&life);
    node.kill();
    ASSERT_NO_FATAL_FAILURE(start(node, &life));
    const Status checked = node.client().run(check(life, m, seed, cycle));
    ASSERT_TRUE(checked.ok()) << checked.to_string();
    std::printf("seed %llu cycle %d: %llu operations before the kill, vector of %llu\n",
                static_cast<unsigned long long>(seed), cycle,
                static_cast<unsigned long long>(ops.load()),
                static_cast<unsigned long long>(m.vector_acked));
  }
  // A destroyed named container is gone: a second destroy finds nothing.
  end(&life);
  ASSERT_TRUE(node.client().run(far::NamedStore::destroy(&node.client(), "vector")).ok());
  EXPECT_EQ(node.client().run(far::NamedStore::destroy(&node.client(), "vector")).code(),
            StatusCode::kNotFound);
}

// On a volatile node too, a named container outlives the process that made it (its memory is
// its node objects', not the session's): a new process's cache opens it with what the last sync
// recorded, and refuses another element size or array length.
class NamedContainerTest : public FarTest {};

TEST_P(NamedContainerTest, OutlivesItsProcessAndChecksItsShape) {
  ASSERT_NO_FATAL_FAILURE(start(128 << 10, 16 << 10));
  {
    auto v = c_->run(Vector<uint64_t>::open_named(cache_.get(), "kept"));
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    for (uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(c_->run(v->push_back(pushed_value(i))).ok());
    ASSERT_TRUE(c_->run(v->sync()).ok());
    for (uint64_t i = 5000; i < 5100; ++i) ASSERT_TRUE(c_->run(v->push_back(i)).ok());  // unsynced
    auto a = c_->run(Array<uint64_t>::open_named(cache_.get(), "grid", 3000));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(c_->run(a->write(2999, 42)).ok());
    ASSERT_TRUE(c_->run(a->sync()).ok());
  }
  // A new process: new sessions, a new cache.
  cache_.reset();
  cluster_.reset();
  auto c = client::Cluster::connect(config_for({server_.get()}, GetParam().tls));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  cluster_ = std::move(*c);
  c_ = *cluster_->thread_client();
  cache_ = std::make_unique<far::ThreadCache>(manager_.get(), c_);
  auto v = c_->run(Vector<uint64_t>::open_named(cache_.get(), "kept"));
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  ASSERT_EQ(v->size(), 5000u) << "the size of the last sync";
  for (uint64_t i = 0; i < 5000; i += 7) EXPECT_EQ(*c_->run(v->read(i)), pushed_value(i)) << i;
  auto a = c_->run(Array<uint64_t>::open_named(cache_.get(), "grid", 3000));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(*c_->run(a->read(2999)), 42u);
  EXPECT_EQ(*c_->run(a->read(0)), 0u);
  EXPECT_EQ(c_->run(Array<uint64_t>::open_named(cache_.get(), "grid", 3001)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c_->run(Vector<uint32_t>::open_named(cache_.get(), "kept")).status().code(),
            StatusCode::kInvalidArgument);
  auto fresh = c_->run(Vector<uint64_t>::open_named(cache_.get(), "other"));
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  EXPECT_EQ(fresh->size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Transports, FarDurableTest, ::testing::ValuesIn(all_transports()),
                         transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, NamedContainerTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
