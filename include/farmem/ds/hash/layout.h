// Remote layout of the one-sided hash table (RACE design; SMART-HT). Byte-level spec:
// docs/formats/hash_table/layout.md. Everything is little-endian and lives in memory-node regions;
// only the owning shard's node holds a shard's directory, subtables and KV blocks, all owned
// by the table's object on that node (ds/common/far_object.h).
//
//   TableMeta      64 B + 8 B per shard (packed GlobalAddress of each shard's directory)
//   Directory      64 B header {depth, epoch, lock, split intent} + 8 B per entry, 2^kMaxDepth
//   Subtable       64 B header {lock, depth, suffix, new halves} + groups of 3 buckets
//                  [main even, shared overflow, main odd]
//   Bucket         64 B: header {local_depth u32, suffix u32} + 7 slots
//   Slot           8 B: fp:8 | pending:1 | len:7 | offset:48 with bit 0 = frozen  (0 = empty)
//   KV block       ds/common/kv_block.h: {checksum, key_bytes, value_bytes, owner, key, value}
//
// Growth: a full subtable is split by the client that finds it full: it takes the subtable's
// lease lock, freezes every slot (bit 0), copies the committed ones into two new subtables one
// depth deeper, records them in the old header, and publishes them under the directory's lease
// lock with an intent record, so that whoever takes over a lock from a dead holder can finish
// (or undo) the split from what is in far memory. See docs/formats/hash_table/split.md.
//
// Thread safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "farmem/ds/common/kv_block.h"

