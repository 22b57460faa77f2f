#include "farmem/far/segment_pool.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <bit>

#include "farmem/common/check.h"

namespace farmem::far {

Result<std::unique_ptr<SegmentPool>> SegmentPool::create(uint64_t budget_bytes,
                                                         uint64_t segment_bytes,
                                                         LocalBudget* shared) {
  if (shared != nullptr) budget_bytes = shared->limit_bytes();
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
  // random, and a TLB miss per object would cost as much as the dereference itself. Not with a
  // shared budget: resident memory must then follow the charge segment by segment, and no
  // transparent huge page may make a first touch of one segment resident for its neighbours.
  (void)madvise(m, count * segment_bytes, shared == nullptr ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  p->base_ = static_cast<uint8_t*>(m);
  p->segment_bytes_ = segment_bytes;
  p->total_ = static_cast<uint32_t>(count);
  p->free_.reserve(count);
  // Handed out from the lowest address up, so a small working set touches few pages.
  for (uint64_t i = count; i-- > 0;) p->free_.push_back(p->base_ + i * segment_bytes);
  p->free_count_.store(p->total_);
  if (shared != nullptr) {
    auto t = shared->add_tenant("far");
    FARMEM_TRY(t);
    p->tenant_ = *t;
  }
  return p;
}

SegmentPool::~SegmentPool() {
  if (tenant_ != nullptr) tenant_->budget().remove_tenant(tenant_);
  if (base_ != nullptr) munmap(base_, bytes());
}

uint8_t* SegmentPool::take() {
  if (tenant_ != nullptr) release_warm_if_pressured();
  std::lock_guard<std::mutex> lock(mu_);
  if (!warm_.empty()) {  // charged and resident already
    uint8_t* s = warm_.back();
    warm_.pop_back();
    warm_count_.store(static_cast<uint32_t>(warm_.size()), std::memory_order_relaxed);
    return s;
  }
  if (free_.empty()) return nullptr;
  if (tenant_ != nullptr && !tenant_->try_charge(segment_bytes_)) {
    tenant_->signal_pressure();
    return nullptr;
  }
  uint8_t* s = free_.back();
  free_.pop_back();
  free_count_.store(static_cast<uint32_t>(free_.size()), std::memory_order_relaxed);
  return s;
}

void SegmentPool::give(uint8_t* segment) {
  FARMEM_ASSERT(contains(segment) && static_cast<uint64_t>(segment - base_) % segment_bytes_ == 0,
                "far: a segment given back that is not one of the pool's");
  if (tenant_ != nullptr) {
    release_warm_if_pressured();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (warm_.size() < warm_cap_) {
        FARMEM_ASSERT(free_.size() + warm_.size() < total_, "far: more segments given than taken");
        warm_.push_back(segment);
        warm_count_.store(static_cast<uint32_t>(warm_.size()), std::memory_order_relaxed);
        return;
      }
    }
    drop(segment);
    return;
  }
  put_free(segment);
}

void SegmentPool::put_free(uint8_t* segment) {
  std::lock_guard<std::mutex> lock(mu_);
  FARMEM_ASSERT(free_.size() + warm_.size() < total_, "far: more segments given than taken");
  free_.push_back(segment);
  free_count_.store(static_cast<uint32_t>(free_.size()), std::memory_order_relaxed);
}

void SegmentPool::drop(uint8_t* segment) {
  // Back to the kernel before the charge is released: the memory is then free for others.
  // MADV_DONTNEED on a private anonymous mapping cannot fail for a valid range.
  (void)madvise(segment, segment_bytes_, MADV_DONTNEED);
  tenant_->release(segment_bytes_);
  put_free(segment);
}

void SegmentPool::release_warm() {
  if (tenant_ == nullptr) return;
  std::vector<uint8_t*> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(warm_);
    warm_count_.store(0, std::memory_order_relaxed);
  }
  for (uint8_t* s : out) drop(s);
}

void SegmentPool::release_warm_if_pressured() {
  const uint64_t now = tenant_->others_pressure();
  uint64_t seen = pressure_seen_.load(std::memory_order_relaxed);
  if (now != seen && pressure_seen_.compare_exchange_strong(seen, now)) release_warm();
}

}  // namespace farmem::far
