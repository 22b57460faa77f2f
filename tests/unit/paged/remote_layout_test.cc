// RemoteLayout: where a region's pages live on the memory nodes (docs/formats/paged.md).
#include <gtest/gtest.h>

#include "farmem/paged/page_source.h"

namespace farmem::paged {
namespace {

TEST(RemoteLayoutTest, StripesPagesRoundRobinOverNodes) {
  RemoteLayout l;
  l.page_bytes = 65536;
  l.page_count = 10;
  l.stripes = {GlobalAddress(0, 8192), GlobalAddress(1, 4096), GlobalAddress(2, 1 << 20)};
  EXPECT_EQ(l.page_address(0), GlobalAddress(0, 8192));
  EXPECT_EQ(l.page_address(1), GlobalAddress(1, 4096));
  EXPECT_EQ(l.page_address(5), GlobalAddress(2, (1 << 20) + 65536));
  EXPECT_EQ(l.page_address(9), GlobalAddress(0, 8192 + 3 * 65536));
  EXPECT_EQ(l.page_node(7), 1);
  // 10 pages over 3 nodes: 4, 3, 3.
  EXPECT_EQ(l.stripe_bytes(0), 4u * 65536);
  EXPECT_EQ(l.stripe_bytes(1), 3u * 65536);
  EXPECT_EQ(l.stripe_bytes(2), 3u * 65536);
}

TEST(RemoteLayoutTest, OneNodeHoldsEveryPageInOrder) {
  RemoteLayout l;
  l.page_bytes = 4096;
  l.page_count = 3;
  l.stripes = {GlobalAddress(4, 4096)};
  EXPECT_EQ(l.page_address(2), GlobalAddress(4, 4096 + 2 * 4096));
  EXPECT_EQ(l.stripe_bytes(0), 3u * 4096);
}

TEST(RemoteLayoutTest, AdviceNames) {
  EXPECT_EQ(advice_name(Advice::kRandom), "random");
  EXPECT_EQ(advice_name(Advice::kSequential), "sequential");
  EXPECT_EQ(advice_name(Advice::kStatic), "static");
}

}  // namespace
}  // namespace farmem::paged
