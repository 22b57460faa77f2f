// AgentCache: static and dynamic entries, staging placeholders against writes, eviction that
// spares referenced entries, and the adaptive model's switch on a seeded access sequence.
#include "farmem/agent/cache.h"

#include <gtest/gtest.h>

#include <random>

#include "test_seed.h"

namespace farmem::agent {
namespace {

constexpr uint64_t kPage = 64 * 1024;
constexpr uint64_t kEntry = 1 << 20;

AgentOptions small_options() {
  AgentOptions o;
  o.page_bytes = kPage;
  o.entry_bytes = kEntry;
  o.cache_bytes = 2 * kEntry;
  o.static_bytes = 2 * kEntry;
  o.model_window = 16;
  return o;
}

std::vector<uint8_t> filled(uint8_t v) { return std::vector<uint8_t>(kEntry, v); }

TEST(AgentCache, MissStagesThenHits) {
  AgentCache c(small_options());
  std::vector<GlobalAddress> stage;
  EXPECT_FALSE(c.lookup(GlobalAddress(0, kEntry + 5 * kPage), kPage, &stage));
  ASSERT_EQ(stage.size(), 1u);
  EXPECT_EQ(stage[0], GlobalAddress(0, kEntry));
  stage.clear();
  // A placeholder is a miss and is not staged twice.
  EXPECT_FALSE(c.lookup(GlobalAddress(0, kEntry), kPage, &stage));
  EXPECT_TRUE(stage.empty());
  c.finish_stage(GlobalAddress(0, kEntry), filled(7), true);
  auto hit = c.lookup(GlobalAddress(0, kEntry + 3 * kPage), kPage, &stage);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->offset, 3 * kPage);
  EXPECT_EQ(hit->entry->data[hit->offset], 7);
  const CacheCounters k = c.counters();
  EXPECT_EQ(k.dynamic_hits, 1u);
  EXPECT_EQ(k.dynamic_misses, 2u);
  EXPECT_EQ(k.staged_entries, 1u);
  // A read spanning two entries is never cached.
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 2 * kEntry - 8), 16, &stage));
}

// A read without the dynamic cache (wire::kReadNoDynamic) neither stages nor counts, and is
// served by a static entry only.
TEST(AgentCache, ReadWithoutDynamicUsesStaticEntriesOnly) {
  AgentCache c(small_options());
  std::vector<GlobalAddress> stage;
  EXPECT_FALSE(c.lookup(GlobalAddress(0, kEntry), kPage, &stage, false));
  EXPECT_TRUE(stage.empty());
  EXPECT_FALSE(c.lookup(GlobalAddress(0, kEntry), kPage, &stage));  // stages it
  ASSERT_EQ(stage.size(), 1u);
  c.finish_stage(GlobalAddress(0, kEntry), filled(3), true);
  stage.clear();
  EXPECT_FALSE(c.lookup(GlobalAddress(0, kEntry), kPage, &stage, false));  // not from dynamic
  ASSERT_TRUE(c.put_static(GlobalAddress(0, 0), filled(9)).ok());
  auto hit = c.lookup(GlobalAddress(0, kPage), kPage, &stage, false);
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->is_static);
  const CacheCounters k = c.counters();
  EXPECT_EQ(k.dynamic_hits, 0u);
  EXPECT_EQ(k.dynamic_misses, 1u);
  EXPECT_EQ(k.static_hits, 1u);
  EXPECT_TRUE(stage.empty());
}

TEST(AgentCache, AscendingAccessStagesTheNextEntry) {
  AgentOptions o = small_options();
  o.cache_bytes = 4 * kEntry;
  AgentCache c(o);
  std::vector<GlobalAddress> stage;
  c.lookup(GlobalAddress(0, 0), kPage, &stage);
  stage.clear();
  c.lookup(GlobalAddress(0, kEntry), kPage, &stage);
  ASSERT_EQ(stage.size(), 2u);
  EXPECT_EQ(stage[1], GlobalAddress(0, 2 * kEntry));
}

TEST(AgentCache, WriteDuringStagingDropsTheEntry) {
  AgentCache c(small_options());
  std::vector<GlobalAddress> stage;
  c.lookup(GlobalAddress(1, 0), kPage, &stage);
  ASSERT_EQ(stage.size(), 1u);
  const uint8_t b = 9;
  c.apply_write(GlobalAddress(1, 100), &b, 1);
  c.finish_stage(GlobalAddress(1, 0), filled(1), true);  // read before the write: stale
  stage.clear();
  EXPECT_FALSE(c.lookup(GlobalAddress(1, 0), kPage, &stage));
  EXPECT_EQ(c.counters().staged_entries, 0u);
  EXPECT_EQ(stage.size(), 1u);  // staged again
}

TEST(AgentCache, WriteToAServedEntryCopiesIt) {
  AgentCache c(small_options());
  std::vector<GlobalAddress> stage;
  c.lookup(GlobalAddress(0, 0), kPage, &stage);
  c.finish_stage(GlobalAddress(0, 0), filled(1), true);
  auto held = c.lookup(GlobalAddress(0, 0), kPage, &stage);
  ASSERT_TRUE(held);
  const uint8_t b = 2;
  c.apply_write(GlobalAddress(0, 10), &b, 1);
  EXPECT_EQ(held->entry->data[10], 1);  // the reply being sent is untouched
  auto now = c.lookup(GlobalAddress(0, 0), kPage, &stage);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->entry->data[10], 2);
}

