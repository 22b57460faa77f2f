// Unit tests for memnode::BuddyAllocator.
#include "farmem/memnode/buddy_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <random>
#include <string_view>
#include <vector>

#include "test_seed.h"

namespace farmem::memnode {
namespace {

using ::farmem::testing::test_seed;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

using Block = BuddyAllocator::Block;

Block MustAllocate(BuddyAllocator* a, uint64_t bytes, uint64_t alignment = 0) {
  Result<Block> r = a->allocate(bytes, alignment);
  EXPECT_TRUE(r.ok()) << "allocate(" << bytes << ", " << alignment
                      << "): " << r.status().to_string();
  return r.ok() ? *r : Block{UINT64_MAX, 0};
}

// Allocates 64-byte blocks until the allocator is full; returns their offsets.
std::vector<uint64_t> FillWithSmallestBlocks(BuddyAllocator* a) {
  std::vector<uint64_t> offsets;
  for (;;) {
    Result<Block> r = a->allocate(64, 0);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
      break;
    }
    offsets.push_back(r->offset);
  }
  return offsets;
}

TEST(BuddyAllocatorTest, FreshAllocatorHasOneLargestBlockForPowerOfTwoCapacity) {
  BuddyAllocator a(1 * kMiB, 0);
  EXPECT_EQ(a.capacity_bytes(), 1 * kMiB);
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_EQ(a.live_allocations(), 0u);
  EXPECT_EQ(a.largest_free_bytes(), 1 * kMiB);
}

TEST(BuddyAllocatorTest, RoundsRequestsUpToPowersOfTwoOfAtLeast64Bytes) {
  BuddyAllocator a(1 * kMiB, 0);
  struct Case {
    uint64_t request;
    uint64_t block;
  };
  for (Case c : {Case{1, 64}, Case{64, 64}, Case{65, 128}, Case{100, 128}, Case{128, 128},
                 Case{129, 256}, Case{4095, 4096}, Case{4096, 4096}, Case{4097, 8192}}) {
    SCOPED_TRACE(c.request);
    Block b = MustAllocate(&a, c.request);
    EXPECT_EQ(b.bytes, c.block);
    EXPECT_GE(b.bytes, c.request);
  }
}

TEST(BuddyAllocatorTest, BlocksAreNaturallyAligned) {
  BuddyAllocator a(16 * kMiB, 0);
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 500; ++i) {
    uint64_t bytes = 1 + rng() % (16 * kKiB);
    Block b = MustAllocate(&a, bytes);
    ASSERT_TRUE(std::has_single_bit(b.bytes));
    EXPECT_EQ(b.offset % b.bytes, 0u) << "block of " << b.bytes << " at " << b.offset;
  }
}

TEST(BuddyAllocatorTest, AlignmentLargerThanTheSizeIsHonoured) {
  BuddyAllocator a(1 * kMiB, 0);
  MustAllocate(&a, 64);  // make offset 0 unavailable
  for (uint64_t align : {128ull, 1024ull, 4096ull, 65536ull}) {
    SCOPED_TRACE(align);
    Block b = MustAllocate(&a, 64, align);
    EXPECT_EQ(b.offset % align, 0u);
    EXPECT_GE(b.bytes, align);
  }
}

TEST(BuddyAllocatorTest, AlignmentZeroOrSmallMeans64) {
  BuddyAllocator a(1 * kMiB, 0);
  EXPECT_EQ(MustAllocate(&a, 64, 0).bytes, 64u);
  EXPECT_EQ(MustAllocate(&a, 64, 1).bytes, 64u);
  EXPECT_EQ(MustAllocate(&a, 64, 64).bytes, 64u);
}

