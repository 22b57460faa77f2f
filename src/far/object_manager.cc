#include "farmem/far/object_manager.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace farmem::far {

Result<std::unique_ptr<ObjectManager>> ObjectManager::create(const ObjectManagerOptions& options) {
  ObjectManagerOptions o = options;
  if (o.shared_budget != nullptr) o.local_bytes = o.shared_budget->limit_bytes();
  if (o.segment_bytes == 0) {
    uint64_t s = std::bit_floor(std::max<uint64_t>(o.local_bytes / 16, 1));
    o.segment_bytes = std::clamp<uint64_t>(s, SegmentPool::kMinSegmentBytes, 1ull << 20);
  }
  if (!(o.admit_free >= 0 && o.admit_free <= o.low_free && o.low_free < o.high_free &&
        o.high_free < 1)) {
    return InvalidArgument("far cache thresholds need 0 <= admit_free <= low_free < high_free < 1");
  }
  auto pool = SegmentPool::create(o.local_bytes, o.segment_bytes, o.shared_budget);
  FARMEM_TRY(pool);
  std::unique_ptr<ObjectManager> m(new ObjectManager());
  m->options_ = o;
  m->pool_ = std::move(*pool);
  const double total = m->pool_->total();
  auto at_least = [](double v, uint32_t floor) {
    return std::max<uint32_t>(floor, static_cast<uint32_t>(std::ceil(v)));
  };
  m->admit_ = at_least(total * o.admit_free, 1);
  m->low_ = std::max(at_least(total * o.low_free, 2), m->admit_ + 1);
  m->high_ = std::max(at_least(total * o.high_free, 3), m->low_ + 1);
  m->high_ = std::min<uint32_t>(m->high_, m->pool_->total() - 1);
  m->low_ = std::min<uint32_t>(m->low_, m->high_);
  // With a shared budget, what one evacuation round gives back between the thresholds stays
  // resident for the mutators' next segments (SegmentPool: warm segments).
  m->pool_->set_warm_cap(std::max<uint32_t>(1, m->high_ - m->low_));
  return m;
}

BudgetUsage ObjectManager::budget_usage() const {
  if (pool_->tenant() != nullptr) return pool_->tenant()->usage();
  return sole_tenant_usage("far", pool_->taken_bytes(), pool_->bytes());
}

}  // namespace farmem::far
