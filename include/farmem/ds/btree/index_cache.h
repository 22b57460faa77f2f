// IndexCache: a handle's cache of the tree's level-1 pages (the parents of leaves), Sherman's
// index cache.
//
// Entries are copies of whole page images keyed by their key range [low, high); a lookup finds
// the cached page whose range covers a key and returns the child (leaf) address for it, so a
// warm lookup reads one page. Entries are hints: the reader checks the leaf's fences and goes
// back to the root (and drops the entry) when they do not cover the key. Bounded by a byte
// budget (page bytes per entry plus bookkeeping); over it, the least recently used of a few
// sampled entries is evicted (Sherman samples two). Inserting a page drops the cached pages its
// range overlaps (older copies). The ranges are kept in a sorted array searched by the keys'
// first 8 bytes, then byte by byte.
// Thread safety: one handle, one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/global_address.h"

namespace farmem::ds::btree {

struct IndexCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;
  uint64_t invalidations = 0;  // entries dropped because they led to a page not covering a key
};

class IndexCache {
 public:
  IndexCache(uint32_t page_bytes, uint64_t tree_id, uint64_t budget_bytes)
      : page_bytes_(page_bytes), tree_id_(tree_id), budget_(budget_bytes) {}

  // The leaf covering key according to the cached level-1 page covering it, or null.
  GlobalAddress leaf_for(std::string_view key);
  // Caches a validated level-1 page image (page_bytes) read from `addr`.
  void insert(GlobalAddress addr, const char* image);
  // Drops the cached page covering key (it led to a stale leaf).
  void invalidate(std::string_view key);
  void clear();
  uint64_t bytes() const { return order_.size() * entry_bytes(); }
  size_t entries() const { return order_.size(); }
  const IndexCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    std::string image;
    std::string low;  // "" = -inf
    std::string high;
    bool high_infinite = false;
    uint64_t used = 0;  // tick of the last hit or insert
  };
  struct Slot {
    uint64_t prefix;  // key_prefix(low)
    uint32_t entry;   // index into entries_
  };
  // The position in order_ of the entry whose range covers key, or order_.size().
  size_t covering(std::string_view key) const;
  // The first position whose low fence is > key.
  size_t upper(std::string_view key) const;
  void erase_at(size_t pos);
  void evict_one();
  uint64_t entry_bytes() const { return page_bytes_ + 128; }

  uint32_t page_bytes_;
  uint64_t tree_id_;
  uint64_t budget_;
  std::vector<Slot> order_;     // sorted by low fence
  std::vector<Entry> entries_;  // slots, reused through free_
  std::vector<uint32_t> free_;
  uint64_t tick_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ull;
  IndexCacheStats stats_;
};

}  // namespace farmem::ds::btree
