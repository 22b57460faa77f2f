// The kv client's location cache (kv/location_cache.h): bounded, per-pool, replaceable hints.
#include <gtest/gtest.h>

#include "farmem/kv/location_cache.h"

namespace farmem::kv {
namespace {

TEST(KvClientLocationCacheTest, StoresLooksUpAndForgetsPerPool) {
  LocationCache c(4);
  ASSERT_TRUE(c.enabled());
  EXPECT_EQ(c.size(), 16u);
  const uint64_t h = LocationCache::key_hash(1, "apple");
  RecordLocation loc;
  EXPECT_FALSE(c.lookup(1, h, &loc));
  c.store(1, h, RecordLocation{4096, 7, 64});
  ASSERT_TRUE(c.lookup(1, h, &loc));
  EXPECT_EQ(loc.record, 4096u);
  EXPECT_EQ(loc.version, 7u);
  EXPECT_EQ(loc.record_bytes, 64u);
  EXPECT_FALSE(c.lookup(2, h, &loc));  // another pool with the same hash: no entry
  EXPECT_NE(LocationCache::key_hash(2, "apple"), h);
  c.forget(2, h);  // not its entry: kept
  EXPECT_TRUE(c.lookup(1, h, &loc));
  c.forget(1, h);
  EXPECT_FALSE(c.lookup(1, h, &loc));
  c.store(1, h, RecordLocation{0, 7, 64});  // no record: nothing to remember
  EXPECT_FALSE(c.lookup(1, h, &loc));
}

TEST(KvClientLocationCacheTest, ANewerEntryReplacesTheOneInItsLine) {
  LocationCache c(0);  // one line
  const uint64_t a = LocationCache::key_hash(1, "a"), b = LocationCache::key_hash(1, "b");
  c.store(1, a, RecordLocation{64, 1, 40});
  c.store(1, b, RecordLocation{128, 2, 40});
  RecordLocation loc;
  EXPECT_FALSE(c.lookup(1, a, &loc));
  ASSERT_TRUE(c.lookup(1, b, &loc));
  EXPECT_EQ(loc.record, 128u);
  c.clear();
  EXPECT_FALSE(c.lookup(1, b, &loc));
}

TEST(KvClientLocationCacheTest, DisabledCacheMissesEverything) {
  LocationCache c(-1);
  EXPECT_FALSE(c.enabled());
  const uint64_t h = LocationCache::key_hash(1, "a");
  c.store(1, h, RecordLocation{64, 1, 40});
  RecordLocation loc;
  EXPECT_FALSE(c.lookup(1, h, &loc));
}

}  // namespace
}  // namespace farmem::kv
