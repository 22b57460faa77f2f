// SegmentPool: the process's local cache memory for far objects, cut into equal segments.
//
// One mapping of `budget_bytes` (rounded down to whole segments) made at creation, so the
// cache can never use more local memory than its budget, and every thread's ThreadCache takes
// and returns whole segments here.
//
// With a shared LocalBudget (common/local_budget.h) the mapping is the budget's whole limit
// (virtual: MAP_NORESERVE) and segments are paid for one by one: take() charges a segment to the
// pool's tenant ("far") and fails (null) when the budget cannot pay, signalling pressure to the
// other tenants; give() returns the segment's pages to the kernel (MADV_DONTNEED) and releases
// the charge, so resident memory follows the charge. Up to warm_cap given-back segments stay
// charged and resident ("warm") for the next take(), which then costs no page faults; they are
// dropped like the others as soon as another tenant signals pressure (seen by the next take(),
// give() or release_warm() of any far thread). UCX's memory hooks see the madvise and
// drop registrations cached for that range (ucm dispatches MADV_DONTNEED as an unmap event), so
// a reused segment is registered again at its next transfer. free_segments() then counts only
// the free segments the budget can still pay for, so the evacuators run when another tenant
// (paged regions) fills the budget. Segments are allocated once and reused for the life of the
// pool (UCX's registration cache registers a segment at its first transfer, never per
// operation). The free count is what every thread's evacuator watches (thresholds are fractions
// of total()).
// Thread safety: take()/give() from any thread (a mutex; a thread takes a segment once per
// segment_bytes of allocation); free_segments() is a relaxed atomic read.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "farmem/common/local_budget.h"
#include "farmem/common/result.h"

namespace farmem::far {

class SegmentPool {
 public:
  static constexpr uint64_t kMinSegmentBytes = 16 * 1024;
  static constexpr uint64_t kMaxSegmentBytes = 64ull << 20;
  // segment_bytes: a power of two in [kMinSegmentBytes, kMaxSegmentBytes]; the budget must hold
  // at least 4 segments (one being filled, one being compacted into, two to evacuate).
  // With `shared` (optional, outlives the pool) budget_bytes is ignored: the pool spans
  // shared->limit_bytes() and registers a tenant named "far" on it.
  static Result<std::unique_ptr<SegmentPool>> create(uint64_t budget_bytes, uint64_t segment_bytes,
                                                     LocalBudget* shared = nullptr);
  ~SegmentPool();
  SegmentPool(const SegmentPool&) = delete;
  SegmentPool& operator=(const SegmentPool&) = delete;

  // A free segment, or null when none is free (or the shared budget cannot pay for one).
  uint8_t* take();
  void give(uint8_t* segment);
  // Free segments (warm ones, and those the shared budget can pay for).
  uint32_t free_segments() const {
    const uint32_t free = free_count_.load(std::memory_order_relaxed);
    if (tenant_ == nullptr) return free;
    const uint64_t payable = tenant_->budget().headroom_bytes() / segment_bytes_;
    return warm_count_.load(std::memory_order_relaxed) +
           (payable < free ? static_cast<uint32_t>(payable) : free);
  }
  // With a shared budget: how many given-back segments may stay charged and resident (setup,
  // before any take(); default 0).
  void set_warm_cap(uint32_t segments) { warm_cap_ = segments; }
  // Drops the warm segments (pages to the kernel, charges released).
  void release_warm();
  // Tells the other tenants of the shared budget that the cache is short of space because of
  // what they hold (the budget, not the pool's own free list, is what limits free_segments()).
  // Nothing without a shared budget.
  void signal_short() {
    if (tenant_ != nullptr && tenant_->budget().headroom_bytes() / segment_bytes_ <
                                  free_count_.load(std::memory_order_relaxed)) {
      tenant_->signal_pressure();
    }
  }
  // The shared budget's tenant (null without one).
  LocalBudget::Tenant* tenant() const { return tenant_; }
  // Bytes of segments taken now (what the pool charged, with a shared budget).
  uint64_t taken_bytes() const {
    return (total_ - free_count_.load() - warm_count_.load()) * segment_bytes_;
  }
  uint32_t total() const { return total_; }
  uint64_t segment_bytes() const { return segment_bytes_; }
  uint64_t bytes() const { return static_cast<uint64_t>(total_) * segment_bytes_; }
  // The mapping (bytes() long).
  const uint8_t* base() const { return base_; }
  // Whether p lies in this pool's mapping.
  bool contains(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    return b >= base_ && b < base_ + bytes();
  }

 private:
  SegmentPool() = default;
  uint8_t* base_ = nullptr;
  uint64_t segment_bytes_ = 0;
  uint32_t total_ = 0;
  std::mutex mu_;
  std::vector<uint8_t*> free_;  // (mu_)
  std::atomic<uint32_t> free_count_{0};
  LocalBudget::Tenant* tenant_ = nullptr;
  uint32_t warm_cap_ = 0;
  std::vector<uint8_t*> warm_;  // (mu_) given back, still charged and resident
  std::atomic<uint32_t> warm_count_{0};
  std::atomic<uint64_t> pressure_seen_{0};  // others_pressure() when warm_ was last dropped
  void put_free(uint8_t* segment);          // back on the free list
  void drop(uint8_t* segment);
  void release_warm_if_pressured();
};

}  // namespace farmem::far
