// SlotCache: a coordinator's cache of where records are, key -> slot index in the key's bucket
// (a ds::DirectMappedCache of 2^cache_log2 entries, tagged by table). Entries are hints: a
// transaction checks the slot it reads or locks still holds the key, and searches the bucket
// when it does not (docs/formats/txn.md "Protocol", execution).
// Thread safety: the coordinator's thread only.
#pragma once

#include <cstdint>

#include "farmem/common/check.h"
#include "farmem/ds/common/direct_mapped_cache.h"
#include "farmem/txn/layout.h"
#include "farmem/txn/table.h"

namespace farmem::txn {

class SlotCache {
 public:
  // log2 < 0: no cache (find() never knows a slot).
  explicit SlotCache(int log2) : cache_(log2) {}

  // The slot `key` was last seen in, or kSlotsPerBucket when unknown.
  uint32_t find(const Table& t, uint64_t key) const {
    if (!cache_.enabled()) return kSlotsPerBucket;
    const Entry& e = cache_.at(line(t, key));
    if (e.slot_plus_one == 0 || e.key != key || e.tag != t.tag()) return kSlotsPerBucket;
    return e.slot_plus_one - 1;
  }
  void remember(const Table& t, uint64_t key, uint32_t slot) {
    FARMEM_ASSERT(slot < kSlotsPerBucket, "a cached slot is inside its bucket");
    if (!cache_.enabled()) return;
    cache_.at(line(t, key)) = Entry{key, t.tag(), slot + 1};
  }
  void forget(const Table& t, uint64_t key) {
    if (!cache_.enabled()) return;
    Entry& e = cache_.at(line(t, key));
    if (e.key == key && e.tag == t.tag()) e.slot_plus_one = 0;
  }

 private:
  struct Entry {
    uint64_t key;
    uint32_t tag;
    uint32_t slot_plus_one;  // 0: empty
  };
  static uint64_t line(const Table& t, uint64_t key) {
    return key * 0x9e3779b97f4a7c15ull ^ t.tag();
  }

  ds::DirectMappedCache<Entry> cache_;
};

}  // namespace farmem::txn
