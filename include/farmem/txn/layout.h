// Remote layout of transactional tables (FORD's records in hash buckets). Byte-level spec:
// docs/formats/txn.md; everything little-endian, in memory-node regions, owned by the table's
// object on each node (ds/common/far_object.h).
//
//   TableMeta   64 B + 8 B per node (packed GlobalAddress of the node's bucket array), on the
//               root node of "txn/<name>"
//   Bucket      16 B header {lock, version} + kSlotsPerBucket slots, padded to 64 B
//   Slot        32 B header {lock, version, key, flags, reserved} + the record, padded to 8 B
//
// Lock words are 0 when free and otherwise the packed GlobalAddress of the holder's log slot
// (LogSlotHeader below). The lease: the log slot's owner_session (the coordinator's session on
// the log's node); once that session has ended the lock may be recovered from the log.
// Versions start at 0 and grow by one with every committed write of the slot (update, insert,
// erase) or of the bucket's key set (insert, erase).
//
// Placement: bucket b of a table over N nodes (sorted by node id) has replica r on node index
// (b + r) % N, at local index r * ceil(B / N) + b / N of that node's array. The primary is the
// lowest rank whose node is not marked in TableMeta::failed_nodes (rank 0 until a promotion).
// Thread safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace farmem::txn {

inline constexpr uint64_t kTableMagic = 0x4e58544d52414646ull;  // "FFARMTXN"
inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr uint32_t kSlotsPerBucket = 16;
inline constexpr uint32_t kMaxRecordBytes = 4096;
inline constexpr uint32_t kMaxNodes = 64;
inline constexpr uint32_t kSlotPresent = 1;  // SlotHeader::flags: the slot holds a live record

struct TableMeta {
  uint64_t magic;             // kTableMagic
  uint32_t layout_version;    // kLayoutVersion
  uint32_t record_bytes;      // 1..kMaxRecordBytes
  uint64_t buckets;           // B
  uint64_t buckets_per_node;  // ceil(B / N) buckets per replica rank on each node
  uint32_t slots_per_bucket;  // kSlotsPerBucket
  uint32_t replicas;          // 1..N
  uint32_t node_count;        // N: the packed array base addresses that follow
  uint32_t bucket_bytes;      // bucket_bytes(record_bytes)
  uint64_t seed;              // hash seed (derived from the name)
  uint64_t failed_nodes;      // bit i: node index i failed; its replicas are not used (promote)
};
static_assert(sizeof(TableMeta) == 64);
static_assert(offsetof(TableMeta, failed_nodes) == 56);
static_assert(offsetof(TableMeta, buckets) == 16 && offsetof(TableMeta, slots_per_bucket) == 32);
static_assert(offsetof(TableMeta, node_count) == 40 && offsetof(TableMeta, seed) == 48);
static_assert(std::is_trivially_copyable_v<TableMeta>);

struct BucketHeader {
  uint64_t lock;     // held by inserts and erases of a key of this bucket
  uint64_t version;  // +1 by every committed insert or erase in the bucket
};
static_assert(sizeof(BucketHeader) == 16);

struct SlotHeader {
  uint64_t lock;     // held by writers of the record
  uint64_t version;  // +1 by every committed write of the slot
  uint64_t key;      // meaningful when flags has kSlotPresent
  uint32_t flags;    // kSlotPresent
  uint32_t reserved;
};
static_assert(sizeof(SlotHeader) == 32);
static_assert(offsetof(SlotHeader, version) == 8 && offsetof(SlotHeader, key) == 16);
static_assert(offsetof(SlotHeader, flags) == 24);
static_assert(std::is_trivially_copyable_v<SlotHeader>);

// Lock words come first in buckets and slots. A commit writes a slot from its version on (its
// lock word stays: the image is slot_bytes - kSlotImageOffset bytes) and a bucket's version
// word alone.
inline constexpr uint64_t kLockWordBytes = sizeof(uint64_t);
inline constexpr uint64_t kSlotImageOffset = offsetof(SlotHeader, version);
inline constexpr uint64_t kBucketVersionOffset = offsetof(BucketHeader, version);
static_assert(offsetof(SlotHeader, lock) == 0 && offsetof(BucketHeader, lock) == 0);
static_assert(kSlotImageOffset == 8 && kBucketVersionOffset == 8);

inline constexpr uint64_t slot_bytes(uint32_t record_bytes) {
  return sizeof(SlotHeader) + (uint64_t{record_bytes} + 7) / 8 * 8;
}
inline constexpr uint64_t bucket_bytes(uint32_t record_bytes) {
  return (sizeof(BucketHeader) + kSlotsPerBucket * slot_bytes(record_bytes) + 63) / 64 * 64;
}
static_assert(slot_bytes(8) == 40 && bucket_bytes(8) == 704);
static_assert(slot_bytes(1) == 40 && bucket_bytes(4096) == 66112);

