// Unit tests for the hash table's served procedures (ds/hash/served.h) on a region image built
// here: a get finds the key's committed slot and value, and an update swings it by CAS; stale
// buckets, frozen or pending slots, torn blocks, other keys with the same fingerprint, values too
// large for the slot and durable nodes send the client to the one-sided path; malformed
// arguments change nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/ds/common/kv_block.h"
#include "farmem/ds/hash/layout.h"
#include "farmem/ds/hash/served.h"
#include "farmem/ds/service.h"
#include "farmem/fabric/wire.h"

namespace farmem::ds::hash {
namespace {

constexpr uint64_t kRegionBytes = 1 << 20;
constexpr uint64_t kBucketsA = 8192;   // the key's first combined bucket
constexpr uint64_t kBucketsB = 16384;  // its second
constexpr uint64_t kBlockAt = 65536;

class HashProceduresTest : public ::testing::Test {
 protected:
  HashProceduresTest() {
    for (const auto& p : make_ds_service()->procedures()) EXPECT_TRUE(table_.add(p).ok());
    kh_ = hash_key(key_);
    // Four buckets of a subtable of local depth 0 (every key's).
    for (uint64_t base : {kBucketsA, kBucketsB}) {
      for (int j = 0; j < 2; ++j) {
        Bucket b{0, 0, {}};
        std::memcpy(region_.data() + base + j * kBucketBytes, &b, sizeof(b));
      }
    }
  }
  // Writes a block for key/value at `at` and returns the committed word naming it.
  uint64_t put_block(uint64_t at, std::string_view key, std::string_view value) {
    std::string block;
    encode_kv_block(key, value, 1, &block);
    std::memcpy(region_.data() + at, block.data(), block.size());
    return make_slot(hash_key(key).fp(), len_units(block.size()), at, false);
  }
  uint64_t& slot(uint64_t base, int bucket, int k) {
    return *reinterpret_cast<uint64_t*>(region_.data() + base + bucket * kBucketBytes +
                                        offsetof(Bucket, slots) + 8 * k);
  }
  Result<size_t> call(uint16_t id, uint64_t new_word, std::string_view key, bool durable = false,
                      uint64_t bucket_a = kBucketsA) {
    ServedLookupArgs a{
        {bucket_a, kBucketsB}, hash_key(key).h1, new_word, static_cast<uint32_t>(key.size()), 0};
    args_.assign(reinterpret_cast<const char*>(&a), sizeof(a));
    args_.append(key);
    out_.assign(out_.size(), 0);
    memnode::ProcedureCall c{region_.data(), kRegionBytes,
                             durable,        reinterpret_cast<const uint8_t*>(args_.data()),
                             args_.size(),   reinterpret_cast<uint8_t*>(out_.data()),
                             capacity_};
    return table_.find(id)->fn(c);
  }
  ServedLookupResult result() const {
    ServedLookupResult r;
    std::memcpy(&r, out_.data(), sizeof(r));
    return r;
  }
  ServedOutcome outcome() const { return static_cast<ServedOutcome>(result().outcome); }
  std::string value(size_t bytes) const {
    return std::string(reinterpret_cast<const char*>(out_.data()) + sizeof(ServedLookupResult),
                       bytes - sizeof(ServedLookupResult));
  }