TEST(AgentCache, EvictionSparesReferencedEntries) {
  AgentCache c(small_options());  // room for two entries
  std::vector<GlobalAddress> stage;
  for (uint64_t e : {0, 4}) {
    c.lookup(GlobalAddress(0, e * kEntry), kPage, &stage);
    c.finish_stage(GlobalAddress(0, e * kEntry), filled(static_cast<uint8_t>(e)), true);
  }
  auto held0 = c.lookup(GlobalAddress(0, 0), kPage, &stage);  // entry 0: most recent, held
  auto held4 = c.lookup(GlobalAddress(0, 4 * kEntry), kPage, &stage);
  ASSERT_TRUE(held0 && held4);
  stage.clear();
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 8 * kEntry), kPage, &stage));
  EXPECT_TRUE(stage.empty());  // both held: nothing evicted, nothing staged
  held4.reset();
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 8 * kEntry), kPage, &stage));
  EXPECT_EQ(stage.size(), 1u);
  EXPECT_EQ(c.counters().evictions, 1u);
  EXPECT_TRUE(c.lookup(GlobalAddress(0, 0), kPage, &stage));  // the held one stayed
}

TEST(AgentCache, StaticEntriesHitAndKeepTheirBudget) {
  AgentCache c(small_options());
  ASSERT_TRUE(c.put_static(GlobalAddress(0, 0), filled(3)).ok());
  ASSERT_TRUE(c.put_static(GlobalAddress(0, kEntry), filled(3)).ok());
  EXPECT_EQ(c.put_static(GlobalAddress(0, 2 * kEntry), filled(3)).code(),
            StatusCode::kResourceExhausted);
  std::vector<GlobalAddress> stage;
  auto hit = c.lookup(GlobalAddress(0, kEntry + kPage), kPage, &stage);
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->is_static);
  EXPECT_EQ(c.counters().static_hits, 1u);
}

TEST(AgentCache, ModelSwitchesOffOnRandomAndBackOnOnSequential) {
  AgentOptions o = small_options();
  o.model_window = 64;  // four entries' worth of sequential pages
  AgentCache c(o);
  std::mt19937_64 rng(testing::test_seed());
  std::vector<GlobalAddress> stage;
  for (int i = 0; i < 128; ++i) {
    stage.clear();
    c.lookup(GlobalAddress(0, (rng() % 4096) * kPage), kPage, &stage);
    for (GlobalAddress s : stage) c.finish_stage(s, filled(0), true);
  }
  EXPECT_FALSE(c.counters().dynamic_enabled);
  EXPECT_EQ(c.counters().switches, 1u);
  for (uint64_t p = 0; p < 256; ++p) {
    stage.clear();
    c.lookup(GlobalAddress(2, p * kPage), kPage, &stage);
    for (GlobalAddress s : stage) c.finish_stage(s, filled(0), true);
  }
  EXPECT_TRUE(c.counters().dynamic_enabled);
  EXPECT_EQ(c.counters().switches, 2u);
  EXPECT_GT(c.counters().dynamic_hits, 128u);
}

}  // namespace
}  // namespace farmem::agent

namespace farmem::agent {
namespace {

TEST(AgentCache, InvalidateDropsStaticAndDynamicEntries) {
  AgentOptions o;
  o.entry_bytes = 1 << 20;
  AgentCache c(o);
  ASSERT_TRUE(c.put_static(GlobalAddress(0, 0), std::vector<uint8_t>(1 << 20, 1)).ok());
  std::vector<GlobalAddress> stage;
  c.lookup(GlobalAddress(0, 3 << 20), 4096, &stage);
  c.finish_stage(GlobalAddress(0, 3 << 20), std::vector<uint8_t>(1 << 20, 2), true);
  c.lookup(GlobalAddress(0, 5 << 20), 4096, &stage);  // a placeholder
  ASSERT_TRUE(c.lookup(GlobalAddress(0, 3 << 20), 4096, &stage));
  c.invalidate(GlobalAddress(0, 100), 6 << 20);
  c.finish_stage(GlobalAddress(0, 5 << 20), std::vector<uint8_t>(1 << 20, 3), true);
  EXPECT_EQ(c.counters().static_bytes, 0u);
  EXPECT_EQ(c.counters().cache_bytes, 0u);
  stage.clear();
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 0), 4096, &stage));
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 3 << 20), 4096, &stage));
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 5 << 20), 4096, &stage));
}

TEST(AgentCacheDeathTest, EntriesOfTheWrongSizeAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  AgentCache c(small_options());
  EXPECT_DEATH((void)c.put_static(GlobalAddress(0, 0), std::vector<uint8_t>(kPage, 1)),
               "static entry of the wrong size");
  std::vector<GlobalAddress> stage;
  EXPECT_FALSE(c.lookup(GlobalAddress(0, 0), kPage, &stage));
  ASSERT_EQ(stage.size(), 1u);
  EXPECT_DEATH(c.finish_stage(stage[0], std::vector<uint8_t>(kPage, 1), true),
               "staged entry of the wrong size");
}

}  // namespace
}  // namespace farmem::agent
