// The huge page arithmetic the far graph backend decides with: how many pages a region holds at
// most, and the sysctl line that frees that many.
#include "farmem/paged/huge_pool.h"

#include <gtest/gtest.h>

namespace farmem::paged {
namespace {

constexpr uint64_t kHuge = 2ull << 20;

TEST(HugePool, ARegionNeedsItsPagesOrTheBudgetsWorthPlusTheFetchesInFlight) {
  // 270 MB on 2 MiB pages: 129 pages; unlimited budget: all of them.
  EXPECT_EQ(huge_pages_needed(270'000'000, kHuge, 0, 32, kHuge), 129u);
  // A 75 MB budget holds 35 pages, plus 32 in flight.
  EXPECT_EQ(huge_pages_needed(270'000'000, kHuge, 75'000'000, 32, kHuge), 67u);
  // A region smaller than the budget: its own pages.
  EXPECT_EQ(huge_pages_needed(3 * kHuge, kHuge, 1ull << 30, 32, kHuge), 3u);
  // 4 MiB pages count two huge pages each.
  EXPECT_EQ(huge_pages_needed(8 * kHuge, 2 * kHuge, 0, 32, kHuge), 8u);
  EXPECT_EQ(huge_pages_needed(1, kHuge, 0, 32, 0), 0u);  // no huge pages in this kernel
}

TEST(HugePool, TheSysctlLineKeepsThePagesInUse) {
  HugePool p;
  p.page_bytes = kHuge;
  p.total = 10;
  p.free = 4;  // 6 in use
  EXPECT_EQ(huge_pool_sysctl(p, 67), "sysctl -w vm.nr_hugepages=73");
  p.total = 0;
  p.free = 0;
  EXPECT_EQ(huge_pool_sysctl(p, 67), "sysctl -w vm.nr_hugepages=67");
}

TEST(HugePool, ThePoolIsReadFromTheKernel) {
  const HugePool p = huge_pool();
  EXPECT_LE(p.free, p.total);
  if (p.page_bytes != 0) {
    EXPECT_EQ(p.page_bytes & (p.page_bytes - 1), 0u);  // a power of two
  }
}

}  // namespace
}  // namespace farmem::paged
