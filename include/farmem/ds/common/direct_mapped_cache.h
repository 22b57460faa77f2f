// DirectMappedCache: a handle's bounded cache of far-memory locations (SMART's per-thread
// caches: the hash table's key -> slot cache, a tree's node cache, the kv store's location cache).
//
// 2^log2 entries of a small trivially copyable Entry, indexed by the low bits of a caller's
// 64-bit key; a newer entry simply replaces an older one in its line. Entries are hints: a
// user re-validates what an entry points to before trusting it (a wrong or stale entry costs a
// wasted round trip, never a wrong answer). Memory: 2^log2 x sizeof(Entry), fixed at creation,
// zeroed; caches of 2 MiB and more ask for transparent huge pages (madvise), so that lookups at
// random lines do not miss the TLB as well as the CPU cache.
// Thread safety: one handle, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace farmem::ds {

namespace detail {
// Memory for a cache of `bytes` (asking for huge pages from 2 MiB on); throws bad_alloc.
void* allocate_cache(size_t bytes);
void free_cache(void* p, size_t bytes);
}  // namespace detail

template <typename Entry>
class DirectMappedCache {
  static_assert(std::is_trivially_copyable_v<Entry>);

 public:
  // log2 < 0 disables the cache (size 0).
  explicit DirectMappedCache(int log2 = -1)
      : size_(log2 < 0 ? 0 : size_t{1} << log2),
        mask_(size_ == 0 ? 0 : size_ - 1),
        entries_(size_ == 0 ? nullptr
                            : static_cast<Entry*>(detail::allocate_cache(size_ * sizeof(Entry)))) {
    for (size_t i = 0; i < size_; ++i) new (&entries_[i]) Entry{};
  }
  ~DirectMappedCache() {
    if (entries_ != nullptr) detail::free_cache(entries_, size_ * sizeof(Entry));
  }
  DirectMappedCache(const DirectMappedCache&) = delete;
  DirectMappedCache& operator=(const DirectMappedCache&) = delete;
  DirectMappedCache(DirectMappedCache&& o) noexcept
      : size_(std::exchange(o.size_, 0)),
        mask_(std::exchange(o.mask_, 0)),
        entries_(std::exchange(o.entries_, nullptr)) {}
  DirectMappedCache& operator=(DirectMappedCache&& o) noexcept {
    std::swap(size_, o.size_);
    std::swap(mask_, o.mask_);
    std::swap(entries_, o.entries_);
    return *this;
  }

  bool enabled() const { return size_ != 0; }
  size_t size() const { return size_; }
  // Precondition: enabled().
  Entry& at(uint64_t key) { return entries_[key & mask_]; }
  const Entry& at(uint64_t key) const { return entries_[key & mask_]; }
  // Starts loading the line of `key` (it is usually a cache miss).
  void prefetch(uint64_t key) const {
    if (enabled()) __builtin_prefetch(&entries_[key & mask_]);
  }
  void clear() {
    for (size_t i = 0; i < size_; ++i) entries_[i] = Entry{};
  }

 private:
  size_t size_;
  size_t mask_;
  Entry* entries_;
};

}  // namespace farmem::ds
