// KV blocks (ds/common/kv_block.h): encoding, validation, torn and short reads.
#include "farmem/ds/common/kv_block.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace farmem::ds {
namespace {

TEST(KvBlockTest, EncodedBlockValidatesAndNamesItsParts) {
  std::string b;
  encode_kv_block("apple", "red", 42, &b);
  ASSERT_EQ(b.size(), 64u);
  KvBlockView v;
  size_t need = 0;
  ASSERT_EQ(check_kv_block(b.data(), b.size(), 1024, 1024, &v, &need), BlockCheck::kOk);
  EXPECT_EQ(v.key, "apple");
  EXPECT_EQ(v.value, "red");
  EXPECT_EQ(v.owner, 42u);
  EXPECT_EQ(v.bytes, 64u);
}

TEST(KvBlockTest, DocumentedExampleChecksum) {
  // docs/formats/kv_block.md: "apple" -> "red", owner 42.
  unsigned char block[64] = {};
  uint32_t kb = 5, vb = 3;
  uint64_t owner = 42;
  std::memcpy(block + 8, &kb, 4);
  std::memcpy(block + 12, &vb, 4);
  std::memcpy(block + 16, &owner, 8);
  std::memcpy(block + 24, "applered", 8);
  const uint64_t sum = kv_block_checksum(block + 8, 24);
  std::string b;
  encode_kv_block("apple", "red", 42, &b);
  uint64_t stored;
  std::memcpy(&stored, b.data(), 8);
  EXPECT_EQ(stored, sum);
  EXPECT_EQ(0, std::memcmp(b.data() + 8, block + 8, 56));
  EXPECT_EQ(sum, 0xC10528526546EE0Full) << std::hex << sum;
}

TEST(KvBlockTest, AnyChangedByteReadsAsTorn) {
  std::string b;
  encode_kv_block("key", std::string(100, 'v'), 7, &b);
  for (size_t i = 0; i < 24 + 3 + 100; ++i) {
    std::string t = b;
    t[i] = static_cast<char>(t[i] ^ 0x40);
    KvBlockView v;
    size_t need = 0;
    BlockCheck c = check_kv_block(t.data(), t.size(), 1 << 16, 1 << 18, &v, &need);
    EXPECT_NE(c, BlockCheck::kOk) << "byte " << i;
  }
}

TEST(KvBlockTest, ShortReadAsksForTheWholeBlock) {
  std::string b;
  encode_kv_block("key", std::string(500, 'v'), 7, &b);
  KvBlockView v;
  size_t need = 0;
  EXPECT_EQ(check_kv_block(b.data(), 64, 1 << 16, 1 << 18, &v, &need), BlockCheck::kShort);
  EXPECT_EQ(need, b.size());
  EXPECT_EQ(check_kv_block(b.data(), 10, 1 << 16, 1 << 18, &v, &need), BlockCheck::kTorn);
  // Sizes beyond the caller's limits are torn, never a reason to read more.
  EXPECT_EQ(check_kv_block(b.data(), b.size(), 2, 1 << 18, &v, &need), BlockCheck::kTorn);
}

}  // namespace
}  // namespace farmem::ds
