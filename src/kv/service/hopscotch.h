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
// Thread safety: the pool's worker thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "allocator.h"
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
  static bool place(IndexBucket* tb, uint64_t n, uint64_t hash, uint64_t record, uint64_t epoch,
                    uint64_t* at);
  Status grow(uint64_t now_ns);

  RegionView region_;
  PoolAllocator& allocator_;
  uint64_t table_ = 0;  // region offset of the bucket array
  uint64_t slots_ = 0;  // a power of two
  uint64_t size_ = 0;
};

}  // namespace farmem::kv::service
