// Unit tests for client::ChunkAllocator (pure local carving; no RPCs involved).
#include "farmem/client/chunk_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace farmem::client {
namespace {

TEST(ChunkAllocatorTest, ClassOfBoundaries) {
  EXPECT_EQ(ChunkAllocator::class_of(0), -1);
  EXPECT_EQ(ChunkAllocator::class_of(1), 0);
  EXPECT_EQ(ChunkAllocator::class_of(64), 0);
  EXPECT_EQ(ChunkAllocator::class_of(65), 1);
  EXPECT_EQ(ChunkAllocator::class_of(128), 1);
  EXPECT_EQ(ChunkAllocator::class_of(129), 2);
  EXPECT_EQ(ChunkAllocator::class_of(8192), 7);
  EXPECT_EQ(ChunkAllocator::class_of(8193), 8);
  EXPECT_EQ(ChunkAllocator::class_of(16384), 8);
  EXPECT_EQ(ChunkAllocator::class_of(16385), -1);
  EXPECT_EQ(ChunkAllocator::class_of(UINT64_MAX), -1);
}

TEST(ChunkAllocatorTest, ClassBytesArePowersOfTwoFrom64To16KiB) {
  EXPECT_EQ(ChunkAllocator::class_bytes(0), 64u);
  EXPECT_EQ(ChunkAllocator::class_bytes(ChunkAllocator::kClasses - 1), 16384u);
  for (int cls = 0; cls < ChunkAllocator::kClasses; ++cls) {
    uint64_t bytes = ChunkAllocator::class_bytes(cls);
    EXPECT_EQ(ChunkAllocator::class_of(bytes), cls);
    if (cls > 0) {
      EXPECT_EQ(ChunkAllocator::class_of(ChunkAllocator::class_bytes(cls - 1) + 1), cls);
    }
  }
}

TEST(ChunkAllocatorTest, EverySmallSizeFitsItsClass) {
  for (uint64_t bytes = 1; bytes <= ChunkAllocator::kMaxSmallBytes; ++bytes) {
    int cls = ChunkAllocator::class_of(bytes);
    ASSERT_GE(cls, 0) << bytes;
    ASSERT_LT(cls, ChunkAllocator::kClasses) << bytes;
    ASSERT_GE(ChunkAllocator::class_bytes(cls), bytes);
    if (cls > 0) {
      ASSERT_LT(ChunkAllocator::class_bytes(cls - 1), bytes);
    }
  }
}

TEST(ChunkAllocatorTest, TakeWithoutAChunkReturnsNull) {
  ChunkAllocator a;
  EXPECT_EQ(a.chunks(), 0u);
  for (int cls = 0; cls < ChunkAllocator::kClasses; ++cls) EXPECT_TRUE(a.take(cls).is_null());
}

TEST(ChunkAllocatorTest, CarvesConsecutiveObjectsFromTheChunk) {
  ChunkAllocator a;
  const GlobalAddress chunk(3, 1 << 20);
  a.add_chunk(chunk, 4096);
  EXPECT_EQ(a.chunks(), 1u);
  EXPECT_EQ(a.take(0), chunk);
  EXPECT_EQ(a.take(0), chunk + 64);
  EXPECT_EQ(a.take(2), chunk + 128);  // 256-byte object right after
  EXPECT_EQ(a.take(1), chunk + 384);
  GlobalAddress last = a.take(1);
  EXPECT_EQ(last.node(), 3);
  EXPECT_EQ(last.offset(), (1u << 20) + 512);
}

TEST(ChunkAllocatorTest, ReturnsNullWhenTheChunkCannotFitTheClass) {
  ChunkAllocator a;
  const GlobalAddress chunk(1, 8192);
  a.add_chunk(chunk, 4096);
  EXPECT_TRUE(a.take(7).is_null());  // 8 KiB does not fit a 4 KiB chunk
  EXPECT_EQ(a.take(6), chunk);       // 4 KiB does
  EXPECT_TRUE(a.take(0).is_null());  // exhausted
}

TEST(ChunkAllocatorTest, CarvedObjectsAreDistinctAndWithinTheChunk) {
  ChunkAllocator a;
  const GlobalAddress chunk(2, 64 * 1024);
  const uint64_t chunk_bytes = 256 * 1024;
  a.add_chunk(chunk, chunk_bytes);
  std::set<uint64_t> seen;
  uint64_t carved = 0;
  for (int round = 0; carved < chunk_bytes; ++round) {
    int cls = round % 3;  // 64, 128, 256
    GlobalAddress g = a.take(cls);
    if (g.is_null()) break;
    ASSERT_EQ(g.node(), 2);
    ASSERT_GE(g.offset(), chunk.offset());
    ASSERT_LE(g.offset() + ChunkAllocator::class_bytes(cls), chunk.offset() + chunk_bytes);
    ASSERT_TRUE(seen.insert(g.offset()).second) << "handed out twice: " << g.offset();
    carved += ChunkAllocator::class_bytes(cls);
  }
  EXPECT_EQ(carved, chunk_bytes);  // 585 rounds of 64 + 128 + 256, then one last 64
}

TEST(ChunkAllocatorTest, GivenBackObjectIsReusedBeforeCarving) {
  ChunkAllocator a;
  const GlobalAddress chunk(0, 4096);
  a.add_chunk(chunk, 4096);
  GlobalAddress x = a.take(1);
  GlobalAddress y = a.take(1);
  a.give_back(1, x);
  EXPECT_EQ(a.take(1), x);
  EXPECT_EQ(a.take(1), y + 128);  // free list empty again: carving resumes
}

TEST(ChunkAllocatorTest, FreeListIsLastInFirstOutPerClass) {
  ChunkAllocator a;
  a.give_back(0, GlobalAddress(1, 64));
  a.give_back(0, GlobalAddress(1, 128));
  a.give_back(3, GlobalAddress(1, 1024));
  EXPECT_EQ(a.take(0), GlobalAddress(1, 128));
  EXPECT_EQ(a.take(0), GlobalAddress(1, 64));
  EXPECT_TRUE(a.take(0).is_null());  // no chunk to carve from
  EXPECT_EQ(a.take(3), GlobalAddress(1, 1024));
  EXPECT_TRUE(a.take(3).is_null());
}

TEST(ChunkAllocatorTest, GiveBackWorksWithoutAnyChunk) {
  ChunkAllocator a;
  a.give_back(8, GlobalAddress(4, 1 << 16));
  EXPECT_EQ(a.take(8), GlobalAddress(4, 1 << 16));
  EXPECT_EQ(a.chunks(), 0u);
}

TEST(ChunkAllocatorTest, AddChunkCarvesThePreviousTailIntoFreeLists) {
  ChunkAllocator a;
  const GlobalAddress first(1, 0x10000);
  a.add_chunk(first, 4096);
  EXPECT_EQ(a.take(5), first);         // 2048
  EXPECT_EQ(a.take(4), first + 2048);  // 1024
  EXPECT_EQ(a.take(3), first + 3072);  // 512
  EXPECT_EQ(a.take(0), first + 3584);  // 64: 448 bytes left = 256 + 128 + 64
  EXPECT_TRUE(a.take(3).is_null());    // 512 no longer fits
  const GlobalAddress second(2, 0x20000);
  a.add_chunk(second, 4096);
  EXPECT_EQ(a.chunks(), 2u);
  // The 448-byte tail went to the free lists, largest class first.
  EXPECT_EQ(a.take(2), first + 3648);  // 256
  EXPECT_EQ(a.take(1), first + 3904);  // 128
  EXPECT_EQ(a.take(0), first + 4032);  // 64
  // Then carving continues from the new chunk.
  EXPECT_EQ(a.take(2), second);
  EXPECT_EQ(a.take(1), second + 256);
  EXPECT_EQ(a.take(0), second + 384);
}

TEST(ChunkAllocatorTest, AddChunkTailUsesLargeClassesGreedily) {
  ChunkAllocator a;
  const GlobalAddress first(0, 0x100000);
  a.add_chunk(first, 64 * 1024);
  EXPECT_EQ(a.take(0), first);  // leaves a 65472-byte tail
  const GlobalAddress second(0, 0x200000);
  a.add_chunk(second, 64 * 1024);
  // 65472 = 3 * 16384 + 8192 + 4096 + 2048 + 1024 + 512 + 256 + 128 + 64, carved in that order;
  // each class's free list hands back its most recent object first.
  EXPECT_EQ(a.take(8), first + 64 + 2 * 16384);
  EXPECT_EQ(a.take(8), first + 64 + 16384);
  EXPECT_EQ(a.take(8), first + 64);
  EXPECT_EQ(a.take(8), second);  // the fourth 16 KiB object comes from the new chunk
  EXPECT_EQ(a.take(7), first + 64 + 3 * 16384);
  EXPECT_EQ(a.take(6), first + 64 + 3 * 16384 + 8192);
  EXPECT_EQ(a.take(0), first + 65472);
  EXPECT_EQ(a.take(0), second + 16384);  // class 0's free list is empty again
}

TEST(ChunkAllocatorTest, AddChunkWithAnEmptyTailAddsNothingToFreeLists) {
  ChunkAllocator a;
  const GlobalAddress first(0, 4096);
  a.add_chunk(first, 128);
  EXPECT_EQ(a.take(1), first);
  const GlobalAddress second(0, 8192);
  a.add_chunk(second, 128);
  EXPECT_EQ(a.take(0), second);  // nothing from the exhausted first chunk
}

// The refill path of ThreadClient::allocate and ds::ObjectHeap::allocate: a chunk that arrives
// after another coroutine's refill becomes a spare; one that arrives to an empty allocator is
// current and serves the request.
TEST(ChunkAllocatorTest, TakeAfterRefillUsesTheChunkOnlyWhenStillEmpty) {
  ChunkAllocator a;
  const GlobalAddress first(2, 0x10000);
  const GlobalAddress second(2, 0x20000);
  EXPECT_TRUE(a.take(0).is_null());
  EXPECT_EQ(a.take_after_refill(0, first, 256), first);  // empty: the chunk becomes current
  EXPECT_EQ(a.spare_chunks(), 0u);
  EXPECT_EQ(a.take_after_refill(0, second, 256), first + 64);  // refilled meanwhile: a spare
  EXPECT_EQ(a.spare_chunks(), 1u);
  EXPECT_EQ(a.chunks(), 2u);
}

// Several coroutines that found the allocator empty refill it at once: the chunks that arrive
// while the current one still has room wait as spares instead of retiring it.
TEST(ChunkAllocatorTest, SpareChunksWaitUntilTheCurrentOneIsUsedUp) {
  ChunkAllocator a;
  const GlobalAddress first(1, 0x10000);
  const GlobalAddress spare1(1, 0x20000);
  const GlobalAddress spare2(1, 0x30000);
  a.add_chunk(first, 256);
  a.add_spare_chunk(spare1, 256);
  a.add_spare_chunk(spare2, 256);
  EXPECT_EQ(a.chunks(), 3u);
  EXPECT_EQ(a.spare_chunks(), 2u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.take(0), first + 64 * i);  // the current one first
  EXPECT_EQ(a.spare_chunks(), 2u);
  EXPECT_EQ(a.take(0), spare2);  // then the most recent spare
  EXPECT_EQ(a.spare_chunks(), 1u);
  EXPECT_EQ(a.take(1), spare2 + 64);
  // 64 bytes of spare2 are left; a 256-byte object moves on to the last spare and the tail goes
  // to the free list.
  EXPECT_EQ(a.take(2), spare1);
  EXPECT_EQ(a.spare_chunks(), 0u);
  EXPECT_EQ(a.take(0), spare2 + 192);
  EXPECT_TRUE(a.take(0).is_null());
  EXPECT_EQ(a.chunks(), 3u);
}

// A size class outside 0..kClasses-1 is a caller's bug (class_of gives -1 for sizes that are not
// small): it stops the process rather than index past the free lists.
TEST(ChunkAllocatorDeathTest, SizeClassOutOfRangeAborts) {
  ChunkAllocator a;
  a.add_chunk(GlobalAddress(1, 0x10000), 4096);
  EXPECT_DEATH((void)a.take(ChunkAllocator::kClasses), "size class out of range");
  EXPECT_DEATH(a.give_back(-1, GlobalAddress(1, 0x10000)), "size class out of range");
}

}  // namespace
}  // namespace farmem::client
