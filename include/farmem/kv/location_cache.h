// LocationCache: a Store's bounded cache of where keys' records are (Storm's one-two-sided
// gets): (pool, key) -> the record's region offset, size and version, as the last get or put
// reply of this handle named them.
//
// Entries are hints: a get reads the cached record one-sidedly and accepts it only if the copy
// checks out for that key and version (kv/record.h); a stale entry costs one wasted read
// and the fallback to an RPC, never a wrong value. Direct-mapped over ds::DirectMappedCache:
// 2^log2 entries of 32 bytes, a newer entry replaces the one in its line. Keys are hashed
// with the pool's local id as seed, and the id is kept in the entry, so two pools never share
// an entry. Thread safety: one Store, one thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "farmem/ds/common/direct_mapped_cache.h"

namespace farmem::kv {

struct RecordLocation {
  uint64_t record = 0;  // region offset on the pool's node
  uint64_t version = 0;
  uint32_t record_bytes = 0;  // header + key + value
};

class LocationCache {
 public:
  // log2 < 0: no cache (every lookup misses).
  explicit LocationCache(int log2) : cache_(log2) {}

  bool enabled() const { return cache_.enabled(); }
  size_t size() const { return cache_.size(); }
  // The hash a lookup, store or forget of `key` in pool `pool_id` uses.
  static uint64_t key_hash(uint32_t pool_id, std::string_view key);

  bool lookup(uint32_t pool_id, uint64_t hash, RecordLocation* out) const {
    if (!enabled()) return false;
    const Entry& e = cache_.at(hash);
    if (e.tag != tag_of(hash) || e.pool_id != pool_id) return false;
    *out = RecordLocation{e.record, e.version, e.record_bytes};
    return true;
  }
  void prefetch(uint64_t hash) const { cache_.prefetch(hash); }
  void store(uint32_t pool_id, uint64_t hash, const RecordLocation& loc) {
    if (!enabled() || loc.record == 0 || loc.record_bytes == 0) return;
    cache_.at(hash) = Entry{tag_of(hash), loc.record, loc.version, loc.record_bytes, pool_id};
  }
  void forget(uint32_t pool_id, uint64_t hash) {
    if (!enabled()) return;
    Entry& e = cache_.at(hash);
    if (e.tag == tag_of(hash) && e.pool_id == pool_id) e = Entry{};
  }
  void clear() { cache_.clear(); }

 private:
  struct Entry {
    uint64_t tag;  // the key's hash with bit 0 set (0 = empty)
    uint64_t record;
    uint64_t version;
    uint32_t record_bytes;
    uint32_t pool_id;
  };
  static_assert(sizeof(Entry) == 32);
  static uint64_t tag_of(uint64_t hash) { return hash | 1; }
  ds::DirectMappedCache<Entry> cache_;
};

}  // namespace farmem::kv
