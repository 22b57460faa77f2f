// The ADO undo log's bytes (src/kv/ado/undo_log.h): entries written by UndoWriter read back in
// order; an entry torn by a crash, of another invocation, or left by an earlier one ends the
// list; a cleared log is empty; a full block refuses; the block's header is recognised only for
// its own pool object.
#include "kv/ado/undo_log.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_seed.h"

namespace farmem::kv::ado {
namespace {

constexpr uint64_t kObject = 0x8000000000000007ull;
constexpr uint64_t kRegionBytes = 1 << 20;

class UndoLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    format_undo_block(block_.data(), block_.size(), kObject);
    writer_.attach(block_.data(), block_.size());
  }
  // Appends an entry restoring `text` at region offset `offset`.
  std::pair<uint64_t, uint64_t> add(uint64_t offset, const std::string& text) {
    auto r = writer_.append(offset, reinterpret_cast<const uint8_t*>(text.data()),
                            static_cast<uint32_t>(text.size()));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::pair<uint64_t, uint64_t>{};
  }
  static std::string old_of(const UndoEntry& e) {
    return std::string(reinterpret_cast<const char*>(e.old), e.bytes);
  }
  std::vector<uint8_t> block_ = std::vector<uint8_t>(kUndoBlockBytes);
  UndoWriter writer_;
};

TEST_F(UndoLogTest, EntriesReadBackInOrder) {
  EXPECT_EQ(undo_block_bytes(block_.data(), block_.size(), kObject), kUndoBlockBytes);
  EXPECT_EQ(undo_work(block_.data(), block_.size()), 0u) << "a new block holds no log";
  writer_.begin(41);
  auto first = add(4096, "abc");
  EXPECT_EQ(first.first, kUndoFirstEntry);
  EXPECT_EQ(first.second, undo_entry_bytes(3));
  add(8192, std::string(100, 'x'));
  add(4096, "later");
  EXPECT_EQ(writer_.entries(), 3u);
  const auto e = read_undo(block_.data(), block_.size(), 41, kRegionBytes);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].offset, 4096u);
  EXPECT_EQ(old_of(e[0]), "abc");
  EXPECT_EQ(old_of(e[1]), std::string(100, 'x'));
  EXPECT_EQ(old_of(e[2]), "later");
  EXPECT_EQ(e[1].at, kUndoFirstEntry + undo_entry_bytes(3));
  EXPECT_EQ(undo_work(block_.data(), block_.size()), 41u);
  EXPECT_EQ(read_undo(block_.data(), block_.size(), 0, kRegionBytes).size(), 3u)
      << "work id 0 takes the first entry's";
  EXPECT_TRUE(read_undo(block_.data(), block_.size(), 42, kRegionBytes).empty());
}

TEST_F(UndoLogTest, ATornEntryEndsTheList) {
  const uint64_t seed = testing::test_seed();
  std::mt19937_64 rng(seed);
  writer_.begin(7);
  std::vector<uint64_t> at, covered;  // each entry's start, and the bytes its checksum covers
  for (int i = 0; i < 6; ++i) {
    const std::string old(1 + rng() % 50, static_cast<char>('a' + i));
    at.push_back(add(64 * i, old).first);
    covered.push_back(sizeof(UndoEntryHeader) + old.size());
  }
  // A crash tore entry k: one byte of it (header or old bytes, not the padding) is not what
  // was written.
  const size_t k = rng() % at.size();
  const uint64_t byte = at[k] + rng() % covered[k];
  block_[byte] ^= 0x5A;
  const auto e = read_undo(block_.data(), block_.size(), 7, kRegionBytes);
  EXPECT_EQ(e.size(), k) << "seed " << seed << " entry " << k << " byte " << byte;
}

TEST_F(UndoLogTest, AnEarlierInvocationsEntriesAreNotRead) {
  writer_.begin(1);
  add(0, "one");
  add(64, "two");
  add(128, "three");
  clear_undo(block_.data(), block_.size());
  EXPECT_EQ(undo_work(block_.data(), block_.size()), 0u);
  EXPECT_TRUE(read_undo(block_.data(), block_.size(), 0, kRegionBytes).empty());
  // The next invocation writes one entry of the same size: the old second entry follows it, but
  // belongs to work 1.
  writer_.begin(2);
  add(0, "uno");
  const auto e = read_undo(block_.data(), block_.size(), 0, kRegionBytes);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(old_of(e[0]), "uno");
}

TEST_F(UndoLogTest, EntriesOutsideTheRegionAreDropped) {
  writer_.begin(3);
  add(10, "in");
  add(kRegionBytes - 2, "out");
  EXPECT_EQ(read_undo(block_.data(), block_.size(), 3, kRegionBytes).size(), 1u);
}

TEST_F(UndoLogTest, AFullBlockRefuses) {
  writer_.begin(9);
  const std::string big(60 * 1024, 'b');
  int added = 0;
  for (;; ++added) {
    auto r = writer_.append(0, reinterpret_cast<const uint8_t*>(big.data()),
                            static_cast<uint32_t>(big.size()));
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
      break;
    }
  }
  EXPECT_EQ(added, 4);
  EXPECT_EQ(read_undo(block_.data(), block_.size(), 9, kRegionBytes).size(), 4u);
  UndoWriter none;
  EXPECT_EQ(none.append(0, block_.data(), 1).status().code(), StatusCode::kUnavailable);
}

TEST_F(UndoLogTest, TheHeaderNamesItsObject) {
  EXPECT_EQ(undo_block_bytes(block_.data(), block_.size(), kObject + 1), 0u);
  EXPECT_EQ(undo_block_bytes(block_.data(), kUndoBlockBytes - 8, kObject), 0u)
      << "a block smaller than its header says";
  std::vector<uint8_t> zero(kUndoBlockBytes);
  EXPECT_EQ(undo_block_bytes(zero.data(), zero.size(), kObject), 0u);
  block_[3] ^= 1;
  EXPECT_EQ(undo_block_bytes(block_.data(), block_.size(), kObject), 0u);
}

}  // namespace
}  // namespace farmem::kv::ado
