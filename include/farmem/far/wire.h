// The far service's messages: remote compute on far containers, run by the memory node where
// the data is (docs/formats/far.md). Opcodes 320..383 (the key-value service owns 256..319).
//
// Every request names far memory as Ranges of elements in the receiving node's region (offset
// and element count); the node checks each range lies in [kRegionHeaderBytes, region end), that
// counts and sizes are within the bounds below, that parallel ranges have equal counts, and
// that no reserved field is set, before it reads anything. A request scans at most
// kMaxScanElements elements, so a handler's work is bounded (clients split larger jobs).
// Native little-endian structs pinned by static_asserts.
// Thread safety: plain data.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace farmem::far::wire {

inline constexpr uint16_t kFirstOpcode = 320;
inline constexpr uint16_t kLastOpcode = 383;

enum class Op : uint16_t {
  kAggregate = 320,   // count/sum/min/max of a column, optionally filtered and grouped
  kFilter = 321,      // bitmap of the elements matching a predicate
  kGather = 322,      // copy-by-index: dst[j] = src[idx[j]]
  kHashLookup = 323,  // a far hash table's lookup over a run of buckets
  kTopK = 324,        // the k largest elements with their positions
};

enum class ElemType : uint8_t { kU64 = 1, kI64 = 2, kF64 = 3 };
// An element (u64, i64 or f64) as the 64 bits the messages carry, and back.
template <typename T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) == 8, "far elements in messages are 64-bit");
  return std::bit_cast<uint64_t>(v);
}
template <typename T>
T from_bits(uint64_t bits) {
  static_assert(sizeof(T) == 8, "far elements in messages are 64-bit");
  return std::bit_cast<T>(bits);
}
enum class Pred : uint8_t {
  kNone = 0,
  kLt = 1,
  kLe = 2,
  kGt = 3,
  kGe = 4,
  kEq = 5,
  kNe = 6,
  kIn = 7
};
// kIn: a <= x < b. Operands are the element type's 8 bytes (u64, i64 or f64 bits).

inline constexpr uint32_t kMaxRanges = 1024;
inline constexpr uint32_t kMaxScanElements = 256 * 1024;
inline constexpr uint32_t kMaxGroups = 16;  // group keys 0..15 (u64 group column)
inline constexpr uint32_t kMaxGatherIndices = 4096;
inline constexpr uint32_t kMaxGatherElemBytes = 4096;
inline constexpr uint32_t kMaxHashBuckets = 8;
inline constexpr uint32_t kMaxHashKeyBytes = 256;
inline constexpr uint32_t kMaxHashValueBytes = 8192;
inline constexpr uint32_t kMaxTopK = 64;

// `count` 8-byte elements (gather: elem_bytes each) at `offset` in the node's region.
struct Range {
  uint64_t offset;
  uint32_t count;
  uint32_t reserved;  // 0
};
static_assert(sizeof(Range) == 16);

// kAggregate: AggregateRequest, n_ranges value Ranges, then n_ranges predicate Ranges if
// pred != kNone, then n_ranges group Ranges if grouped; parallel ranges have equal counts.
// Reply: 1 AggregateCell, or kMaxGroups cells when grouped (cell g: group key g; keys >=
// kMaxGroups are counted in no cell).
struct AggregateRequest {
  uint8_t type;       // ElemType of the value column
  uint8_t pred;       // Pred on the predicate column
  uint8_t pred_type;  // ElemType of the predicate column
  uint8_t grouped;    // 0 or 1
  uint32_t n_ranges;  // 1..kMaxRanges
  uint64_t a;         // predicate operands
  uint64_t b;
};
static_assert(sizeof(AggregateRequest) == 24);
struct AggregateCell {
  uint64_t count;
  uint64_t sum;  // u64: wrapping sum; i64: wrapping sum; f64: double bits
  uint64_t min;  // element-type bits; undefined when count is 0
  uint64_t max;
};
static_assert(sizeof(AggregateCell) == 32);

// kFilter: FilterRequest then n_ranges Ranges. Reply: FilterReply then ceil(total / 8) bytes,
// bit i (LSB first) set when element i of the ranges' concatenation matches.
struct FilterRequest {
  uint8_t type;
  uint8_t pred;  // not kNone
  uint16_t reserved;
  uint32_t n_ranges;
  uint64_t a;
  uint64_t b;
};
static_assert(sizeof(FilterRequest) == 24);
struct FilterReply {
  uint64_t total;
  uint64_t matched;
};
static_assert(sizeof(FilterReply) == 16);

// kGather: GatherRequest, n_src source Ranges (a logical array: their concatenation), n_idx
// u32 indices into it, n_dst destination Ranges (their concatenation receives the n_idx
// elements in order; total dst count == n_idx). Reply: empty.
struct GatherRequest {
  uint32_t elem_bytes;  // 1..kMaxGatherElemBytes
  uint32_t n_src;       // 1..kMaxRanges
  uint32_t n_idx;       // 1..kMaxGatherIndices
  uint32_t n_dst;       // 1..kMaxRanges
};
static_assert(sizeof(GatherRequest) == 16);

// kHashLookup: HashLookupRequest, key_bytes of key, n_buckets u64 bucket offsets (a probe run).
// A bucket: u32 count, u32 flags (bit 0: overflowed, an insert passed it because it was full),
// then `slots` slots of key_bytes + value_bytes. The node scans bucket after bucket: the key
// found -> kFound + value; a bucket that never overflowed -> kAbsent; the run ends -> kGoOn.
struct HashLookupRequest {
  uint16_t key_bytes;    // 1..kMaxHashKeyBytes
  uint16_t value_bytes;  // 0..kMaxHashValueBytes
  uint16_t slots;        // 1..1024
  uint16_t n_buckets;    // 1..kMaxHashBuckets
};
static_assert(sizeof(HashLookupRequest) == 8);
enum class HashOutcome : uint8_t { kAbsent = 0, kFound = 1, kGoOn = 2 };
struct HashLookupReply {
  uint8_t outcome;  // HashOutcome
  uint8_t reserved[3];
  uint32_t bucket;  // index in the run where it stopped
};
static_assert(sizeof(HashLookupReply) == 8);
struct BucketHeader {
  uint32_t count;
  uint32_t flags;
};
static_assert(sizeof(BucketHeader) == 8);
inline constexpr uint32_t kBucketOverflowed = 1;

// kTopK: TopKRequest then n_ranges Ranges. Reply: up to k TopKItems, largest first (ties: lower
// position first); position = index in the ranges' concatenation.
struct TopKRequest {
  uint8_t type;
  uint8_t reserved0;
  uint16_t k;  // 1..kMaxTopK
  uint32_t n_ranges;
};
static_assert(sizeof(TopKRequest) == 8);
struct TopKItem {
  uint64_t value;  // element bits
  uint64_t position;
};
static_assert(sizeof(TopKItem) == 16);

}  // namespace farmem::far::wire
