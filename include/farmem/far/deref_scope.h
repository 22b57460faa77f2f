// DerefScope: pins the far objects dereferenced inside it against evacuation.
//
// Raw pointers from deref()/deref_mut()/at() are valid until the scope that produced them ends
// (or renew()s). A scope may live across co_awaits (a fetch, any remote operation); each
// coroutine uses its own scopes, and a coroutine may hold several. Long loops renew() their
// scope now and then so the evacuator can move what they touched earlier.
//
//   auto scope = co_await far::DerefScope::enter(cache);   // waits while the cache is full
//   if (!scope.ok()) co_return scope.status();
//   auto v = co_await ptr.deref(*scope);                   // Result<const T*>
//
// The constructor enters at once (no admission wait): for code already inside another scope
// of the same coroutine. Protocol: docs/modules/far.md "Pinning by scope epochs".
// Thread safety: the cache's thread only.
#pragma once

#include <optional>
#include <utility>

#include "farmem/far/slow_path.h"
#include "farmem/far/thread_cache.h"

namespace farmem::far {

class DerefScope {
 public:
  explicit DerefScope(ThreadCache& cache) : cache_(&cache), epoch_(cache.scope_enter()) {}
  DerefScope(DerefScope&& o) noexcept
      : cache_(std::exchange(o.cache_, nullptr)), epoch_(o.epoch_) {}
  DerefScope& operator=(DerefScope&&) = delete;
  DerefScope(const DerefScope&) = delete;
  ~DerefScope() {
    if (cache_ != nullptr) cache_->scope_exit(epoch_);
  }

  // Ends the scope and starts a new one: pointers obtained before are no longer pinned.
  void renew() {
    cache_->scope_exit(epoch_);
    epoch_ = cache_->scope_enter();
  }
  ThreadCache& cache() const { return *cache_; }
  uint64_t epoch() const { return epoch_; }

  class EnterOp;
  // Enters once the cache admits a new scope (kResourceExhausted after space_wait_ms).
  static EnterOp enter(ThreadCache& cache);

 private:
  ThreadCache* cache_;
  uint64_t epoch_;
};

class [[nodiscard]] DerefScope::EnterOp {
 public:
  explicit EnterOp(ThreadCache* c) : cache_(c) {}
  bool await_ready() const { return cache_->admits(); }
  auto await_suspend(std::coroutine_handle<> h) { return slow_.start(cache_->wait_admission(), h); }
  Result<DerefScope> await_resume() {
    if (slow_.started()) {
      Status s = slow_.result();
      FARMEM_TRY(s);
    }
    return DerefScope(*cache_);
  }

 private:
  ThreadCache* cache_;
  SlowPath slow_;
};

inline DerefScope::EnterOp DerefScope::enter(ThreadCache& cache) { return EnterOp(&cache); }

}  // namespace farmem::far
