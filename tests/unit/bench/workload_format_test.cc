// Unit tests for key formatting (format_key, key_index) and value formatting (fill_value,
// check_value, read_value_header).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "farmem/bench/workload/key_format.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/value_format.h"
#include "test_seed.h"

namespace farmem::bench::workload {
namespace {

using ::farmem::testing::test_seed;

uint64_t prefix_of(const char* key) {
  uint64_t v;
  std::memcpy(&v, key, 8);
  return v;
}

TEST(KeyFormatTest, InjectiveOverAMillionIndices) {
  constexpr uint64_t kCount = 1'000'000;
  std::vector<uint64_t> keys(kCount);
  char buf[8];
  for (uint64_t i = 0; i < kCount; ++i) {
    format_key(i, 8, buf);
    keys[i] = prefix_of(buf);
  }
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

TEST(KeyFormatTest, HasTheRequestedLengthAndZeroPadding) {
  for (size_t bytes : {8, 9, 16, 23, 24, 64, 1000}) {
    SCOPED_TRACE(bytes);
    for (uint64_t index : std::initializer_list<uint64_t>{0, 1, 12345, UINT64_MAX}) {
      std::vector<char> buf(bytes + 8, '\x5a');  // canary after the key
      format_key(index, bytes, buf.data());
      for (size_t i = bytes; i < bytes + 8; ++i) ASSERT_EQ(buf[i], '\x5a') << "overrun";
      for (size_t i = 8; i < bytes; ++i) ASSERT_EQ(buf[i], '\0');
      const std::string key = make_key(index, bytes);
      ASSERT_EQ(key.size(), bytes);
      EXPECT_EQ(std::memcmp(key.data(), buf.data(), bytes), 0);
      EXPECT_EQ(key_index(key.data()), index);
    }
  }
}

TEST(KeyFormatTest, IsLittleEndianScrambledIndex) {
  char buf[8];
  format_key(42, 8, buf);
  const uint64_t h = scramble_index(42);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<unsigned char>(buf[i]), (h >> (8 * i)) & 0xff);
}

TEST(KeyFormatTest, KeyIndexInvertsFormatKey) {
  char buf[16];
  for (uint64_t i = 0; i < 1'000'000; i += 7) {
    format_key(i, 16, buf);
    ASSERT_EQ(key_index(buf), i);
  }
  Rng rng(test_seed());
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t x = rng.next_u64();
    ASSERT_EQ(unscramble_index(scramble_index(x)), x);
    ASSERT_EQ(scramble_index(unscramble_index(x)), x);
  }
}

TEST(KeyFormatTest, ConsecutiveIndicesGiveUnrelatedNonZeroKeys) {
  uint64_t total_bits = 0;
  constexpr int kPairs = 10'000;
  for (uint64_t i = 0; i < kPairs; ++i) {
    const uint64_t a = scramble_index(i), b = scramble_index(i + 1);
    ASSERT_NE(a, 0u) << i;  // all-zero keys are reserved by some hash tables
    total_bits += std::popcount(a ^ b);
  }
  EXPECT_NEAR(static_cast<double>(total_bits) / kPairs, 32.0, 0.5);
  // Keys are not in index order.
  int ascending = 0;
  for (uint64_t i = 0; i < kPairs; ++i) ascending += scramble_index(i) < scramble_index(i + 1);
  EXPECT_NEAR(ascending, kPairs / 2, kPairs / 20);
}

TEST(KeyFormatTest, ValidateKeyBytes) {
  EXPECT_EQ(validate_key_bytes(0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(validate_key_bytes(7).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(validate_key_bytes(8).ok());
  EXPECT_TRUE(validate_key_bytes(kMinKeyBytes + 100).ok());
}

TEST(ValueFormatTest, RoundTripsThroughCheckValue) {
  for (size_t bytes : {0, 1, 7, 8, 9, 15, 16, 17, 24, 100, 1024, 4096}) {
    SCOPED_TRACE(bytes);
    for (uint64_t index : std::initializer_list<uint64_t>{0, 1, 999, UINT64_MAX}) {
      for (uint64_t version : {0ull, 1ull, 2ull, 1ull << 40}) {
        std::vector<char> buf(bytes + 8, '\x33');
        fill_value(index, version, bytes, buf.data());
        for (size_t i = bytes; i < bytes + 8; ++i) ASSERT_EQ(buf[i], '\x33') << "overrun";
        ASSERT_TRUE(check_value(index, version, bytes, buf.data()));
        if (bytes >= 8) {
          EXPECT_FALSE(check_value(index, version + 1, bytes, buf.data()));
          EXPECT_FALSE(check_value(index + 1, version, bytes, buf.data()));
        }
      }
    }
  }
}

TEST(ValueFormatTest, IsDeterministicAndDependsOnIndexAndVersion) {
  std::vector<char> a(256), b(256), c(256), d(256);
  fill_value(5, 3, a.size(), a.data());
  fill_value(5, 3, b.size(), b.data());
  fill_value(5, 4, c.size(), c.data());
  fill_value(6, 3, d.size(), d.data());
  EXPECT_EQ(a, b);
  // The filler (after the 16-byte header) differs almost everywhere.
  int same_c = 0, same_d = 0;
  for (size_t i = kValueHeaderBytes; i < a.size(); ++i) {
    same_c += a[i] == c[i];
    same_d += a[i] == d[i];
  }
  EXPECT_LT(same_c, 10);
  EXPECT_LT(same_d, 10);
  // A prefix of a longer value is not a valid shorter value's header-less form, but a longer
  // value starts with the same header and filler.
  std::vector<char> longer(300);
  fill_value(5, 3, longer.size(), longer.data());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), longer.begin()));
}

TEST(ValueFormatTest, DetectsEverySingleBitFlip) {
  constexpr size_t kBytes = 64;
  std::vector<char> buf(kBytes);
  fill_value(77, 9, kBytes, buf.data());
  for (size_t byte = 0; byte < kBytes; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      buf[byte] = static_cast<char>(buf[byte] ^ (1 << bit));
      ASSERT_FALSE(check_value(77, 9, kBytes, buf.data())) << byte << ":" << bit;
      buf[byte] = static_cast<char>(buf[byte] ^ (1 << bit));
    }
  }
  EXPECT_TRUE(check_value(77, 9, kBytes, buf.data()));
}

TEST(ValueFormatTest, HeaderNamesIndexAndVersion) {
  std::vector<char> buf(40);
  fill_value(0x0102030405060708ull, 42, buf.size(), buf.data());
  uint64_t index = 0, version = 0;
  ASSERT_TRUE(read_value_header(buf.data(), buf.size(), &index, &version));
  EXPECT_EQ(index, 0x0102030405060708ull);
  EXPECT_EQ(version, 42u);
  EXPECT_EQ(buf[0], '\x08');  // little-endian
  EXPECT_TRUE(check_value(index, version, buf.size(), buf.data()));

  fill_value(1, 2, 15, buf.data());
  index = version = 99;
  EXPECT_FALSE(read_value_header(buf.data(), 15, &index, &version));
  EXPECT_EQ(index, 99u);
  EXPECT_EQ(version, 99u);
}

}  // namespace
}  // namespace farmem::bench::workload
