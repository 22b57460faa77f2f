// LocalBudget: one process-wide limit on the local memory that far-memory modules keep (the far
// object cache's segments, paged regions' resident pages), shared by its tenants.
//
// Each module that uses the budget registers a Tenant at setup (add_tenant) and charges bytes
// before it makes them resident (try_charge) and releases them when it returned the memory to
// the kernel (release). The sum of every tenant's charge never exceeds limit_bytes(), except
// through force_charge(), which a tenant uses only when it cannot wait (a page fault that
// nobody made room for within its deadline) and which is counted in overdraft_bytes().
//
// Pressure: a tenant that could not charge what it needs calls signal_pressure(). The budget
// never reclaims anything itself: every tenant's own background reclaimer (far: each thread's
// evacuator; paged: the pager thread's cleaner) polls others_pressure() and gives memory back on
// its own thread. A tenant whose reclaimer sleeps may register a waker, called on the
// signalling thread: it must only wake that thread (e.g. write an eventfd), never reclaim. Memory
// moves between tenants only through that: there is no common LRU across tenants.
//
// Preconditions: the budget outlives every tenant; a tenant releases no more than it charged
// and calls remove_tenant() once its charge is back to zero (or has it released there).
// Thread safety: every method from any thread; charges are lock-free (one CAS loop), tenant
// registration takes a mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "farmem/common/result.h"

namespace farmem {

// One tenant's part of a budget (a snapshot), for statistics.
struct BudgetUsage {
  std::string tenant;
  uint64_t tenant_bytes = 0;  // what this tenant has charged now
  uint64_t peak_bytes = 0;    // the most this tenant had charged at once
  uint64_t used_bytes = 0;    // every tenant together
  uint64_t limit_bytes = 0;
  uint64_t overdraft_bytes = 0;   // this tenant's force_charge() bytes beyond the limit, total
  uint64_t pressure_signals = 0;  // times this tenant signalled pressure
};

// The usage of a module that keeps a budget of its own (no LocalBudget): it is the only tenant,
// so its bytes are all that is used.
inline BudgetUsage sole_tenant_usage(std::string tenant, uint64_t bytes, uint64_t limit_bytes) {
  BudgetUsage u;
  u.tenant = std::move(tenant);
  u.tenant_bytes = bytes;
  u.used_bytes = bytes;
  u.limit_bytes = limit_bytes;
  return u;
}

class LocalBudget {
 public:
  static constexpr size_t kMaxTenants = 8;

  class Tenant {
   public:
    // Charges `bytes` if they fit under the limit; false (nothing charged) if not.
    bool try_charge(uint64_t bytes);
    // Charges `bytes` even past the limit (counted as overdraft). For callers that cannot wait.
    void force_charge(uint64_t bytes);
    // Returns `bytes` charged earlier (precondition: at most charged_bytes()).
    void release(uint64_t bytes);
    uint64_t charged_bytes() const { return charged_.load(std::memory_order_relaxed); }
    // Tells the other tenants that this one is short of memory (and calls their wakers).
    void signal_pressure();
    // Called by other tenants' signal_pressure() from their threads; it must only wake this
    // tenant's reclaimer. Set it before others may signal; it lives until remove_tenant().
    void set_waker(std::function<void()> waker);
    // A counter of the pressure the other tenants signalled: it changed since the caller last
    // read it if some other tenant was short meanwhile.
    uint64_t others_pressure() const;
    LocalBudget& budget() const { return *budget_; }
    const std::string& name() const { return name_; }
    BudgetUsage usage() const;

   private:
    friend class LocalBudget;
    LocalBudget* budget_ = nullptr;
    std::string name_;
    bool in_use_ = false;          // (the budget's mu_)
    std::function<void()> waker_;  // (the budget's mu_)
    std::atomic<uint64_t> charged_{0};
    std::atomic<uint64_t> overdraft_{0};
    std::atomic<uint64_t> peak_{0};
    void raise_peak(uint64_t now);
    std::atomic<uint64_t> pressure_{0};
  };

  // limit_bytes > 0.
  explicit LocalBudget(uint64_t limit_bytes);
  LocalBudget(const LocalBudget&) = delete;
  LocalBudget& operator=(const LocalBudget&) = delete;

  // A new tenant (name for statistics); kResourceExhausted past kMaxTenants.
  Result<Tenant*> add_tenant(const std::string& name);
  // Ends a tenant (its remaining charge is released).
  void remove_tenant(Tenant* tenant);

  uint64_t limit_bytes() const { return limit_; }
  uint64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  uint64_t headroom_bytes() const {
    const uint64_t used = used_bytes();
    return used >= limit_ ? 0 : limit_ - used;
  }
  // Every live tenant's usage.
  std::vector<BudgetUsage> usage() const;

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  mutable std::mutex mu_;
  std::atomic<bool> has_wakers_{false};
  std::array<Tenant, kMaxTenants> tenants_;
};

}  // namespace farmem
