// The local buffer's budget on the pager thread: resident bytes counted against budget_bytes,
// or charged to the shared LocalBudget's tenant when there is one, and the budget recomputed
// as regions come and go.
#include <algorithm>

#include "farmem/common/check.h"
#include "pager.h"

namespace farmem::paged {

bool PageManager::Impl::try_reserve(uint64_t bytes) {
  if (tenant != nullptr) {
    if (!tenant->try_charge(bytes)) return false;
  } else if (resident_bytes.load(std::memory_order_relaxed) + bytes >
             budget_bytes.load(std::memory_order_relaxed)) {
    return false;
  }
  resident_bytes.fetch_add(bytes, std::memory_order_relaxed);
  check_charge();
  return true;
}

void PageManager::Impl::force_reserve(uint64_t bytes) {
  if (tenant != nullptr) tenant->force_charge(bytes);
  resident_bytes.fetch_add(bytes, std::memory_order_relaxed);
  check_charge();
}

void PageManager::Impl::unreserve(uint64_t bytes) {
  const uint64_t before = resident_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  FARMEM_ASSERT(before >= bytes, "paged: more resident bytes released than reserved");
  if (tenant != nullptr) tenant->release(bytes);
  check_charge();
}

void PageManager::Impl::check_charge() const {
  // The shared budget's charge (overdraft included) is exactly this buffer's resident bytes:
  // only the pager thread changes either.
  FARMEM_ASSERT(tenant == nullptr || tenant->charged_bytes() == resident_bytes.load(),
                "paged: the shared budget's charge differs from the resident bytes");
}

uint64_t PageManager::Impl::used_bytes() const {
  return tenant != nullptr ? tenant->budget().used_bytes()
                           : resident_bytes.load(std::memory_order_relaxed);
}

void PageManager::Impl::recompute_budget() {
  if (tenant != nullptr) {
    budget_bytes.store(tenant->budget().limit_bytes());
    return;
  }
  uint64_t largest_page = kDefaultPageBytes;
  for (const auto& r : regions) largest_page = std::max(largest_page, r->region->page_bytes());
  uint64_t b = options.local_bytes;
  if (b == 0) {
    b = static_cast<uint64_t>(static_cast<double>(footprint_bytes.load()) * options.local_percent /
                              100.0);
  }
  budget_bytes.store(std::max(b, 4 * largest_page));
}

}  // namespace farmem::paged
