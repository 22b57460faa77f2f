// DirectMappedCache: a handle's bounded cache of far-memory locations (SMART's per-thread
// caches: the hash table's key -> slot cache, a tree's node cache).
//
// 2^log2 entries of a small trivially copyable Entry, indexed by the low bits of a caller's
// 64-bit key; a newer entry simply replaces an older one in its line. Entries are hints: a
// user re-validates what an entry points to before trusting it (a wrong or stale entry costs a
// wasted round trip, never a wrong answer). Memory: 2^log2 x sizeof(Entry), fixed at creation.
// Thread safety: one handle, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace farmem::ds {

template <typename Entry>
class DirectMappedCache {
  static_assert(std::is_trivially_copyable_v<Entry>);

 public:
  // log2 < 0 disables the cache (size 0).
  explicit DirectMappedCache(int log2 = -1)
      : entries_(log2 < 0 ? 0 : size_t{1} << log2),
        mask_(entries_.empty() ? 0 : entries_.size() - 1) {}

  bool enabled() const { return !entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // Precondition: enabled().
  Entry& at(uint64_t key) { return entries_[key & mask_]; }
  const Entry& at(uint64_t key) const { return entries_[key & mask_]; }
  // Starts loading the line of `key` (it is usually a cache miss).
  void prefetch(uint64_t key) const {
    if (enabled()) __builtin_prefetch(&entries_[key & mask_]);
  }
  void clear() {
    for (Entry& e : entries_) e = Entry{};
  }

 private:
  std::vector<Entry> entries_;
  size_t mask_;
};

}  // namespace farmem::ds
