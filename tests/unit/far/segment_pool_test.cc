// SegmentPool's invariants: only the pool's own segments come back, never more than were taken
// (far/segment_pool.h). No processes.
#include "farmem/far/segment_pool.h"

#include <gtest/gtest.h>

namespace farmem::far {
namespace {

constexpr uint64_t kSeg = 64 << 10;

TEST(SegmentPoolDeathTest, GivingBackAForeignOrMisalignedSegmentAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto pool = SegmentPool::create(8 * kSeg, kSeg);
  ASSERT_TRUE(pool.ok());
  uint8_t* s = (*pool)->take();
  ASSERT_NE(s, nullptr);
  alignas(16) static uint8_t elsewhere[16];
  EXPECT_DEATH((*pool)->give(elsewhere), "not one of the pool's");
  EXPECT_DEATH((*pool)->give(s + 16), "not one of the pool's");
  (*pool)->give(s);
  EXPECT_EQ((*pool)->free_segments(), 8u);
}

TEST(SegmentPoolDeathTest, GivingBackMoreThanWasTakenAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto pool = SegmentPool::create(8 * kSeg, kSeg);
  ASSERT_TRUE(pool.ok());
  uint8_t* s = (*pool)->take();
  ASSERT_NE(s, nullptr);
  (*pool)->give(s);
  EXPECT_DEATH((*pool)->give(s), "more segments given than taken");
}

}  // namespace
}  // namespace farmem::far