TEST(BuddyAllocatorTest, RejectsNonPowerOfTwoAlignmentAndZeroBytes) {
  BuddyAllocator a(1 * kMiB, 0);
  for (uint64_t align : {3ull, 96ull, 4095ull}) {
    Result<Block> r = a.allocate(64, align);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
  Result<Block> zero = a.allocate(0, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_EQ(a.live_allocations(), 0u);
}

TEST(BuddyAllocatorTest, SplittingHandsOutLowerHalvesAndKeepsUpperHalvesFree) {
  BuddyAllocator a(1024, 0);
  EXPECT_EQ(MustAllocate(&a, 64).offset, 0u);
  EXPECT_EQ(a.largest_free_bytes(), 512u);  // 1024 split into 512 + 256 + 128 + 64 + [64]
  EXPECT_EQ(MustAllocate(&a, 64).offset, 64u);
  EXPECT_EQ(MustAllocate(&a, 128).offset, 128u);
  EXPECT_EQ(MustAllocate(&a, 256).offset, 256u);
  EXPECT_EQ(MustAllocate(&a, 512).offset, 512u);
  EXPECT_EQ(a.largest_free_bytes(), 0u);
  EXPECT_EQ(a.used_bytes(), 1024u);
}

TEST(BuddyAllocatorTest, SmallRequestPrefersAnExistingSmallBlockOverSplittingALargeOne) {
  BuddyAllocator a(1024, 0);
  Block first = MustAllocate(&a, 64);   // leaves free 64@64, 128@128, 256@256, 512@512
  Block second = MustAllocate(&a, 64);  // takes 64@64, not a split of 512
  EXPECT_EQ(first.offset, 0u);
  EXPECT_EQ(second.offset, 64u);
  EXPECT_EQ(a.largest_free_bytes(), 512u);
}

TEST(BuddyAllocatorTest, FreeingBuddiesCoalescesThem) {
  BuddyAllocator a(1024, 0);
  Block x = MustAllocate(&a, 64);
  Block y = MustAllocate(&a, 64);
  ASSERT_TRUE(a.free(x.offset).ok());
  EXPECT_EQ(a.largest_free_bytes(), 512u);
  ASSERT_TRUE(a.free(y.offset).ok());
  EXPECT_EQ(a.largest_free_bytes(), 1024u);
  EXPECT_EQ(MustAllocate(&a, 1024).offset, 0u);
}

TEST(BuddyAllocatorTest, FreeingEveryBlockCoalescesToOneBlock) {
  BuddyAllocator a(256 * kKiB, 0);
  std::vector<uint64_t> offsets = FillWithSmallestBlocks(&a);
  ASSERT_EQ(offsets.size(), 256 * kKiB / 64);
  EXPECT_EQ(a.used_bytes(), 256 * kKiB);
  EXPECT_EQ(a.largest_free_bytes(), 0u);
  // Free in a scrambled order so that merges happen at every level in different sequences.
  std::mt19937_64 rng(test_seed());
  std::shuffle(offsets.begin(), offsets.end(), rng);
  for (uint64_t off : offsets) ASSERT_TRUE(a.free(off).ok());
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_EQ(a.live_allocations(), 0u);
  EXPECT_EQ(a.largest_free_bytes(), 256 * kKiB);
  Block whole = MustAllocate(&a, 256 * kKiB);
  EXPECT_EQ(whole.offset, 0u);
  EXPECT_EQ(whole.bytes, 256 * kKiB);
}

TEST(BuddyAllocatorTest, DoubleFreeIsNotFound) {
  BuddyAllocator a(1 * kMiB, 0);
  Block b = MustAllocate(&a, 4096);
  ASSERT_TRUE(a.free(b.offset).ok());
  Status again = a.free(b.offset);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_FALSE(again.message().empty());
  EXPECT_EQ(a.used_bytes(), 0u);
}

TEST(BuddyAllocatorTest, FreeingAnOffsetThatWasNeverHandedOutIsNotFound) {
  BuddyAllocator a(1 * kMiB, 0);
  Block b = MustAllocate(&a, 256);
  EXPECT_EQ(a.free(b.offset + 64).code(), StatusCode::kNotFound);  // inside the block
  EXPECT_EQ(a.free(512 * kKiB).code(), StatusCode::kNotFound);     // a free block
  EXPECT_EQ(a.free(3).code(), StatusCode::kNotFound);              // unaligned
  EXPECT_EQ(a.free(64 * kMiB).code(), StatusCode::kNotFound);      // beyond capacity
  EXPECT_EQ(a.live_allocations(), 1u);
  EXPECT_EQ(a.used_bytes(), 256u);
  EXPECT_TRUE(a.free(b.offset).ok());
}

TEST(BuddyAllocatorTest, RequestLargerThanCapacityIsResourceExhausted) {
  BuddyAllocator a(1 * kMiB, 0);
  Result<Block> r = a.allocate(1 * kMiB + 1, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(r.status().message().empty());
  Result<Block> huge = a.allocate(UINT64_MAX, 0);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
}

TEST(BuddyAllocatorTest, OutOfMemoryIsResourceExhaustedWithAnExplanation) {
  BuddyAllocator a(64 * kKiB, 0);
  Block b = MustAllocate(&a, 32 * kKiB);
  MustAllocate(&a, 16 * kKiB);
  Result<Block> r = a.allocate(32 * kKiB, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  std::string_view msg = r.status().message();
  EXPECT_NE(msg.find("out of remote memory"), std::string_view::npos) << msg;
  EXPECT_NE(msg.find("32768"), std::string_view::npos) << msg;  // the request
  EXPECT_NE(msg.find("16384"), std::string_view::npos) << msg;  // the largest free block
  // A smaller request still fits, and freeing makes room again.
  EXPECT_TRUE(a.allocate(16 * kKiB, 0).ok());
  ASSERT_TRUE(a.free(b.offset).ok());
  EXPECT_TRUE(a.allocate(32 * kKiB, 0).ok());
}

TEST(BuddyAllocatorTest, AlignmentBeyondTheMaximumOrderIsResourceExhausted) {
  BuddyAllocator a(1 * kMiB, 0);
  Result<Block> r = a.allocate(64, 1ull << 60);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(BuddyAllocatorTest, NonPowerOfTwoCapacityIsFullyUsable) {
  // 1 MiB + 64 KiB + 192 B: covered by blocks of 1 MiB, 64 KiB, 128 B and 64 B.
  const uint64_t capacity = 1 * kMiB + 64 * kKiB + 192;
  BuddyAllocator a(capacity, 0);
  EXPECT_EQ(a.capacity_bytes(), capacity);
  EXPECT_EQ(a.largest_free_bytes(), 1 * kMiB);
  std::vector<uint64_t> offsets = FillWithSmallestBlocks(&a);
  EXPECT_EQ(offsets.size(), capacity / 64);
  for (uint64_t off : offsets) EXPECT_LT(off, capacity);
  EXPECT_EQ(a.used_bytes(), capacity);
  for (uint64_t off : offsets) ASSERT_TRUE(a.free(off).ok());
  EXPECT_EQ(a.used_bytes(), 0u);
  // Everything coalesces back into the original cover.
  EXPECT_EQ(MustAllocate(&a, 1 * kMiB).offset, 0u);
  EXPECT_EQ(MustAllocate(&a, 64 * kKiB).offset, 1 * kMiB);
  EXPECT_EQ(MustAllocate(&a, 128).offset, 1 * kMiB + 64 * kKiB);
  EXPECT_EQ(MustAllocate(&a, 64).offset, 1 * kMiB + 64 * kKiB + 128);
  EXPECT_FALSE(a.allocate(64, 0).ok());
}

TEST(BuddyAllocatorTest, CapacityIsRoundedDownTo64Bytes) {
  BuddyAllocator a(1000, 0);
  EXPECT_EQ(a.capacity_bytes(), 960u);
  std::vector<uint64_t> offsets = FillWithSmallestBlocks(&a);
  EXPECT_EQ(offsets.size(), 15u);
  for (uint64_t off : offsets) EXPECT_LE(off + 64, 960u);
}

TEST(BuddyAllocatorTest, ReservedPrefixIsNeverHandedOut) {
  // 100 reserved bytes round up to 128.
  BuddyAllocator a(64 * kKiB, 100);
  EXPECT_EQ(a.used_bytes(), 128u);
  EXPECT_EQ(a.free(0).code(), StatusCode::kNotFound);
  EXPECT_EQ(a.free(64).code(), StatusCode::kNotFound);
  std::vector<uint64_t> offsets = FillWithSmallestBlocks(&a);
  EXPECT_EQ(offsets.size(), (64 * kKiB - 128) / 64);
  for (uint64_t off : offsets) ASSERT_GE(off, 128u);
  EXPECT_EQ(a.used_bytes(), 64 * kKiB);
  for (uint64_t off : offsets) ASSERT_TRUE(a.free(off).ok());
  EXPECT_EQ(a.used_bytes(), 128u);
  // The prefix is never merged into a free block: the first half can never be allocated whole.
  EXPECT_EQ(a.largest_free_bytes(), 32 * kKiB);
  Block half = MustAllocate(&a, 32 * kKiB);
  EXPECT_EQ(half.offset, 32 * kKiB);
  EXPECT_FALSE(a.allocate(32 * kKiB, 0).ok());
}

TEST(BuddyAllocatorTest, ReservedPrefixWithLargeAlignedRequests) {
  BuddyAllocator a(1 * kMiB, 4096);
  for (int i = 0; i < 10; ++i) {
    Block b = MustAllocate(&a, 4096, 4096);
    EXPECT_GE(b.offset, 4096u);
    EXPECT_EQ(b.offset % 4096, 0u);
  }
}

TEST(BuddyAllocatorTest, UsedBytesCountsWholeBlocksAndTheReservedPrefix) {
  BuddyAllocator a(1 * kMiB, 64);
  EXPECT_EQ(a.used_bytes(), 64u);
  Block b1 = MustAllocate(&a, 100);   // 128
  Block b2 = MustAllocate(&a, 1000);  // 1024
  Block b3 = MustAllocate(&a, 1);     // 64
  EXPECT_EQ(a.used_bytes(), 64u + 128 + 1024 + 64);
  EXPECT_EQ(a.live_allocations(), 3u);
  ASSERT_TRUE(a.free(b2.offset).ok());
  EXPECT_EQ(a.used_bytes(), 64u + 128 + 64);
  ASSERT_TRUE(a.free(b1.offset).ok());
  ASSERT_TRUE(a.free(b3.offset).ok());
  EXPECT_EQ(a.used_bytes(), 64u);
  EXPECT_EQ(a.live_allocations(), 0u);
}

TEST(BuddyAllocatorTest, RandomAllocAndFreeNeverOverlapAndAccountingHolds) {
  const uint64_t capacity = 3 * kMiB + 320 * kKiB + 448;  // not a power of two
  const uint64_t reserved = 4096;
  BuddyAllocator a(capacity, reserved);
  std::mt19937_64 rng(test_seed());
  std::map<uint64_t, uint64_t> shadow;  // offset -> block bytes
  uint64_t expected_used = reserved;
  int failures = 0;
  for (int step = 0; step < 20000; ++step) {
    bool do_alloc = shadow.empty() || rng() % 100 < 55;
    if (do_alloc) {
      uint64_t bytes = 1 + rng() % (rng() % 4 == 0 ? 64 * kKiB : 2 * kKiB);
      uint64_t align = rng() % 8 == 0 ? (64ull << (rng() % 7)) : 0;
      Result<Block> r = a.allocate(bytes, align);
      if (!r.ok()) {
        ASSERT_EQ(r.status().code(), StatusCode::kResourceExhausted);
        ++failures;
        continue;
      }
      Block b = *r;
      ASSERT_GE(b.bytes, bytes);
      ASSERT_TRUE(std::has_single_bit(b.bytes));
      ASSERT_EQ(b.offset % b.bytes, 0u);
      if (align != 0) {
        ASSERT_EQ(b.offset % align, 0u);
      }
      ASSERT_GE(b.offset, reserved);
      ASSERT_LE(b.offset + b.bytes, capacity);
      auto next = shadow.lower_bound(b.offset);
      if (next != shadow.end()) {
        ASSERT_LE(b.offset + b.bytes, next->first) << "overlaps block at " << next->first;
      }
      if (next != shadow.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, b.offset) << "overlaps block at " << prev->first;
      }
      shadow.emplace(b.offset, b.bytes);
      expected_used += b.bytes;
    } else {
      auto it = shadow.begin();
      std::advance(it, rng() % shadow.size());
      ASSERT_TRUE(a.free(it->first).ok());
      expected_used -= it->second;
      shadow.erase(it);
    }
    ASSERT_EQ(a.used_bytes(), expected_used) << "step " << step;
    ASSERT_EQ(a.live_allocations(), shadow.size()) << "step " << step;
  }
  EXPECT_GT(failures, 0) << "the test should also exercise the out-of-memory path";
  for (auto& [off, bytes] : shadow) ASSERT_TRUE(a.free(off).ok());
  EXPECT_EQ(a.used_bytes(), reserved);
  EXPECT_EQ(a.live_allocations(), 0u);
  // Coalesced back into the initial cover of [4 KiB, capacity): 4 KiB, 8 KiB, ... 512 KiB,
  // 1 MiB at 1 MiB, 1 MiB at 2 MiB, 256 KiB at 3 MiB, 64 KiB, 256 B, 128 B, 64 B.
  EXPECT_EQ(a.largest_free_bytes(), 1 * kMiB);
  EXPECT_EQ(MustAllocate(&a, 1 * kMiB).offset, 1 * kMiB);
  EXPECT_EQ(MustAllocate(&a, 1 * kMiB).offset, 2 * kMiB);
  EXPECT_EQ(MustAllocate(&a, 512 * kKiB).offset, 512 * kKiB);
  EXPECT_EQ(MustAllocate(&a, 256 * kKiB).offset, 256 * kKiB);
  EXPECT_EQ(MustAllocate(&a, 256 * kKiB).offset, 3 * kMiB);
  EXPECT_EQ(MustAllocate(&a, 4 * kKiB).offset, 4 * kKiB);
}

}  // namespace
}  // namespace farmem::memnode

namespace farmem::memnode {
namespace {

// Recovery rebuilds an allocator from recorded blocks: taking the same blocks with allocate_at
// leaves it in a state that hands out and frees exactly like the original.
TEST(BuddyAllocatorTest, AllocateAtRebuildsTheSameBlocks) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  BuddyAllocator original(4 * kMiB, 4096);
  std::vector<Block> live;
  for (int i = 0; i < 300; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(original.free(live[k].offset).ok());
      live.erase(live.begin() + static_cast<long>(k));
      continue;
    }
    auto b = original.allocate(64ull << (rng() % 8), 0);
    if (b.ok()) live.push_back(*b);
  }
  BuddyAllocator rebuilt(4 * kMiB, 4096);
  for (const Block& b : live) ASSERT_TRUE(rebuilt.allocate_at(b.offset, b.bytes).ok()) << seed;
  EXPECT_EQ(rebuilt.used_bytes(), original.used_bytes());
  EXPECT_EQ(rebuilt.live_allocations(), original.live_allocations());
  EXPECT_EQ(rebuilt.largest_free_bytes(), original.largest_free_bytes());
  for (const Block& b : live) ASSERT_TRUE(rebuilt.free(b.offset).ok());
  EXPECT_EQ(rebuilt.used_bytes(), 4096u);
  EXPECT_EQ(rebuilt.largest_free_bytes(), 2 * kMiB);  // everything merged back
}

TEST(BuddyAllocatorTest, AllocateAtRefusesATakenBlockOrANonBlock) {
  BuddyAllocator a(1 * kMiB, 4096);
  ASSERT_TRUE(a.allocate_at(8192, 4096).ok());
  EXPECT_EQ(a.allocate_at(8192, 4096).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(a.allocate_at(8192 + 64, 64).code(), StatusCode::kAlreadyExists);  // inside it
  EXPECT_EQ(a.allocate_at(12288, 3000).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.allocate_at(12288 + 64, 4096).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.allocate_at(0, 64).code(), StatusCode::kAlreadyExists);  // the reserved header
}

}  // namespace
}  // namespace farmem::memnode