namespace farmem::ds::hash {

inline constexpr uint64_t kTableMagic = 0x3154485341484D46ull;  // "FMHASHT1"
inline constexpr uint32_t kLayoutVersion = 3;
inline constexpr uint32_t kBucketBytes = 64;
inline constexpr uint32_t kSlotsPerBucket = 7;
inline constexpr uint32_t kMaxDepth = 12;             // at most 4096 subtables per shard
inline constexpr uint32_t kBlockUnit = kKvBlockUnit;  // KV blocks are multiples of 64 B
inline constexpr uint32_t kMaxInlineUnits = 127;      // len field; 0 = "large, read header first"
inline constexpr uint32_t kMaxKeyBytes = 64 * 1024;
inline constexpr uint32_t kMaxValueBytes = 256 * 1024;

struct TableMeta {
  uint64_t magic;              // kTableMagic
  uint32_t version;            // kLayoutVersion
  uint32_t shards;             // one per memory node at creation
  uint32_t main_buckets_log2;  // main buckets per subtable = 2^this
  uint32_t initial_depth;      // subtables per shard at creation = 2^this
  uint32_t max_depth;          // splits stop at this local depth (initial_depth..kMaxDepth)
  uint32_t reserved0;
  uint64_t reserved[4];
  // followed by uint64_t directory[shards]: packed GlobalAddress of each shard's directory
};
static_assert(sizeof(TableMeta) == 64);
static_assert(offsetof(TableMeta, max_depth) == 24);
static_assert(std::is_trivially_copyable_v<TableMeta>);

struct DirectoryHeader {
  uint64_t global_depth;  // bits 0..31 depth (the rest 0)
  uint64_t epoch;         // +1 at every change of the entries
  uint64_t lock;          // lease lock: 0 or the publishing splitter's session id
  // Split intent, written under the lock before any entry changes and cleared after the
  // header: whoever takes the lock over from a dead holder redoes it (idempotent).
  uint64_t intent_sub;    // offset of the subtable being split, 0 = no intent
  uint64_t intent_half0;  // offsets of its two halves
  uint64_t intent_half1;
  uint64_t intent_dx;  // the split subtable's local depth << 32 | suffix
  uint64_t reserved;
  // followed by uint64_t entry[1 << kMaxDepth]
};
static_assert(sizeof(DirectoryHeader) == 64);
static_assert(offsetof(DirectoryHeader, epoch) == 8);
static_assert(offsetof(DirectoryHeader, lock) == 16);
static_assert(offsetof(DirectoryHeader, intent_sub) == 24);
inline constexpr uint32_t directory_depth(uint64_t word) {
  return static_cast<uint32_t>(word & 0xFFFFFFFFu);
}

// Directory entry: subtable offset (in the shard node's region) | local_depth << 48.
inline constexpr uint64_t dir_entry(uint64_t subtable_offset, uint32_t local_depth) {
  return (subtable_offset & ((1ull << 48) - 1)) | (static_cast<uint64_t>(local_depth & 0xFF) << 48);
}
inline constexpr uint64_t dir_entry_offset(uint64_t e) { return e & ((1ull << 48) - 1); }
inline constexpr uint32_t dir_entry_depth(uint64_t e) {
  return static_cast<uint32_t>((e >> 48) & 0xFF);
}

struct SubtableHeader {
  uint64_t lock;  // lease lock: 0 = live; else the splitter's session id (held for good
                  // once the split is published: the subtable is retired)
  uint32_t local_depth;
  uint32_t suffix;
  uint64_t half0;    // offsets of the two new subtables, written once they are complete
  uint64_t half1;    // (0 until then)
  uint64_t retired;  // 1 once the split is published and this subtable awaits its free
  uint64_t reserved[3];
};
static_assert(sizeof(SubtableHeader) == 64);
static_assert(offsetof(SubtableHeader, half0) == 16);
static_assert(offsetof(SubtableHeader, retired) == 32);

struct Bucket {
  uint32_t local_depth;
  uint32_t suffix;
  uint64_t slots[kSlotsPerBucket];
};
static_assert(sizeof(Bucket) == kBucketBytes);
static_assert(offsetof(Bucket, slots) == 8);

// Slot word. Blocks are 64-byte aligned, so the offset's low 6 bits are free: bit 0 marks a
// slot frozen by a split (no CAS from a live word can succeed on it any more). On a durable
// node, bit 1 marks a committed word its writer has not yet persisted and bit 2 a committed key
// being erased (persisted, then 0): whoever meets either persists the slot and clears it
// ("settles" it) before acting on what it saw, so no one acts on a write a crash could lose.
inline constexpr uint64_t kSlotPendingBit = 1ull << 55;
inline constexpr uint64_t kSlotFrozenBit = 1ull;
inline constexpr uint64_t kSlotUnstableBit = 1ull << 1;
inline constexpr uint64_t kSlotErasingBit = 1ull << 2;
inline constexpr uint64_t kSlotOffsetMask = ((1ull << 48) - 1) & ~uint64_t{kBlockUnit - 1};
inline constexpr uint64_t make_slot(uint8_t fp, uint32_t len_units, uint64_t offset, bool pending) {
  return (static_cast<uint64_t>(fp) << 56) | (pending ? kSlotPendingBit : 0) |
         (static_cast<uint64_t>(len_units & 0x7F) << 48) | (offset & kSlotOffsetMask);
}
// The slot's len field for a block of `bytes`: its size in 64-byte units, or 0 ("large: read
// its header first") when it does not fit the field.
inline constexpr uint32_t len_units(uint64_t bytes) {
  return bytes / kBlockUnit <= kMaxInlineUnits ? static_cast<uint32_t>(bytes / kBlockUnit) : 0;
}
inline constexpr uint8_t slot_fp(uint64_t s) { return static_cast<uint8_t>(s >> 56); }
inline constexpr bool slot_pending(uint64_t s) { return (s & kSlotPendingBit) != 0; }
inline constexpr bool slot_frozen(uint64_t s) { return (s & kSlotFrozenBit) != 0; }
// A word that names a block (committed or pending), frozen or not.
inline constexpr bool slot_used(uint64_t s) { return (s & ~kSlotFrozenBit) != 0; }
inline constexpr uint32_t slot_len_units(uint64_t s) {
  return static_cast<uint32_t>((s >> 48) & 0x7F);
}
inline constexpr uint64_t slot_offset(uint64_t s) { return s & kSlotOffsetMask; }
// A word a writer has not settled yet (see above), and what settling makes of it.
inline constexpr bool slot_settling(uint64_t s) {
  return (s & (kSlotUnstableBit | kSlotErasingBit)) != 0;
}
inline constexpr uint64_t slot_settled(uint64_t s) {
  return (s & kSlotErasingBit) != 0 ? 0 : s & ~kSlotUnstableBit;
}
static_assert(slot_offset(make_slot(0xAB, 3, 0x123440, false) | kSlotUnstableBit) == 0x123440);
static_assert(slot_settled(make_slot(1, 3, 64, false) | kSlotUnstableBit) ==
              make_slot(1, 3, 64, false));
static_assert(slot_settled(make_slot(1, 3, 64, false) | kSlotErasingBit) == 0);
static_assert(!slot_settling(make_slot(0xFF, 127, ~0ull, true) | kSlotFrozenBit));
static_assert(slot_offset(make_slot(0xAB, 3, 0x123440, true)) == 0x123440);
static_assert(slot_len_units(make_slot(0xAB, 3, 0x123440, true)) == 3);
static_assert(slot_fp(make_slot(0xAB, 3, 0x123440, true)) == 0xAB);
static_assert(slot_pending(make_slot(0xAB, 3, 0x123440, true)));
static_assert(!slot_frozen(make_slot(0xFF, 127, ~0ull, true)));
static_assert(slot_offset(make_slot(0xAB, 3, 0x123440, false) | kSlotFrozenBit) == 0x123440);
static_assert(slot_used(make_slot(0, 1, 64, false)) && !slot_used(kSlotFrozenBit) && !slot_used(0));

inline constexpr uint64_t block_bytes(uint64_t key_bytes, uint64_t value_bytes) {
  return kv_block_bytes(key_bytes, value_bytes);
}

// Geometry of a subtable with 2^main_log2 main buckets.
inline constexpr uint64_t subtable_buckets(uint32_t main_log2) {
  return (1ull << main_log2) / 2 * 3;
}
inline constexpr uint64_t subtable_bytes(uint32_t main_log2) {
  return sizeof(SubtableHeader) + subtable_buckets(main_log2) * kBucketBytes;
}
// Offset (from the subtable start) of the 128-byte combined bucket of main bucket `i`:
// even i -> [main, overflow], odd i -> [overflow, main].
inline constexpr uint64_t combined_bucket_offset(uint64_t i) {
  return sizeof(SubtableHeader) + ((i >> 1) * 3 + (i & 1)) * kBucketBytes;
}
static_assert(combined_bucket_offset(0) == 64 && combined_bucket_offset(1) == 128);
static_assert(combined_bucket_offset(2) == 64 + 3 * 64);
// Offset (from the subtable start) of slot `slot` of bucket `bucket` (buckets in address order).
inline constexpr uint64_t subtable_slot_offset(uint64_t bucket, uint32_t slot) {
  return sizeof(SubtableHeader) + bucket * kBucketBytes + offsetof(Bucket, slots) + 8ull * slot;
}
static_assert(subtable_slot_offset(1, 2) == 64 + 64 + 8 + 16);

// The low `depth` bits: a subtable's suffix is kh.h1 & suffix_mask(local_depth).
inline constexpr uint64_t suffix_mask(uint32_t depth) {
  return depth >= 64 ? ~0ull : (1ull << depth) - 1;
}

// Hash of a key: two independent 64-bit halves of XXH3-128.
struct KeyHash {
  uint64_t h1;  // suffix bits (low), first bucket (bits 24..), fingerprint (top byte)
  uint64_t h2;  // second bucket (low bits), shard (bits 32..)
  uint8_t fp() const { return static_cast<uint8_t>(h1 >> 56); }
};
KeyHash hash_key(std::string_view key);

}  // namespace farmem::ds::hash
