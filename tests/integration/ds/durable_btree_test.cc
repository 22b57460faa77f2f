// The B+tree on a durable memory node: kill -9 of the node at a seeded moment during inserts,
// updates (some out of place, in blocks of their own) and page splits, a restart on the same
// directory, and then every acknowledged write is there, no key shows a value nobody wrote, and
// the tree takes new writes. Every wait is a hang guard, never a measurement.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using ds::btree::BTree;
using ds::btree::BTreeOptions;
using runtime::Task;

class DurableBTreeTest : public ::testing::TestWithParam<Transport> {};

std::string key_of(uint64_t k) { return fmt::format("key-{:06}", k); }
// Every fifth version is longer than the tree's inline values: a block of its own.
std::string value_of(uint64_t k, uint64_t version) {
  std::string v = fmt::format("v{}-of-{}", version, k);
  if (version % 5 == 0) v.resize(200, 'x');
  return v;
}

TEST_P(DurableBTreeTest, AcknowledgedWritesSurviveAKillDuringInsertsAndSplits) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  DurableNode node(GetParam().tls, 128ull << 20);
  std::string why;
  ASSERT_TRUE(node.start(&why, "power", "256KiB")) << why;
  BTreeOptions o;
  o.page_bytes = ds::btree::kMinPageBytes;  // small pages: the run splits many times
  auto created = node.client().run(BTree::create(&node.client(), "durable", o));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::unique_ptr<BTree> table = std::move(*created);

  // 8 writers insert their own keys and now and then update one they inserted; a watcher kills
  // the node once kill_after writes were acknowledged.
  constexpr uint64_t kWriters = 8;
  const uint64_t kill_after = 300 + rng() % 1500;
  std::vector<uint64_t> acked(kWriters * 100'000, 0);  // key -> last acknowledged version
  std::vector<uint64_t> tried(acked.size(), 0);        // key -> last version written or in flight
  std::atomic<uint64_t> done{0};
  std::thread killer = node.kill_when(done, kill_after);
  auto writer = [&](uint64_t w) -> Task<Status> {
    std::mt19937_64 r(seed + w);
    for (uint64_t n = 0;; ++n) {
      const uint64_t k = w + kWriters * n;
      tried[k] = 1;
      FARMEM_CO_TRY(co_await table->insert(key_of(k), value_of(k, 1)));
      acked[k] = 1;
      done.fetch_add(1);
      if (n > 0 && r() % 4 == 0) {
        const uint64_t old = w + kWriters * (r() % n);
        const uint64_t version = acked[old] + 1;
        tried[old] = version;
        FARMEM_CO_TRY(co_await table->update(key_of(old), value_of(old, version)));
        acked[old] = version;
        done.fetch_add(1);
      }
    }
  };
  std::vector<Task<Status>> tasks;
  for (uint64_t w = 0; w < kWriters; ++w) tasks.push_back(writer(w));
  const std::vector<Status> ended = node.client().run(runtime::when_all(std::move(tasks)));
  killer.join();
  for (const Status& e : ended) EXPECT_FALSE(e.ok());  // they stop only when the node dies
  table.reset();
  node.kill();

  ASSERT_TRUE(node.start(&why, "power", "256KiB")) << why;
  client::ThreadClient& c = node.client();
  auto opened = c.run(BTree::open(&c, "durable"));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  table = std::move(*opened);
  uint64_t present = 0;
  for (uint64_t k = 0; k < acked.size() - 500; ++k) {
    if (tried[k] == 0) continue;
    std::string v;
    auto got = c.run(table->get(key_of(k), &v));
    ASSERT_TRUE(got.ok()) << "seed " << seed << " key " << k << ": " << got.status().to_string();
    if (acked[k] != 0) {
      ASSERT_TRUE(*got) << "seed " << seed << ": acknowledged key " << k << " is gone";
    }
    if (!*got) continue;
    ++present;
    // The last acknowledged version, or the one in flight when the node died.
    ASSERT_TRUE(v == value_of(k, acked[k]) || v == value_of(k, tried[k]))
        << "seed " << seed << " key " << k << " holds '" << v << "'";
  }
  EXPECT_GE(present, kill_after / 2);
  // The tree works on: new inserts (splits included) and updates of recovered keys.
  for (uint64_t k = acked.size() - 500; k < acked.size(); ++k) {
    ASSERT_TRUE(c.run(table->insert(key_of(k), value_of(k, 1))).ok()) << "seed " << seed;
  }
  ASSERT_TRUE(c.run(table->update(key_of(0), value_of(0, 99))).ok()) << "seed " << seed;
  std::string v;
  ASSERT_TRUE(*c.run(table->get(key_of(0), &v)));
  EXPECT_EQ(v, value_of(0, 99));
}

INSTANTIATE_TEST_SUITE_P(Transports, DurableBTreeTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
