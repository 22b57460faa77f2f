// ObjectManager: the process's far-memory object manager: one local cache budget for every thread.
//
// It owns the SegmentPool (the budget, in segments) and the cache options; each thread that
// uses far objects makes a ThreadCache on it with its own ThreadClient. Threads share the
// budget and the memory nodes, not objects: a far pointer belongs to the thread whose
// ThreadCache made it (docs/modules/far.md "ObjectManager").
// Shared budget: with ObjectManagerOptions::shared_budget the cache has no budget of its own: it
// pays for every segment from the process's LocalBudget, which paged regions (and other tenants)
// share, and its evacuators run when that budget runs short (SegmentPool). Without it the
// cache's budget is local_bytes, as before.
// Thread safety: create() once; options(), pool() and budget_usage() from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "farmem/common/result.h"
#include "farmem/far/segment_pool.h"

namespace farmem::far {

struct ObjectManagerOptions {
  uint64_t local_bytes = 64ull << 20;  // the local cache budget (every thread together)
  // The process's shared local-memory budget (optional; outlives the ObjectManager). When set,
  // local_bytes is ignored (options().local_bytes reports the shared limit) and segments are
  // charged to it as they are taken.
  LocalBudget* shared_budget = nullptr;
  // Segment size (power of two); 0 = budget / 16 clamped to 16 KiB..1 MiB. The largest object
  // is half a segment.
  uint64_t segment_bytes = 0;
  // Evacuation starts when fewer than low_free x segments are free, runs until high_free x
  // are, and new scopes wait below admit_free (all at least 1..3 segments).
  double low_free = 0.12;
  double high_free = 0.22;
  double admit_free = 0.03;
  // How long a coroutine waits for local space before kResourceExhausted (0 = the client's
  // op_timeout_ms). Only reached when live scopes pin the whole budget.
  uint32_t space_wait_ms = 0;
  // Background fetches (prefetches) in flight per thread.
  uint32_t max_prefetch_inflight = 32;
};

class ObjectManager {
 public:
  static Result<std::unique_ptr<ObjectManager>> create(const ObjectManagerOptions& options);

  const ObjectManagerOptions& options() const { return options_; }
  SegmentPool& pool() { return *pool_; }
  uint64_t max_object_bytes() const { return pool_->segment_bytes() / 2; }
  // Thresholds in segments.
  uint32_t low_segments() const { return low_; }
  uint32_t high_segments() const { return high_; }
  uint32_t admit_segments() const { return admit_; }
  // The cache's local memory now: its charge ("far") and the limit (the shared budget's, or
  // local_bytes's whole segments).
  BudgetUsage budget_usage() const;

 private:
  ObjectManager() = default;
  ObjectManagerOptions options_;
  std::unique_ptr<SegmentPool> pool_;
  uint32_t low_ = 0, high_ = 0, admit_ = 0;
};

}  // namespace farmem::far
