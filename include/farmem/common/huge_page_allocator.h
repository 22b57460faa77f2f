// HugePageAllocator<T>: a std allocator whose large blocks may be backed by transparent huge
// pages.
//
// Blocks of at least 2 MiB are 2 MiB-aligned and advised MADV_HUGEPAGE (effective when THP is
// "madvise" or "always"; a hint, never an error); smaller blocks come from operator new. For
// big tables read at random (far containers' chunk tables, entry tables), where a TLB miss per
// lookup costs as much as the lookup. Throws std::bad_alloc like std::allocator.
// Thread safety: stateless.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace farmem {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// n bytes; 2 MiB-aligned and advised for huge pages when n >= kHugePageBytes.
inline void* allocate_maybe_huge(size_t n) {
  if (n < kHugePageBytes) return ::operator new(n);
  const size_t rounded = (n + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
  (void)::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}
inline void free_maybe_huge(void* p, size_t n) {
  if (n < kHugePageBytes) {
    ::operator delete(p);
  } else {
    std::free(p);
  }
}

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: allocator conversion
  T* allocate(size_t n) { return static_cast<T*>(allocate_maybe_huge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { free_maybe_huge(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace farmem
