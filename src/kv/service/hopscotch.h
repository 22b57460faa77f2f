// HopscotchIndex: a pool's primary index, a hopscotch hash table in pool memory (MCAS hstore).
//
// Buckets (32 B, docs/formats/kv.md "Primary index") hold a key's record offset, the key's
// XXH3-64 hash and its write epoch; the hop bitmap of bucket b says which of the 32 buckets
// b..b+31 (wrapping) hold keys whose home is b, so a lookup looks at most 32 buckets. An insert
// takes the nearest free bucket and, while it is too far from home, moves a nearer entry into it
// (displacement). When no free bucket fits, or the load passes 90%, the table doubles (a new
// array from the pool's allocator, every entry reinserted, the old array freed).
//
// The table lives in the region, which clients can write: every record offset read from it is
// bounds-checked before use, and inconsistent hop bits are skipped, never trusted into a crash.
// Bucket positions change when the table grows: do not keep one across an insert.
// On a durable node (set_dirty) every bucket it changes is marked, a grown table whole.
// Thread safety: the pool's worker thread only.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "allocator.h"
#include "dirty_ranges.h"
#include "farmem/common/check.h"
#include "farmem/common/result.h"
#include "region.h"

namespace farmem::kv::service {

struct IndexBucket {
  uint64_t record;    // region offset of the key's record; 0 = empty
  uint64_t hash;      // XXH3-64 (seed 0) of the key
  uint64_t epoch_ns;  // node clock of the value's last write
  uint32_t hop;       // bit i: bucket (this + i) % slots holds a key whose home is this bucket
  uint32_t reserved;  // 0
};
static_assert(sizeof(IndexBucket) == 32);

class HopscotchIndex {
 public:
  static constexpr uint32_t kNeighbourhood = 32;
  static constexpr uint64_t kMinSlots = 64;
  static constexpr uint64_t kNotFound = UINT64_MAX;

  HopscotchIndex(RegionView region, PoolAllocator& allocator)
      : region_(region), allocator_(allocator) {}

  // Allocates the first table, sized for `expected_count` keys (0: the minimum).
  Status init(uint64_t expected_count, uint64_t now_ns);
  // Marks every change in `dirty` from now on (durable node); `moved` runs when the table has
  // grown into a new array, before the old one is freed (its owner logs where the table is).
  void set_dirty(DirtyRanges* dirty, std::function<void()> moved) {
    dirty_ = dirty;
    moved_ = std::move(moved);
  }
  // Recovery: the table at `table` (`slots` buckets) as a crash left it. kInvalidArgument if it
  // is not a table inside the region. Then repair().
  Status adopt(uint64_t table, uint64_t slots);
  // Recovery: drops every second entry naming the same record and every entry `keep(bucket, i)`
  // refuses (keep is asked last: an entry it accepts stays), recomputes the hop bits and the size
  // (marking what changed). Returns entries dropped.
  template <typename F>
  uint64_t repair(F&& keep);
  // Marks bucket i as changed (the caller changed its record or epoch).
  void mark_bucket(uint64_t i) {
    if (dirty_ != nullptr) dirty_->mark(table_ + i * sizeof(IndexBucket), sizeof(IndexBucket));
  }
  static uint64_t hash_key(std::string_view key);

  // The bucket holding `key`, or kNotFound.
  uint64_t find(uint64_t hash, std::string_view key) const;
  // Precondition: i < slots() (a position find or insert gave).
  IndexBucket& bucket(uint64_t i) {
    FARMEM_ASSERT(i < slots_, "bucket positions are inside the table");
    return buckets()[i];
  }
  const IndexBucket& bucket(uint64_t i) const {
    FARMEM_ASSERT(i < slots_, "bucket positions are inside the table");
    return buckets()[i];
  }
  // Adds a key that is not in the table (the caller checked with find). Grows if needed;
  // kResourceExhausted if the pool cannot hold a bigger table. Returns the bucket.
  Result<uint64_t> insert(uint64_t hash, uint64_t record, uint64_t epoch_ns, uint64_t now_ns);
  void erase(uint64_t i);

  uint64_t size() const { return size_; }
  uint64_t slots() const { return slots_; }
  uint64_t table_offset() const { return table_; }
  // Calls f(bucket) for every entry.
  template <typename F>
  void for_each(F&& f) const {
    for (uint64_t i = 0; i < slots_; ++i) {
      if (buckets()[i].record != 0) f(buckets()[i]);
    }
  }
  // The key stored in a record, or empty if the record is not a valid place in the region.
  std::string_view key_of(uint64_t record) const;

 private:
  IndexBucket* buckets() const { return reinterpret_cast<IndexBucket*>(region_.at(table_)); }
  // A new table of n buckets (a power of two), zeroed, inside the region.
  Result<uint64_t> allocate_table(uint64_t n, uint64_t now_ns);
  // Places an entry in table (tb, n); false if no free bucket fits (the table must grow).
  // *span: the buckets home..home + *span - 1 (wrapping) are the ones it may have changed.
  static bool place(IndexBucket* tb, uint64_t n, uint64_t hash, uint64_t record, uint64_t epoch,
                    uint64_t* at, uint64_t* span);
  // Marks buckets [first, first + count) of the table, wrapping.
  void mark_span(uint64_t first, uint64_t count);
  Status grow(uint64_t now_ns);

  RegionView region_;
  PoolAllocator& allocator_;
  uint64_t table_ = 0;  // region offset of the bucket array
  uint64_t slots_ = 0;  // a power of two
  uint64_t size_ = 0;
  DirtyRanges* dirty_ = nullptr;
  std::function<void()> moved_;
};

template <typename F>
uint64_t HopscotchIndex::repair(F&& keep) {
  IndexBucket* tb = buckets();
  const uint64_t mask = slots_ - 1;
  std::vector<uint32_t> hop(slots_, 0);
  uint64_t dropped = 0;
  size_ = 0;
  constexpr uint64_t kAhead = 16;  // records are read in bucket order, i.e. at random: prefetch
  for (uint64_t i = 0; i < slots_; ++i) {
    if (i + kAhead < slots_) {
      if (const uint8_t* next = region_.ptr(tb[i + kAhead].record, 64); next != nullptr) {
        __builtin_prefetch(next);
      }
    }
    IndexBucket& b = tb[i];
    if (b.record == 0) continue;
    const uint64_t home = b.hash & mask;
    const uint64_t dist = (i - home) & mask;
    bool ok = dist < kNeighbourhood;
    for (uint32_t h = hop[home]; ok && h != 0; h &= h - 1) {
      ok = tb[(home + static_cast<uint64_t>(std::countr_zero(h))) & mask].record != b.record;
    }
    ok = ok && keep(b, i);  // last: what it keeps stays
    if (!ok) {
      b.record = 0;
      mark_bucket(i);
      ++dropped;
      continue;
    }
    hop[home] |= 1u << dist;
    ++size_;
  }
  for (uint64_t i = 0; i < slots_; ++i) {
    if (tb[i].hop == hop[i]) continue;
    tb[i].hop = hop[i];
    mark_bucket(i);
  }
  return dropped;
}

}  // namespace farmem::kv::service
