// The kill-during-writes run the durable structure tests share (hash table, B+tree): 8 writers
// insert keys of their own and now and then update one they inserted; a watcher kill -9s the node
// once kill_after writes were acknowledged; the node restarts on its directory and the structure
// is reopened. Then every acknowledged write is there, a key holds its last acknowledged value or
// the one in flight, and the structure takes new inserts and updates. T is any structure with
// insert(key, value), update(key, value) and get(key, &value) tasks. Every wait is a hang guard.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "farmem/runtime/when_all.h"

namespace farmem::testing {

inline std::string durable_key(uint64_t k) { return fmt::format("key-{:06}", k); }

// `table` was created on `node` (started with `checkpoint_log`); `reopen` opens it again after
// the restart; `value_of(k, version)` is the value of key k's version (version >= 1).
template <typename T>
void kill_during_writes(
    DurableNode& node, std::unique_ptr<T> table, uint64_t seed, const std::string& checkpoint_log,
    const std::function<runtime::Task<Result<std::unique_ptr<T>>>(client::ThreadClient*)>& reopen,
    const std::function<std::string(uint64_t, uint64_t)>& value_of) {
  using runtime::Task;
  std::mt19937_64 rng(seed);
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
      FARMEM_CO_TRY(co_await table->insert(durable_key(k), value_of(k, 1)));
      acked[k] = 1;
      done.fetch_add(1);
      if (n > 0 && r() % 4 == 0) {
        const uint64_t old = w + kWriters * (r() % n);
        const uint64_t version = acked[old] + 1;
        tried[old] = version;
        FARMEM_CO_TRY(co_await table->update(durable_key(old), value_of(old, version)));
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

  std::string why;
  ASSERT_TRUE(node.start(&why, "power", checkpoint_log)) << why;
  client::ThreadClient& c = node.client();
  auto opened = c.run(reopen(&c));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  table = std::move(*opened);
  uint64_t present = 0;
  for (uint64_t k = 0; k < acked.size() - 500; ++k) {
    if (tried[k] == 0) continue;
    std::string v;
    auto got = c.run(table->get(durable_key(k), &v));
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
  // It works on: new inserts (splits included) and updates of recovered keys.
  for (uint64_t k = acked.size() - 500; k < acked.size(); ++k) {
    ASSERT_TRUE(c.run(table->insert(durable_key(k), value_of(k, 1))).ok()) << "seed " << seed;
  }
  ASSERT_TRUE(c.run(table->update(durable_key(0), value_of(0, 99))).ok()) << "seed " << seed;
  std::string v;
  ASSERT_TRUE(*c.run(table->get(durable_key(0), &v)));
  EXPECT_EQ(v, value_of(0, 99));
}

}  // namespace farmem::testing