// Buckets for a table of `capacity` records over `nodes` nodes. There are no overflow chains,
// so an insert into a bucket whose kSlotsPerBucket slots are taken fails: the count is the
// fewest, from capacity / 4 up in steps of 1/16, for which the expected number of buckets
// holding more than kSlotsPerBucket keys at capacity (keys hashed uniformly: a Poisson tail)
// is below 1/100. 4 records per bucket for small tables, about 3 at 10^6, 2.5 at 10^7.
uint64_t bucket_count(uint64_t capacity, uint64_t nodes);

// The bucket of `key` (splitmix64 of key ^ seed, modulo buckets).
inline uint64_t bucket_of(uint64_t key, uint64_t seed, uint64_t buckets) {
  uint64_t z = key ^ seed;
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z % buckets;
}

// ---- coordinator logs (redo logs; docs/formats/txn.md "Logs") ----
// Each coordinator (TxnClient) owns an array of log slots on one node, owned by the persistent
// object "txn/logs". A slot is written once per committing transaction, before any record is
// written in place: header + entries, checksummed; state 1 = committing.
inline constexpr uint64_t kLogCommitting = 1;

struct LogSlotHeader {
  uint64_t owner_session;  // the coordinator's session id on the log's node (set at creation)
  uint64_t state;          // 0 idle, kLogCommitting
  uint64_t checksum;       // XXH3-64 of bytes [24, 64 + body_bytes)
  uint32_t body_bytes;     // bytes of entries after the header
  uint32_t entries;
  uint64_t txn_coordinator;
  uint64_t txn_sequence;
  uint64_t reserved0;
  uint64_t reserved1;
};
static_assert(sizeof(LogSlotHeader) == 64);
static_assert(offsetof(LogSlotHeader, state) == 8 && offsetof(LogSlotHeader, checksum) == 16);
static_assert(offsetof(LogSlotHeader, body_bytes) == 24 &&
              offsetof(LogSlotHeader, txn_coordinator) == 32);
// owner_session is written once, when the slot is created; a commit writes its log from the
// state word on. The checksum covers the bytes after it: [kLogChecksummedFrom, 64 + body_bytes).
inline constexpr uint64_t kLogOwnerOffset = offsetof(LogSlotHeader, owner_session);
inline constexpr uint64_t kLogStateOffset = offsetof(LogSlotHeader, state);
inline constexpr uint64_t kLogChecksumOffset = offsetof(LogSlotHeader, checksum);
inline constexpr uint64_t kLogChecksummedFrom = offsetof(LogSlotHeader, body_bytes);
static_assert(kLogOwnerOffset == 0 && kLogStateOffset == 8);
static_assert(kLogChecksumOffset == 16 && kLogChecksummedFrom == 24);

// One entry: the lock word the transaction holds, where its new image goes (one target per
// replica; none for a record only locked), then the image padded to 8 bytes.
struct LogEntryHeader {
  uint64_t lock_word;  // packed GlobalAddress of the primary's lock word
  uint32_t targets;    // packed GlobalAddresses that follow (0..replicas)
  uint32_t image_bytes;
};
static_assert(sizeof(LogEntryHeader) == 16);
inline constexpr uint64_t kLogTargetBytes = sizeof(uint64_t);  // one packed GlobalAddress
inline constexpr uint64_t log_entry_bytes(uint32_t targets, uint32_t image_bytes) {
  return sizeof(LogEntryHeader) + kLogTargetBytes * targets + (uint64_t{image_bytes} + 7) / 8 * 8;
}
static_assert(log_entry_bytes(2, 33) == 16 + 16 + 40);

// Where replica `rank` (0 = primary) of bucket b lives: node index (b + rank) % nodes, bucket
// index rank * buckets_per_node + b / nodes in that node's array.
struct Placement {
  uint32_t node_index;
  uint64_t local_bucket;
};
inline constexpr Placement placement(uint64_t b, uint32_t rank, uint32_t nodes,
                                     uint64_t buckets_per_node) {
  return Placement{static_cast<uint32_t>((b + rank) % nodes),
                   uint64_t{rank} * buckets_per_node + b / nodes};
}

// The primary's rank of bucket b: its lowest-rank replica on a node not in `failed` (bit per
// node index); `replicas` when every replica's node failed.
inline constexpr uint32_t primary_rank(uint64_t b, uint32_t replicas, uint32_t nodes,
                                       uint64_t failed) {
  for (uint32_t r = 0; r < replicas; ++r) {
    if (((failed >> ((b + r) % nodes)) & 1) == 0) return r;
  }
  return replicas;
}
static_assert(primary_rank(4, 2, 3, 0) == 0 && primary_rank(4, 2, 3, 0b010) == 1);
static_assert(primary_rank(4, 2, 3, 0b110) == 2);

}  // namespace farmem::txn
