#include "farmem/far/segment_pool.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <bit>

namespace farmem::far {

Result<std::unique_ptr<SegmentPool>> SegmentPool::create(uint64_t budget_bytes,
                                                         uint64_t segment_bytes) {
  if (!std::has_single_bit(segment_bytes) || segment_bytes < kMinSegmentBytes ||
      segment_bytes > kMaxSegmentBytes) {
    return InvalidArgument(
        fmt::format("segment size must be a power of two in {}..{} bytes, got {}", kMinSegmentBytes,
                    kMaxSegmentBytes, segment_bytes));
  }
  const uint64_t count = budget_bytes / segment_bytes;
  if (count < 4) {
    return InvalidArgument(fmt::format(
        "a local cache budget of {} bytes holds {} segments of {} bytes; at least 4 are needed",
        budget_bytes, count, segment_bytes));
  }
  if (count > (1u << 24)) return InvalidArgument("local cache budget holds too many segments");
  std::unique_ptr<SegmentPool> p(new SegmentPool());
  void* m = mmap(nullptr, count * segment_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    return ResourceExhausted(
        fmt::format("cannot map {} bytes of local cache", count * segment_bytes));
  }
  // Huge pages where the kernel allows them (THP "madvise"): the cache is dereferenced at
  // random, and a TLB miss per object would cost as much as the dereference itself.
  (void)madvise(m, count * segment_bytes, MADV_HUGEPAGE);
  p->base_ = static_cast<uint8_t*>(m);
  p->segment_bytes_ = segment_bytes;
  p->total_ = static_cast<uint32_t>(count);
  p->free_.reserve(count);
  // Handed out from the lowest address up, so a small working set touches few pages.
  for (uint64_t i = count; i-- > 0;) p->free_.push_back(p->base_ + i * segment_bytes);
  p->free_count_.store(p->total_);
  return p;
}

SegmentPool::~SegmentPool() {
  if (base_ != nullptr) munmap(base_, bytes());
}

uint8_t* SegmentPool::take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty()) return nullptr;
  uint8_t* s = free_.back();
  free_.pop_back();
  free_count_.store(static_cast<uint32_t>(free_.size()), std::memory_order_relaxed);
  return s;
}

void SegmentPool::give(uint8_t* segment) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(segment);
  free_count_.store(static_cast<uint32_t>(free_.size()), std::memory_order_relaxed);
}

}  // namespace farmem::far
