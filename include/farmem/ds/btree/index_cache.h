// IndexCache: a handle's cache of the tree's level-1 pages (the parents of leaves), Sherman's
// index cache.
//
// Entries are the routing part of level-1 page images, keyed by their key range [low, high); a
// lookup finds the cached page whose range covers a key and returns the child (leaf) address for
// it, so a warm lookup reads one page. Entries are hints: the reader checks the leaf's fences
// and goes back to the root (and drops the entry) when they do not cover the key. Bounded by a
// byte budget (page bytes per entry plus bookkeeping: an entry's arrays are never larger than
// the page they were built from plus 128 bytes); over it, the least recently used of a few
// sampled entries is evicted (Sherman samples two). Inserting a page drops the cached pages its
// range overlaps (older copies).
// A lookup touches flat arrays of 8-byte key prefixes (the first 8 bytes, big-endian, as
// key_prefix): the entries' low fences (binary search) with a 32-byte route per entry beside
// them, then the chosen entry's separators (a linear count, whose loads do not wait for each
// other, up to 64 of them) and the child found; whole keys are compared only where prefixes
// are equal.
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
  uint64_t bytes() const { return routes_.size() * entry_bytes(); }
  size_t entries() const { return routes_.size(); }
  const IndexCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    // prefix of separator i at [i], then the children: child0 at [count], the child of
    // separator i at [count + 1 + i]. One allocation, so a lookup touches a few cache lines.
    std::vector<uint64_t> words;
    std::string keys;                // the separators, concatenated (for equal prefixes)
    std::vector<uint16_t> key_ends;  // end of separator i in keys
    std::string low;                 // "" = -inf
    std::string high;
    std::string_view key(uint32_t i) const {
      const uint32_t from = i == 0 ? 0 : key_ends[i - 1];
      return std::string_view(keys).substr(from, key_ends[i] - from);
    }
  };
  // What a lookup reads of an entry, kept in a flat array beside the low fences' prefixes so
  // that a lookup touches the entry's own memory only for its words (and for equal prefixes).
  struct alignas(32) Route {
    const uint64_t* words;  // entries_[entry].words.data()
    uint64_t high_prefix;   // key_prefix(high fence)
    uint64_t used;          // tick of the last hit or insert
    uint32_t entry;         // index into entries_
    uint16_t count;         // separators
    bool high_infinite;
  };
  static_assert(sizeof(Route) == 32);
  // The position in routes_ of the entry whose range covers key, or routes_.size().
  size_t covering(std::string_view key, uint64_t prefix) const;
  // The first position whose low fence is > key.
  size_t upper(std::string_view key, uint64_t prefix) const;
  // The child covering key in the entry at r: that of the last separator <= key, else child0.
  uint64_t child_for(const Route& r, std::string_view key, uint64_t prefix) const;
  void erase_at(size_t pos);
  void evict_one();
  uint64_t entry_bytes() const { return page_bytes_ + 128; }

  uint32_t page_bytes_;
  uint64_t tree_id_;
  uint64_t budget_;
  std::vector<uint64_t> low_prefixes_;  // key_prefix(low fence), sorted by low fence
  std::vector<Route> routes_;           // the entries, in the same order
  std::vector<Entry> entries_;          // slots, reused through free_
  std::vector<uint32_t> free_;
  uint64_t tick_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ull;
  IndexCacheStats stats_;
};

}  // namespace farmem::ds::btree
