// Unit tests of the pool allocator: size classes over chunks, large blocks, capacity, grace.
#include "kv/service/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "kv_test_region.h"
#include "test_seed.h"

namespace farmem::kv::service {
namespace {

using testing::TestRegion;

TEST(KvAllocatorTest, SmallBlocksComeFromChunksAndAreReusedAfterTheGrace) {
  TestRegion region(16 << 20);
  TestRegion::Source source(region);
  PoolAllocator a(source, 1 << 20, /*grace_ns=*/1000);
  EXPECT_EQ(a.chunk_bytes(), 64u << 10);
  auto x = a.allocate(100, 0);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(*x % 64, 0u);
  EXPECT_EQ(a.block_bytes(100), 128u);
  EXPECT_EQ(source.taken, 1);
  EXPECT_EQ(a.used_bytes(), 64u << 10);
  a.retire(*x, 100, /*now=*/10);
  auto y = a.allocate(100, 500);  // grace not over: a new block
  ASSERT_TRUE(y.ok());
  EXPECT_NE(*y, *x);
  auto z = a.allocate(100, 1010);  // ripe: reused
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(*z, *x);
  a.free_now(*y, 100);
  EXPECT_EQ(*a.allocate(128, 1010), *y);
  EXPECT_EQ(source.taken, 1);
}

TEST(KvAllocatorTest, LargeBlocksAreHeapBlocksGivenBackWhenRipe) {
  TestRegion region(16 << 20);
  TestRegion::Source source(region);
  PoolAllocator a(source, 4 << 20, 100);
  const uint64_t big = a.chunk_bytes();  // above the largest class
  auto x = a.allocate(big + 1, 0);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(a.block_bytes(big + 1), 2 * big);
  EXPECT_EQ(a.used_bytes(), 2 * big);
  a.retire(*x, big + 1, 0);
  EXPECT_EQ(a.used_bytes(), 2 * big);  // still held during the grace
  a.reclaim(99);
  EXPECT_EQ(source.given_back, 0);
  a.reclaim(100);
  EXPECT_EQ(source.given_back, 1);
  EXPECT_EQ(a.used_bytes(), 0u);
}

// After a restart the rebuilt chunk's gaps sit in the free lists of the largest classes; small
// requests are cut from them before the pool takes a new chunk (else every life of a durable
// pool would take one more).
TEST(KvAllocatorTest, SmallRequestsReuseARebuiltChunkBeforeTakingANewOne) {
  TestRegion region(16 << 20);
  TestRegion::Source source(region);
  PoolAllocator before(source, 1 << 20, 0);
  std::vector<PoolAllocator::Live> lives;
  for (int i = 0; i < 10; ++i) {
    auto x = before.allocate(100, 0);
    ASSERT_TRUE(x.ok());
    lives.push_back({*x, 100});
  }
  ASSERT_EQ(source.taken, 1);
  const MemorySource::Block chunk{lives[0].offset, before.chunk_bytes()};
  PoolAllocator after(source, 1 << 20, 0);
  EXPECT_TRUE(after.rebuild({chunk}, lives).empty());
  EXPECT_EQ(after.used_bytes(), after.chunk_bytes());
  std::vector<uint64_t> got;
  for (uint64_t n = 0; n < (after.chunk_bytes() - 10 * 128) / 128 - 16; ++n) {
    auto x = after.allocate(100, 0);
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    EXPECT_GE(*x, chunk.offset);
    EXPECT_LE(*x + 128, chunk.offset + chunk.bytes);
    got.push_back(*x);
  }
  EXPECT_EQ(source.taken, 1) << "the rebuilt chunk's free space served every request";
  EXPECT_EQ(after.used_bytes(), after.chunk_bytes());
  for (const auto& l : lives) EXPECT_EQ(std::count(got.begin(), got.end(), l.offset), 0);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "no block given twice";
}

TEST(KvAllocatorTest, TheCapacityIsABoundNotAnError) {
  TestRegion region(16 << 20);
  TestRegion::Source source(region);
  PoolAllocator a(source, 64 << 10, 0);
  uint64_t n = 0;
  Status s;
  while (true) {
    auto x = a.allocate(1000, 0);
    if (!x.ok()) {
      s = x.status();
      break;
    }
    ++n;
  }
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_LE(a.used_bytes(), 64u << 10);
  EXPECT_EQ(n, (64u << 10) / 1024);
  EXPECT_EQ(a.allocate(1 << 20, 0).status().code(), StatusCode::kResourceExhausted);
}

TEST(KvAllocatorTest, LiveBlocksNeverOverlap) {
  const uint64_t seed = farmem::testing::test_seed();
  std::mt19937_64 rng(seed);
  TestRegion region(64 << 20);
  TestRegion::Source source(region);
  PoolAllocator a(source, 32 << 20, 50);
  std::map<uint64_t, uint64_t> live;  // offset -> bytes asked
  uint64_t now = 0;
  for (int i = 0; i < 20000; ++i) {
    now += rng() % 10;
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t bytes = rng() % 4 == 0 ? 1 + rng() % 200000 : 1 + rng() % 3000;
      auto x = a.allocate(bytes, now);
      if (!x.ok()) {
        ASSERT_EQ(x.status().code(), StatusCode::kResourceExhausted);
        continue;
      }
      auto next = live.lower_bound(*x);
      if (next != live.end()) {
        ASSERT_LE(*x + bytes, next->first) << "seed " << seed;
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + a.block_bytes(prev->second), *x) << "seed " << seed;
      }
      live[*x] = bytes;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      a.retire(it->first, it->second, now);
      live.erase(it);
    }
    ASSERT_LE(a.used_bytes(), 32u << 20);
  }
}

}  // namespace
}  // namespace farmem::kv::service