  std::vector<uint8_t> region_ = std::vector<uint8_t>(kRegionBytes, 0);
  memnode::ProcedureTable table_;
  std::string key_ = "user:0042";
  KeyHash kh_{};
  std::string args_;
  std::vector<uint64_t> out_ = std::vector<uint64_t>(64);
  size_t capacity_ = 64 * 8;
};

TEST_F(HashProceduresTest, GetFindsTheCommittedSlotAndItsValue) {
  const uint64_t word = put_block(kBlockAt, key_, "the value");
  slot(kBucketsB, 1, 3) = word;
  auto n = call(kProcHashGet, 0, key_);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(outcome(), ServedOutcome::kFound);
  EXPECT_EQ(result().word, word);
  EXPECT_EQ(result().slot, kBucketsB + kBucketBytes + offsetof(Bucket, slots) + 24);
  EXPECT_EQ(result().block_bytes, 64u);
  EXPECT_EQ(value(*n), "the value");
  ASSERT_TRUE(call(kProcHashGet, 0, "user:0043").ok());
  EXPECT_EQ(outcome(), ServedOutcome::kAbsent);
}

TEST_F(HashProceduresTest, GetIgnoresPendingSlotsAndOtherKeysWithItsFingerprint) {
  // Another key's block under our fingerprint (a collision), and our block only pending.
  uint64_t other = put_block(kBlockAt, "someone else", "x");
  other = (other & ~(0xFFull << 56)) | (uint64_t{kh_.fp()} << 56);
  slot(kBucketsA, 0, 0) = other;
  slot(kBucketsA, 0, 1) = put_block(kBlockAt + 128, key_, "pending") | kSlotPendingBit;
  ASSERT_TRUE(call(kProcHashGet, 0, key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kAbsent);
}

TEST_F(HashProceduresTest, WhatTheNodeCannotSettleGoesOneSided) {
  slot(kBucketsA, 0, 0) = put_block(kBlockAt, key_, "v");
  // Stale: a bucket of another subtable (suffix does not match).
  auto* b = reinterpret_cast<Bucket*>(region_.data() + kBucketsB);
  b->suffix ^= 1;
  ASSERT_TRUE(call(kProcHashGet, 0, key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kStale);
  b->suffix ^= 1;
  // Frozen: a split froze some slot.
  slot(kBucketsB, 1, 6) = kSlotFrozenBit;
  ASSERT_TRUE(call(kProcHashGet, 0, key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kFrozen);
  slot(kBucketsB, 1, 6) = 0;
  // Torn: the block's checksum does not hold.
  region_[kBlockAt + 30] ^= 0xFF;
  ASSERT_TRUE(call(kProcHashGet, 0, key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kTorn);
  region_[kBlockAt + 30] ^= 0xFF;
  // Too large: the value does not fit the reply slot; its length is reported.
  slot(kBucketsA, 0, 0) = put_block(kBlockAt, key_, std::string(600, 'v'));
  ASSERT_TRUE(call(kProcHashGet, 0, key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kTooLarge);
  EXPECT_EQ(result().value_bytes, 600u);
}

TEST_F(HashProceduresTest, UpdateSwingsTheSlotAndReturnsTheOldWord) {
  const uint64_t old_word = put_block(kBlockAt, key_, "old");
  slot(kBucketsA, 1, 2) = old_word;
  const uint64_t new_word = put_block(kBlockAt + 256, key_, "new");
  ASSERT_TRUE(call(kProcHashUpdate, new_word, key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kReplaced);
  EXPECT_EQ(result().word, old_word);
  EXPECT_EQ(result().block_bytes, 64u);
  EXPECT_EQ(slot(kBucketsA, 1, 2), new_word);
  auto n = call(kProcHashGet, 0, key_);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(value(*n), "new");
  // Absent key: nothing changes.
  const uint64_t stranger = put_block(kBlockAt + 512, "stranger", "s");
  ASSERT_TRUE(call(kProcHashUpdate, stranger, "stranger").ok());
  EXPECT_EQ(outcome(), ServedOutcome::kAbsent);
  EXPECT_EQ(slot(kBucketsA, 1, 2), new_word);
}

TEST_F(HashProceduresTest, UpdateIsRefusedOnADurableNodeAndChangesNothing) {
  const uint64_t old_word = put_block(kBlockAt, key_, "old");
  slot(kBucketsA, 1, 2) = old_word;
  ASSERT_TRUE(call(kProcHashUpdate, put_block(kBlockAt + 256, key_, "new"), key_, true).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kRefused);
  EXPECT_EQ(slot(kBucketsA, 1, 2), old_word);
}

TEST_F(HashProceduresTest, MalformedArgumentsAreRefusedAndChangeNothing) {
  const uint64_t old_word = put_block(kBlockAt, key_, "old");
  slot(kBucketsA, 1, 2) = old_word;
  const uint64_t good = put_block(kBlockAt + 256, key_, "new");
  const uint64_t bad_words[] = {
      good | kSlotPendingBit,                       // an uncommitted word
      good | kSlotFrozenBit,                        // a frozen one
      good ^ (1ull << 56),                          // another fingerprint
      make_slot(kh_.fp(), 1, kRegionBytes, false),  // a block past the region
      make_slot(kh_.fp(), 1, 0, false),             // a block in the reserved header
  };
  for (uint64_t w : bad_words) {
    EXPECT_EQ(call(kProcHashUpdate, w, key_).status().code(), StatusCode::kInvalidArgument)
        << std::hex << w;
    EXPECT_EQ(slot(kBucketsA, 1, 2), old_word);
  }
  EXPECT_EQ(call(kProcHashGet, 0, key_, false, kRegionBytes - 64).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(call(kProcHashGet, 0, key_, false, kBucketsA + 8).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(call(kProcHashGet, good, key_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(kProcHashGet, 0, "").status().code(), StatusCode::kInvalidArgument);
  capacity_ = 16;
  EXPECT_EQ(call(kProcHashGet, 0, key_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HashProceduresTest, InsertClaimsAndCommitsAFreeSlot) {
  const uint64_t word = put_block(kBlockAt, key_, "fresh");
  ASSERT_TRUE(call(kProcHashInsert, word, key_).ok());
  ASSERT_EQ(outcome(), ServedOutcome::kInserted);
  const uint64_t at = result().slot;
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(region_.data() + at), word);
  auto n = call(kProcHashGet, 0, key_);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(outcome(), ServedOutcome::kFound);
  EXPECT_EQ(value(*n), "fresh");
  // Again: the key exists, and no second slot is claimed.
  ASSERT_TRUE(call(kProcHashInsert, put_block(kBlockAt + 256, key_, "again"), key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kExists);
  int used = 0;
  for (uint64_t base : {kBucketsA, kBucketsB}) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) used += slot(base, j, k) != 0;
    }
  }
  EXPECT_EQ(used, 1);
}

TEST_F(HashProceduresTest, InsertLeavesRivalsFullBucketsAndDurableNodesToTheClient) {
  // A rival's pending claim of the key: the client's path waits for it; nothing is claimed.
  const uint64_t rival = put_block(kBlockAt, key_, "rival") | kSlotPendingBit;
  slot(kBucketsA, 0, 0) = rival;
  ASSERT_TRUE(call(kProcHashInsert, put_block(kBlockAt + 256, key_, "mine"), key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kContended);
  EXPECT_EQ(slot(kBucketsA, 0, 0), rival);
  slot(kBucketsA, 0, 0) = 0;
  // A durable node: refused, nothing claimed.
  ASSERT_TRUE(call(kProcHashInsert, put_block(kBlockAt + 256, key_, "mine"), key_, true).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kRefused);
  // Every slot of both buckets taken by other keys: the client splits.
  const uint64_t other = put_block(kBlockAt + 512, "other", "o");
  for (uint64_t base : {kBucketsA, kBucketsB}) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) slot(base, j, k) = other;
    }
  }
  ASSERT_TRUE(call(kProcHashInsert, put_block(kBlockAt + 256, key_, "mine"), key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kFull);
  // A frozen slot (a split under way): nothing claimed either.
  slot(kBucketsB, 1, 6) = kSlotFrozenBit;
  slot(kBucketsB, 1, 5) = 0;
  ASSERT_TRUE(call(kProcHashInsert, put_block(kBlockAt + 256, key_, "mine"), key_).ok());
  EXPECT_EQ(outcome(), ServedOutcome::kFrozen);
  EXPECT_EQ(slot(kBucketsB, 1, 5), 0u);
}

}  // namespace
}  // namespace farmem::ds::hash
