// StagingPool: the pager thread's staging buffers and zero pages (src/paged/staging.h).
#include "paged/staging.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace farmem::paged {
namespace {

TEST(StagingPoolTest, BuffersArePageAlignedAndReused) {
  StagingPool pool(4);
  uint8_t* a = pool.get(65536);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  EXPECT_EQ(pool.outstanding(), 1u);
  pool.put(a, 65536);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.free_count(65536), 1u);
  EXPECT_EQ(pool.get(65536), a);  // the free one comes back
  EXPECT_EQ(pool.free_count(65536), 0u);
  uint8_t* b = pool.get(4096);  // another size: a list of its own
  EXPECT_NE(b, a);
  EXPECT_EQ(pool.outstanding(), 2u);
  pool.put(b, 4096);
  pool.put(a, 65536);
  EXPECT_EQ(pool.free_count(4096), 1u);
  EXPECT_EQ(pool.free_count(65536), 1u);
}

TEST(StagingPoolTest, KeepsTwiceMaxInflightFreeBuffersPerSize) {
  StagingPool pool(3);
  EXPECT_EQ(pool.keep(), 6u);
  std::vector<uint8_t*> got;
  for (int i = 0; i < 10; ++i) got.push_back(pool.get(8192));
  EXPECT_EQ(pool.outstanding(), 10u);
  for (uint8_t* b : got) pool.put(b, 8192);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.free_count(8192), 6u);  // the other four were freed
}

TEST(StagingPoolTest, ZeroPageIsZeroSharedAndNotCounted) {
  StagingPool pool(1);
  uint8_t* z = pool.zero_page(16384);
  for (uint64_t i = 0; i < 16384; ++i) ASSERT_EQ(z[i], 0) << i;
  EXPECT_EQ(pool.zero_page(16384), z);
  EXPECT_NE(pool.zero_page(4096), z);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.free_count(16384), 0u);
}

TEST(StagingPoolDeathTest, PuttingBackWhatWasNotTakenAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        StagingPool pool(1);
        uint8_t* a = pool.get(4096);
        pool.put(a, 4096);
        pool.put(a, 4096);
      },
      "staging buffer put back that was not taken");
}

}  // namespace
}  // namespace farmem::paged
