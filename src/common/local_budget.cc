#include "farmem/common/local_budget.h"

#include <fmt/format.h>

#include <algorithm>

#include "farmem/common/atomic_max.h"

namespace farmem {

LocalBudget::LocalBudget(uint64_t limit_bytes) : limit_(limit_bytes) {
  for (Tenant& t : tenants_) t.budget_ = this;
}

Result<LocalBudget::Tenant*> LocalBudget::add_tenant(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Tenant& t : tenants_) {
    if (t.in_use_) continue;
    t.in_use_ = true;
    t.name_ = name;
    t.charged_.store(0);
    t.overdraft_.store(0);
    t.peak_.store(0);
    return &t;
  }
  return ResourceExhausted(
      fmt::format("local budget: at most {} tenants (adding '{}')", kMaxTenants, name));
}

void LocalBudget::remove_tenant(Tenant* tenant) {
  if (tenant == nullptr) return;
  tenant->release(tenant->charged_bytes());
  std::lock_guard<std::mutex> lock(mu_);
  tenant->in_use_ = false;
  tenant->waker_ = nullptr;
}

std::vector<BudgetUsage> LocalBudget::usage() const {
  std::vector<BudgetUsage> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Tenant& t : tenants_) {
    if (t.in_use_) out.push_back(t.usage());
  }
  return out;
}

bool LocalBudget::Tenant::try_charge(uint64_t bytes) {
  std::atomic<uint64_t>& used = budget_->used_;
  uint64_t now = used.load(std::memory_order_relaxed);
  do {
    if (bytes > budget_->limit_ || now > budget_->limit_ - bytes) return false;
  } while (!used.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  raise_peak(charged_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  return true;
}

void LocalBudget::Tenant::raise_peak(uint64_t now) {
  raise_to(peak_, now, std::memory_order_relaxed);
}

void LocalBudget::Tenant::force_charge(uint64_t bytes) {
  const uint64_t before = budget_->used_.fetch_add(bytes, std::memory_order_relaxed);
  const uint64_t after = before + bytes;
  if (after > budget_->limit_) {
    overdraft_.fetch_add(after - std::max(before, budget_->limit_), std::memory_order_relaxed);
  }
  raise_peak(charged_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void LocalBudget::Tenant::release(uint64_t bytes) {
  charged_.fetch_sub(bytes, std::memory_order_relaxed);
  budget_->used_.fetch_sub(bytes, std::memory_order_relaxed);
}

void LocalBudget::Tenant::signal_pressure() {
  pressure_.fetch_add(1, std::memory_order_relaxed);
  if (!budget_->has_wakers_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(budget_->mu_);  // a waker lives while its tenant is in use
  for (Tenant& t : budget_->tenants_) {
    if (&t != this && t.in_use_ && t.waker_) t.waker_();
  }
}

void LocalBudget::Tenant::set_waker(std::function<void()> waker) {
  std::lock_guard<std::mutex> lock(budget_->mu_);
  waker_ = std::move(waker);
  if (waker_) budget_->has_wakers_.store(true);
}

uint64_t LocalBudget::Tenant::others_pressure() const {
  uint64_t sum = 0;
  for (const Tenant& t : budget_->tenants_) {
    if (&t != this) sum += t.pressure_.load(std::memory_order_relaxed);
  }
  return sum;
}

BudgetUsage LocalBudget::Tenant::usage() const {
  BudgetUsage u;
  u.tenant = name_;
  u.tenant_bytes = charged_bytes();
  u.peak_bytes = peak_.load(std::memory_order_relaxed);
  u.used_bytes = budget_->used_bytes();
  u.limit_bytes = budget_->limit_bytes();
  u.overdraft_bytes = overdraft_.load(std::memory_order_relaxed);
  u.pressure_signals = pressure_.load(std::memory_order_relaxed);
  return u;
}

}  // namespace farmem
