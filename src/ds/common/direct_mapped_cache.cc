#include "farmem/ds/common/direct_mapped_cache.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace farmem::ds::detail {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

void* allocate_cache(size_t bytes) {
  if (bytes < kHugePage) {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();  // set-up (a handle's creation) may throw
    return p;
  }
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
  // Before the first touch, so that the kernel backs it with huge pages where it can (a hint:
  // without transparent huge pages it is plain memory).
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void free_cache(void* p, size_t) { std::free(p); }

}  // namespace farmem::ds::detail
