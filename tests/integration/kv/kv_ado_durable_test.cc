// Active Data Objects on a durable memory node: an invocation's changes (tx_add, the undo log in
// the pool's memory) are whole or absent after the node dies in the middle of it, including when
// checkpoints copied the half-changed values into the image first, and the counter plugin's
// transfers keep every acknowledged one and the pool's total across kill -9 of the node.
// Both kills are simulated power losses (--simulate-power-loss). The node keeps its default
// transports and the client uses shared memory too: an ADO needs shared memory in its node's UCX
// context (docs/formats/ado.md), and DurableNode gives node and client one transport (the
// volatile ADO tests, kv_ado_test.cc, run clients over TCP as well). Waits are hang guards.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "farmem/kv/ado_plugin.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "test_knob.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using kv::Pool;
using kv::Store;
using runtime::Task;
namespace w = kv::wire;

constexpr const char* kCounter = "libfarmem_ado_counter.so";
constexpr const char* kTesting = "libfarmem_ado_testing.so";

class KvAdoDurableTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    node_ = std::make_unique<DurableNode>(GetParam().tls, 256ull << 20);
    config_ = node_->dir() + "/node.toml";
    std::ofstream(config_) << fmt::format(
        "[memnode]\n[kv]\nado_plugin_dir = \"{}\"\nado_binary = \"{}\"\nado_timeout_ms = 20000\n",
        FARMEM_ADO_PLUGIN_DIR, FARMEM_ADO_BIN);
    node_->extra_args = {"--config", config_, "--simulate-power-loss"};
  }
  void TearDown() override {
    pool_.reset();
    store_.reset();
    node_.reset();
  }
  // (Re)starts the node; checkpoints every 64 KiB of log.
  void start() {
    std::string why;
    ASSERT_TRUE(node_->start(&why, "power", "64KiB")) << why;
    auto s = Store::open(&node_->client(), kv::StoreOptions{});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    store_ = std::move(*s);
  }
  void kill() {
    pool_.reset();
    store_.reset();
    node_->kill();
  }
  template <typename T>
  T run(Task<T> t) {
    return node_->client().run(std::move(t));
  }
  void open_pool(const std::string& name, const std::string& plugins) {
    auto p = run(store_->create_pool(name, 32ull << 20, 1000));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    pool_ = std::move(*p);
    if (!plugins.empty()) {
      ASSERT_TRUE(run(pool_->configure("AdoPlugins::" + plugins)).ok());
    }
  }
  std::string get(const std::string& key) {
    std::string v;
    auto got = run(pool_->get(key, &v));
    EXPECT_TRUE(got.ok()) << got.status().to_string();
    return got.ok() && *got ? v : "<absent>";
  }
  uint64_t log_bytes() {
    auto s = run(node_->client().stats(0));
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? s->log_bytes : 0;
  }

  std::unique_ptr<DurableNode> node_;
  std::string config_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Pool> pool_;
};

