// Unit tests for GlobalAddress packing.
#include "farmem/client/global_address.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_set>

namespace farmem {
namespace {

TEST(GlobalAddressTest, DefaultIsNull) {
  GlobalAddress a;
  EXPECT_TRUE(a.is_null());
  EXPECT_EQ(a.pack(), 0u);
  EXPECT_EQ(a.node(), 0);
  EXPECT_EQ(a.offset(), 0u);
  EXPECT_EQ(a, GlobalAddress::unpack(0));
}

TEST(GlobalAddressTest, NodeZeroOffsetZeroIsNullButOtherAddressesAreNot) {
  EXPECT_TRUE(GlobalAddress(0, 0).is_null());
  EXPECT_FALSE(GlobalAddress(0, 64).is_null());
  EXPECT_FALSE(GlobalAddress(1, 0).is_null());
}

TEST(GlobalAddressTest, PacksNodeInHighBitsAndOffsetInLowBits) {
  GlobalAddress a(0xBEEF, 0x123456789ABCull);
  EXPECT_EQ(a.pack(), 0xBEEF123456789ABCull);
  EXPECT_EQ(a.node(), 0xBEEF);
  EXPECT_EQ(a.offset(), 0x123456789ABCull);
}

TEST(GlobalAddressTest, UnpackInvertsPack) {
  for (uint16_t node : {uint16_t{0}, uint16_t{1}, uint16_t{300}, uint16_t{0xFFFF}}) {
    for (uint64_t off : {uint64_t{0}, uint64_t{64}, uint64_t{4096}, GlobalAddress::kOffsetMask}) {
      GlobalAddress a(node, off);
      GlobalAddress b = GlobalAddress::unpack(a.pack());
      EXPECT_EQ(a, b);
      EXPECT_EQ(b.node(), node);
      EXPECT_EQ(b.offset(), off);
    }
  }
}

TEST(GlobalAddressTest, OffsetIsTruncatedTo48Bits) {
  GlobalAddress a(5, (1ull << 48) | 0x40);
  EXPECT_EQ(a.node(), 5);
  EXPECT_EQ(a.offset(), 0x40u);
}

TEST(GlobalAddressTest, PlusAdvancesTheOffsetOnTheSameNode) {
  GlobalAddress a(7, 1000);
  GlobalAddress b = a + 24;
  EXPECT_EQ(b.node(), 7);
  EXPECT_EQ(b.offset(), 1024u);
  EXPECT_EQ(a.offset(), 1000u);  // unchanged
  EXPECT_EQ((a + 0), a);
  GlobalAddress top(7, GlobalAddress::kOffsetMask - 8);
  EXPECT_EQ((top + 8).offset(), GlobalAddress::kOffsetMask);
  EXPECT_EQ((top + 8).node(), 7);
}

TEST(GlobalAddressTest, EqualityComparesBothFields) {
  EXPECT_EQ(GlobalAddress(1, 64), GlobalAddress(1, 64));
  EXPECT_NE(GlobalAddress(1, 64), GlobalAddress(2, 64));
  EXPECT_NE(GlobalAddress(1, 64), GlobalAddress(1, 128));
}

TEST(GlobalAddressTest, HashDistinguishesAddresses) {
  std::unordered_set<GlobalAddress> set;
  for (uint16_t n = 0; n < 4; ++n) {
    for (uint64_t off = 0; off < 64 * 16; off += 64) set.insert(GlobalAddress(n, off));
  }
  EXPECT_EQ(set.size(), 4u * 16u);
  EXPECT_EQ(set.count(GlobalAddress(3, 64 * 15)), 1u);
  EXPECT_EQ(set.count(GlobalAddress(4, 0)), 0u);
  EXPECT_EQ(std::hash<GlobalAddress>()(GlobalAddress(2, 8)),
            std::hash<uint64_t>()(GlobalAddress(2, 8).pack()));
}

}  // namespace
}  // namespace farmem
