// SegmentPool's invariants: only the pool's own segments come back, never more than were taken
// (far/segment_pool.h). No processes.
#include "farmem/far/segment_pool.h"

#include <gtest/gtest.h>

#include <memory>

namespace farmem::far {
namespace {

constexpr uint64_t kSeg = 64 << 10;

// A pool of 8 segments, one of them taken.
class SegmentPoolDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto p = SegmentPool::create(8 * kSeg, kSeg);
    ASSERT_TRUE(p.ok());
    pool_ = std::move(*p);
    taken_ = pool_->take();
    ASSERT_NE(taken_, nullptr);
  }
  std::unique_ptr<SegmentPool> pool_;
  uint8_t* taken_ = nullptr;
};

TEST_F(SegmentPoolDeathTest, GivingBackAForeignOrMisalignedSegmentAborts) {
  alignas(16) static uint8_t elsewhere[16];
  EXPECT_DEATH(pool_->give(elsewhere), "not one of the pool's");
  EXPECT_DEATH(pool_->give(taken_ + 16), "not one of the pool's");
  pool_->give(taken_);
  EXPECT_EQ(pool_->free_segments(), 8u);
}

TEST_F(SegmentPoolDeathTest, GivingBackMoreThanWasTakenAborts) {
  pool_->give(taken_);
  EXPECT_DEATH(pool_->give(taken_), "more segments given than taken");
}

}  // namespace
}  // namespace farmem::far