// The plugin changes its target and a key it opened (tx_add first), then hangs; other puts run
// the log past two checkpoints, which copy the half-changed values into the image; the node
// loses power. After the restart both values are the old ones; then a whole invocation sticks.
TEST_P(KvAdoDurableTest, ANodeCrashInATransactionLeavesTheOldValues) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(open_pool("tx", kTesting));
  const std::string hung = node_->dir() + "/hung";
  ASSERT_TRUE(run(pool_->configure("AdoParam::hang_file=" + hung)).ok());
  ASSERT_TRUE(run(pool_->put("t", "old-target-value")).ok());
  ASSERT_TRUE(run(pool_->put("o", "old-other-value")).ok());
  auto r = run(pool_->invoke_ado("t", "tx-write:hang:o:NEW", w::kAdoAsync));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(hung) && std::chrono::steady_clock::now() < guard) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(std::filesystem::exists(hung)) << "the plugin did not write and hang";
  int checkpoints = 0;
  uint64_t last = log_bytes();
  for (int i = 0; i < 20000 && checkpoints < 2; ++i) {
    ASSERT_TRUE(run(pool_->put(fmt::format("filler-{}", i), std::string(200, 'f'))).ok());
    if (i % 16 != 15) continue;
    const uint64_t now = log_bytes();
    checkpoints += now < last ? 1 : 0;  // the live log switched
    last = now;
  }
  ASSERT_EQ(checkpoints, 2);
  kill();
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(open_pool("tx", ""));
  EXPECT_EQ(get("t"), "old-target-value");
  EXPECT_EQ(get("o"), "old-other-value");
  r = run(pool_->invoke_ado("t", "tx-write:commit:o:NEW"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  kill();
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(open_pool("tx", ""));
  EXPECT_EQ(get("t"), "NEW-target-value");
  EXPECT_EQ(get("o"), "NEW-other-value");
}

// One transfer of the counter plugin: `amount` from counter `from` to counter `to`.
struct Transfer {
  int from = 0, to = 0;
  int64_t amount = 0;
};

// Whether `values` are `acked` plus some subset of the transfers in flight (each whole or absent).
bool explained(const std::vector<int64_t>& values, const std::vector<int64_t>& acked,
               const std::vector<Transfer>& in_flight) {
  for (uint32_t subset = 0; subset < (1u << in_flight.size()); ++subset) {
    std::vector<int64_t> v = acked;
    for (size_t i = 0; i < in_flight.size(); ++i) {
      if ((subset >> i & 1) == 0) continue;
      v[in_flight[i].from] -= in_flight[i].amount;
      v[in_flight[i].to] += in_flight[i].amount;
    }
    if (v == values) return true;
  }
  return false;
}

// FARMEM_ADO_KILL_CYCLES cycles (default 2) of {8 coroutines of counter transfers, kill -9 of the
// node at a seeded moment, restart}: every counter holds what the acknowledged transfers made it,
// with each transfer in flight whole or absent.
TEST_P(KvAdoDurableTest, CounterTransfersSurviveKillsOfTheNode) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const int cycles = static_cast<int>(test_knob("FARMEM_ADO_KILL_CYCLES", 2));
  constexpr int kCounters = 6, kWorkers = 8;
  constexpr int64_t kStart = 1'000'000;
  auto name = [](int i) { return fmt::format("c{}", i); };
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(open_pool("bank", kCounter));
  for (int i = 0; i < kCounters; ++i) {
    auto r = run(pool_->invoke_ado(name(i), fmt::format("add:{}", kStart),
                                   w::kAdoCreateOnDemand | w::kAdoZeroNewValue, 8));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  std::vector<int64_t> acked(kCounters, kStart);
  for (int cycle = 0; cycle < cycles; ++cycle) {
    std::vector<std::optional<Transfer>> running(kWorkers);
    std::atomic<uint64_t> done{0};
    std::thread killer = node_->kill_when(done, 50 + rng() % 400);
    auto worker = [&](int wk) -> Task<Status> {
      std::mt19937_64 r(seed + 1000 * cycle + wk);
      for (;;) {
        Transfer t;
        t.from = static_cast<int>(r() % kCounters);
        t.to = (t.from + 1 + static_cast<int>(r() % (kCounters - 1))) % kCounters;
        t.amount = static_cast<int64_t>(r() % 100);
        running[wk] = t;
        auto res = co_await pool_->invoke_ado(name(t.from),
                                              fmt::format("transfer:{}:{}", t.amount, name(t.to)));
        if (!res.ok()) co_return res.status();
        if (res->plugin_status != FARMEM_ADO_OK) co_return Internal("transfer refused");
        acked[t.from] -= t.amount;
        acked[t.to] += t.amount;
        running[wk].reset();
        done.fetch_add(1);
      }
    };
    std::vector<Task<Status>> tasks;
    for (int wk = 0; wk < kWorkers; ++wk) tasks.push_back(worker(wk));
    const std::vector<Status> ended = run(runtime::when_all(std::move(tasks)));
    killer.join();
    for (const Status& e : ended) EXPECT_NE(e.code(), StatusCode::kInternal) << e.to_string();
    kill();
    ASSERT_NO_FATAL_FAILURE(start());
    ASSERT_NO_FATAL_FAILURE(open_pool("bank", ""));
    std::vector<int64_t> values(kCounters);
    for (int i = 0; i < kCounters; ++i) {
      const std::string v = get(name(i));
      ASSERT_EQ(v.size(), sizeof(int64_t)) << "seed " << seed << " counter " << i;
      std::memcpy(&values[i], v.data(), sizeof(int64_t));
    }
    std::vector<Transfer> in_flight;
    for (const auto& t : running) {
      if (t) in_flight.push_back(*t);
    }
    EXPECT_TRUE(explained(values, acked, in_flight))
        << "seed " << seed << " cycle " << cycle << ": " << done.load() << " acknowledged, "
        << in_flight.size() << " in flight";
    acked = values;
    std::printf("seed %llu cycle %d: %llu transfers acknowledged, %zu in flight at the kill\n",
                static_cast<unsigned long long>(seed), cycle,
                static_cast<unsigned long long>(done.load()), in_flight.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, KvAdoDurableTest,
                         ::testing::Values(Transport{"shm", "sm,tcp"}), transport_name);

}  // namespace
}  // namespace farmem::testing
