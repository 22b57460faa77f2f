// IndexCache: a handle's cache of the tree's level-1 pages (the parents of leaves), Sherman's
// index cache.
//
// Entries are copies of whole page images keyed by their key range [low, high); a lookup finds
// the cached page whose range covers a key and returns the child (leaf) address for it, so a
// warm lookup reads one page. Entries are hints: the reader checks the leaf's fences and goes
// back to the root (and drops the entry) when they do not cover the key. Bounded by a byte
// budget (page bytes per entry plus bookkeeping); the least recently used entries are evicted.
// Inserting a page drops the cached pages its range overlaps (older copies).
// Thread safety: one handle, one thread.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <string_view>

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
  uint64_t bytes() const { return bytes_; }
  size_t entries() const { return by_low_.size(); }
  const IndexCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    std::string image;
    std::string high;
    bool high_infinite = false;
    std::list<std::string>::iterator lru;  // position in lru_ (front = most recent)
  };
  using Map = std::map<std::string, Entry, std::less<>>;  // by low fence ("" = -inf)
  Map::iterator covering(std::string_view key);
  void erase(Map::iterator it);
  uint64_t entry_bytes() const { return page_bytes_ + 128; }

  uint32_t page_bytes_;
  uint64_t tree_id_;
  uint64_t budget_;
  uint64_t bytes_ = 0;
  Map by_low_;
  std::list<std::string> lru_;  // low fences, most recently used first
  IndexCacheStats stats_;
};

}  // namespace farmem::ds::btree
