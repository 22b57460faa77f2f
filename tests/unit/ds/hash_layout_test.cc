// The hash table's remote layout: slot-word encoding (with the frozen bit), directory words,
// key placement, and the worked examples of docs/formats/hash_table/layout.md.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ds/hash/geometry.h"
#include "farmem/ds/hash/layout.h"

namespace farmem::ds::hash {
namespace {

TEST(HashLayoutTest, SlotWordMatchesTheDocumentedExample) {
  uint64_t pending = make_slot(0xAB, 3, 0x123440, true);
  EXPECT_EQ(pending, 0xAB83000000123440ull);
  uint8_t bytes[8];
  std::memcpy(bytes, &pending, 8);
  const uint8_t expect[8] = {0x40, 0x34, 0x12, 0x00, 0x00, 0x00, 0x83, 0xAB};
  EXPECT_EQ(std::memcmp(bytes, expect, 8), 0);
  uint64_t committed = pending & ~kSlotPendingBit;
  EXPECT_EQ(committed, 0xAB03000000123440ull);
  EXPECT_EQ(committed | kSlotFrozenBit, 0xAB03000000123441ull);
}

TEST(HashLayoutTest, FrozenBitKeepsEveryOtherField) {
  for (uint64_t offset : {64ull, 4096ull, (1ull << 48) - 64}) {
    for (bool pending : {false, true}) {
      uint64_t w = make_slot(0x5C, 127, offset, pending);
      uint64_t f = w | kSlotFrozenBit;
      EXPECT_FALSE(slot_frozen(w));
      EXPECT_TRUE(slot_frozen(f));
      EXPECT_EQ(slot_offset(f), offset);
      EXPECT_EQ(slot_len_units(f), 127u);
      EXPECT_EQ(slot_fp(f), 0x5C);
      EXPECT_EQ(slot_pending(f), pending);
      EXPECT_TRUE(slot_used(f));
    }
  }
  // A frozen empty slot is the word 1: not used, not empty (no claim CAS from 0 succeeds).
  EXPECT_FALSE(slot_used(kSlotFrozenBit));
  EXPECT_TRUE(slot_frozen(kSlotFrozenBit));
  // Unaligned offsets lose their low bits instead of colliding with the frozen bit.
  EXPECT_FALSE(slot_frozen(make_slot(1, 1, 0x41, false)));
}

TEST(HashLayoutTest, DirectoryWordsAndEntries) {
  EXPECT_EQ(directory_depth(7), 7u);
  EXPECT_EQ(directory_depth((uint64_t{1} << 40) | 7), 7u);  // only the low 32 bits
  EXPECT_EQ(dir_entry(0x200000, 3), 0x0003000000200000ull);
  EXPECT_EQ(dir_entry_offset(dir_entry(0x200000, 3)), 0x200000u);
  EXPECT_EQ(dir_entry_depth(dir_entry(0x200000, 3)), 3u);
}

TEST(HashLayoutTest, DocumentedKeyAndBlockExamples) {
  KeyHash kh = hash_key("apple");
  EXPECT_EQ(kh.h1, 0x5CF5D97583AB91BBull);
  EXPECT_EQ(kh.h2, 0x5AC82BE78F916755ull);
  EXPECT_EQ(kh.fp(), 0x5C);
  EXPECT_EQ(block_bytes(5, 3), 64u);
  EXPECT_EQ(block_bytes(kMaxKeyBytes, kMaxValueBytes), 327744u);
  EXPECT_EQ(len_units(64), 1u);
  EXPECT_EQ(len_units(127 * 64), 127u);
  EXPECT_EQ(len_units(128 * 64), 0u);  // large: the reader fetches the header first
}

TEST(HashLayoutTest, BucketIndicesDoNotDependOnTheSuffixBits) {
  // A split moves a word to the same bucket index in the new subtable; that is only valid
  // because the bucket indices come from h1 bits 24.. and h2, never from the suffix bits 0..11.
  const uint32_t m = 14;
  for (int i = 0; i < 1000; ++i) {
    KeyHash kh = hash_key("key" + std::to_string(i));
    KeyHash other = kh;
    other.h1 ^= (1ull << kMaxDepth) - 1;  // flip every suffix bit
    EXPECT_EQ((kh.h1 >> 24) & ((1ull << m) - 1), (other.h1 >> 24) & ((1ull << m) - 1));
    EXPECT_EQ(kh.fp(), other.fp());
  }
  EXPECT_LE(kMaxDepth, 24u);
}

TEST(HashLayoutTest, BlockSlotWordNamesTheBlockWithItsLength) {
  const KeyHash kh{0xAB00000000000000ull, 0};
  const GlobalAddress block(3, 0x123440);
  const uint64_t pending = block_slot_word(kh, block, 3 * kBlockUnit, /*pending=*/true);
  EXPECT_EQ(pending, make_slot(0xAB, 3, 0x123440, true));
  const uint64_t committed = block_slot_word(kh, block, 3 * kBlockUnit, /*pending=*/false);
  EXPECT_EQ(committed, pending & ~kSlotPendingBit);
  // A block too large for the length field: 0, "read its header first".
  const uint64_t large = block_slot_word(kh, block, 200 * kBlockUnit, false);
  EXPECT_EQ(slot_len_units(large), 0u);
  EXPECT_EQ(slot_offset(large), 0x123440u);
}

TEST(HashLayoutTest, BlockSlotWordRefusesAMisalignedBlock) {
  // The offset's low 6 bits are not stored (bit 0 is the frozen mark): a block the word could
  // not name is a broken invariant, not an error to return.
  const KeyHash kh{0, 0};
  EXPECT_DEATH((void)block_slot_word(kh, GlobalAddress(3, 0x123448), kBlockUnit, true),
               "invariant failed");
}

TEST(HashLayoutTest, SuffixMaskKeepsTheLowDepthBits) {
  EXPECT_EQ(suffix_mask(0), 0u);
  EXPECT_EQ(suffix_mask(3), 7u);
  EXPECT_EQ(suffix_mask(kMaxDepth), (1ull << kMaxDepth) - 1);
  EXPECT_EQ(suffix_mask(64), ~0ull);
}

TEST(HashLayoutTest, FreshSubtableImageHasEveryBucketHeaderAndNoSlot) {
  const std::string image = subtable_image(2, 5, 19);
  ASSERT_EQ(image.size(), subtable_bytes(2));
  SubtableHeader sh;
  std::memcpy(&sh, image.data(), sizeof(sh));
  EXPECT_EQ(sh.lock, 0u);
  EXPECT_EQ(sh.local_depth, 5u);
  EXPECT_EQ(sh.suffix, 19u);
  for (uint64_t b = 0; b < subtable_buckets(2); ++b) {
    Bucket bk;
    std::memcpy(&bk, image.data() + sizeof(SubtableHeader) + b * kBucketBytes, sizeof(bk));
    EXPECT_EQ(bk.local_depth, 5u);
    EXPECT_EQ(bk.suffix, 19u);
    for (uint64_t w : bk.slots) EXPECT_EQ(w, 0u);
  }
}

}  // namespace
}  // namespace farmem::ds::hash
