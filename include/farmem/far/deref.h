// DerefOp: the awaitable behind every far dereference (pointers and containers).
//
// `Result<T*> r = co_await op;` completes without suspending when the object is local (a load,
// a test, a store of the cache epoch into the slot header in front of the object, and for a
// mutable dereference a store of the dirty bit into the entry); otherwise it runs
// ThreadCache::fetch (one one-sided read into a local slot) while the coroutine yields, and fails
// with the fetch's Status. The pointer is valid until the scope ends or renews (deref_scope.h).
// Thread safety: the cache's thread only.
#pragma once

#include <coroutine>
#include <type_traits>

#include "farmem/far/deref_scope.h"
#include "farmem/far/entry.h"
#include "farmem/far/slow_path.h"

namespace farmem::far {

// T* for a const T (read) or a T (write: marks the object dirty); offset: bytes into the
// object (containers' elements).
// `local`: where the object's local address is read: &e->local, or a UniquePtr's mirror of it
// (entry.h), which saves the fast path a load from the entry.
template <typename T>
class [[nodiscard]] DerefOp {
 public:
  static constexpr bool kMutable = !std::is_const_v<T>;
  DerefOp(Entry* e, const DerefScope* scope, uint32_t offset)
      : DerefOp(e, &e->local, scope, offset) {}
  DerefOp(Entry* e, uint8_t* const* local, const DerefScope* scope, uint32_t offset)
      : e_(e), local_(local), scope_(scope), offset_(offset) {}

  bool await_ready() {
    p_ = *local_;
    if (p_ == nullptr) [[unlikely]]
      return false;
    touch();
    return true;
  }
  auto await_suspend(std::coroutine_handle<> h) {
    return slow_.start(scope_->cache().fetch(e_), h);
  }
  Result<T*> await_resume() {
    if (slow_.started()) [[unlikely]] {
      Status s = slow_.result();
      FARMEM_TRY(s);
      p_ = *local_;
      touch();
    }
    return reinterpret_cast<T*>(p_ + offset_);
  }

 private:
  void touch() {
    stamp_live(p_, scope_->cache().epoch());
    if constexpr (kMutable) e_->flags |= kDirty;
  }
  uint8_t* p_ = nullptr;
  Entry* e_;
  uint8_t* const* local_;
  const DerefScope* scope_;
  uint32_t offset_;
  SlowPath slow_;
};

// The synchronous fast path alone: the object's bytes if local (stamped, and marked dirty when
// T is not const), else null (no fetch).
template <typename T>
inline T* try_deref(Entry* e, uint8_t* const* local, const DerefScope& scope, uint32_t offset = 0) {
  uint8_t* p = *local;
  if (p == nullptr) return nullptr;
  stamp_live(p, scope.cache().epoch());
  if constexpr (!std::is_const_v<T>) e->flags |= kDirty;
  return reinterpret_cast<T*>(p + offset);
}
template <typename T>
inline T* try_deref(Entry* e, const DerefScope& scope, uint32_t offset = 0) {
  return try_deref<T>(e, &e->local, scope, offset);
}

}  // namespace farmem::far
