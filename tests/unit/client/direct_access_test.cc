// Unit tests for the direct-access primitives (src/client/direct_access.h): CPU reads, writes
// and atomics on memory as if it were a node's mapped region.
#include "client/direct_access.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace farmem::client {
namespace {

TEST(DirectAccessTest, ReadAndWriteCopyBytes) {
  alignas(8) std::array<uint8_t, 64> region{};
  const char text[] = "far memory, near at hand";
  direct::write(region.data() + 3, text, sizeof(text));  // unaligned: memcpy
  char back[sizeof(text)] = {};
  direct::read(back, region.data() + 3, sizeof(text));
  EXPECT_EQ(std::memcmp(back, text, sizeof(text)), 0);
}

TEST(DirectAccessTest, AlignedWordIsOneAccess) {
  alignas(8) std::array<uint8_t, 16> region{};
  const uint64_t v = 0x0123456789abcdefULL;
  direct::write(region.data() + 8, &v, 8);
  uint64_t got = 0;
  direct::read(&got, region.data() + 8, 8);
  EXPECT_EQ(got, v);
  EXPECT_TRUE(direct::word_aligned(region.data() + 8));
  EXPECT_FALSE(direct::word_aligned(region.data() + 4));
}

TEST(DirectAccessTest, CasSwapsOnlyOnMatchAndReturnsTheValueFound) {
  alignas(8) uint64_t word = 5;
  auto* p = reinterpret_cast<uint8_t*>(&word);
  EXPECT_EQ(direct::cas(p, 4, 9), 5u);  // mismatch: unchanged
  EXPECT_EQ(word, 5u);
  EXPECT_EQ(direct::cas(p, 5, 9), 5u);  // match: swapped
  EXPECT_EQ(word, 9u);
}

TEST(DirectAccessTest, FaaReturnsTheOldValue) {
  alignas(8) uint64_t word = 40;
  auto* p = reinterpret_cast<uint8_t*>(&word);
  EXPECT_EQ(direct::faa(p, 2), 40u);
  EXPECT_EQ(word, 42u);
}

TEST(DirectAccessTest, PrefetchTouchesNothing) {
  std::array<uint8_t, 4096> region{};
  direct::prefetch_source(region.data() + 1, region.size() - 1);  // more than kPrefetchLines
  direct::prefetch_source(region.data(), 1);
  EXPECT_EQ(region[0], 0);
}

}  // namespace
}  // namespace farmem::client
