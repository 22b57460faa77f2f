// UniquePtr<T> / SharedPtr<T>: far pointers to single objects (AIFM's remoteable pointers).
//
// T is trivially copyable (its bytes travel as they are), 1 byte up to the cache's
// max_object_bytes() (half a segment: 512 KiB with the default 1 MiB segments). A pointer
// holds one Entry* (8 bytes); the object is local or absent, and dereferencing an absent one
// fetches it (deref.h). Make them with allocate_unique / allocate_shared on a ThreadCache;
// they belong to that cache's thread.
//
//   auto p = co_await far::allocate_unique<Point>(&cache);     // Result<UniquePtr<Point>>
//   { auto scope = co_await far::DerefScope::enter(cache);
//     auto w = co_await p->deref_mut(*scope);  (*w)->x = 1; }   // dirty: written back later
//   auto v = co_await p->read();                                // Result<Point>, own scope
//   co_await p->free();                                         // far memory reused
//
// Dropping a pointer (destructor, reset) frees the object too; its far memory is returned at
// the cache's next allocate() or reclaim(). free() does it at once. A SharedPtr frees when
// its last copy goes.
// Thread safety: the cache's thread only.
#pragma once

#include <type_traits>
#include <utility>

#include "farmem/far/deref.h"
#include "farmem/far/deref_scope.h"
#include "farmem/far/thread_cache.h"

namespace farmem::far {

namespace detail {

// What UniquePtr and SharedPtr share: one reference to an entry of a cache. Derived says where
// the object's local address is read (local_src()).
template <typename T, typename Derived>
class PtrBase {
  static_assert(std::is_trivially_copyable_v<T>, "far objects are trivially copyable");

 public:
  bool is_null() const { return e_ == nullptr; }
  explicit operator bool() const { return e_ != nullptr; }
  DerefOp<const T> deref(const DerefScope& scope) const { return {e_, src(), &scope, 0}; }
  DerefOp<T> deref_mut(const DerefScope& scope) { return {e_, src(), &scope, 0}; }
  // The object if local, else null (no fetch).
  const T* try_deref(const DerefScope& scope) const {
    return far::try_deref<const T>(e_, src(), scope);
  }
  // Copies the object out / in, each in a scope of its own.
  runtime::Task<Result<T>> read() const {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await deref(*scope);
    FARMEM_CO_TRY(p);
    co_return **p;
  }
  runtime::Task<Status> write(T value) {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await deref_mut(*scope);
    FARMEM_CO_TRY(p);
    **p = value;
    co_return OkStatus();
  }
  // Whether the object is local now.
  bool present() const { return e_ != nullptr && *src() != nullptr; }
  // Marks the object read-once: fetched into NT segments, never compacted.
  void set_non_temporal(bool on) {
    e_->flags = on ? (e_->flags | kNonTemporal) : (e_->flags & ~kNonTemporal);
  }
  Entry* entry() const { return e_; }
  ThreadCache* cache() const { return cache_; }
  GlobalAddress remote() const { return e_->remote; }

 protected:
  PtrBase() = default;
  PtrBase(ThreadCache* c, Entry* e) : cache_(c), e_(e) {}
  uint8_t* const* src() const { return static_cast<const Derived*>(this)->local_src(); }
  ThreadCache* cache_ = nullptr;
  Entry* e_ = nullptr;
};

}  // namespace detail

// A UniquePtr keeps a copy of the object's local address beside its entry pointer (the entry's
// mirror points at it and the cache keeps it current), so a dereference that hits reads the
// address from the pointer, as a plain pointer does; the entry is only stamped.
template <typename T>
class UniquePtr : public detail::PtrBase<T, UniquePtr<T>> {
  using Base = detail::PtrBase<T, UniquePtr<T>>;
  friend Base;

 public:
  UniquePtr() = default;
  UniquePtr(ThreadCache* c, Entry* e) : Base(c, e) { attach(); }
  UniquePtr(UniquePtr&& o) noexcept : Base(o.cache_, std::exchange(o.e_, nullptr)) { attach(); }
  UniquePtr& operator=(UniquePtr&& o) noexcept {
    if (this != &o) {
      drop();
      this->cache_ = o.cache_;
      this->e_ = std::exchange(o.e_, nullptr);
      attach();
    }
    return *this;
  }
  ~UniquePtr() { drop(); }
  void reset() { drop(); }
  // Frees the object now, far memory included.
  runtime::Task<Status> free() {
    ThreadCache* c = this->cache_;
    drop();
    if (c == nullptr) co_return OkStatus();
    Status s = co_await c->reclaim();
    co_return s;
  }

 private:
  uint8_t* const* local_src() const { return &local_; }
  void attach() {
    if (this->e_ == nullptr) return;
    local_ = this->e_->local;
    this->e_->mirror = &local_;
  }
  void drop() {
    if (this->e_ == nullptr) return;
    this->e_->mirror = nullptr;  // a fetch may still finish after this pointer is gone
    local_ = nullptr;
    this->cache_->release(std::exchange(this->e_, nullptr));
  }
  uint8_t* local_ = nullptr;  // == e_->local while e_ is set
};

template <typename T>
class SharedPtr : public detail::PtrBase<T, SharedPtr<T>> {
  using Base = detail::PtrBase<T, SharedPtr<T>>;
  friend Base;

 public:
  SharedPtr() = default;
  SharedPtr(ThreadCache* c, Entry* e) : Base(c, e) {}
  SharedPtr(const SharedPtr& o) : Base(o.cache_, o.e_) {
    if (this->e_ != nullptr) this->cache_->add_ref(this->e_);
  }
  SharedPtr& operator=(const SharedPtr& o) {
    if (this != &o) {
      if (o.e_ != nullptr) o.cache_->add_ref(o.e_);
      drop();
      this->cache_ = o.cache_;
      this->e_ = o.e_;
    }
    return *this;
  }
  SharedPtr(SharedPtr&& o) noexcept : Base(o.cache_, std::exchange(o.e_, nullptr)) {}
  SharedPtr& operator=(SharedPtr&& o) noexcept {
    if (this != &o) {
      drop();
      this->cache_ = o.cache_;
      this->e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  ~SharedPtr() { drop(); }
  void reset() { drop(); }
  uint32_t use_count() const { return this->e_ == nullptr ? 0 : this->e_->refs; }

 private:
  uint8_t* const* local_src() const { return &this->e_->local; }
  void drop() {
    if (this->e_ != nullptr) this->cache_->release(std::exchange(this->e_, nullptr));
  }
};

// A new zero-filled object (far memory allocated now; present and dirty locally).
template <typename T>
runtime::Task<Result<UniquePtr<T>>> allocate_unique(ThreadCache* cache, bool non_temporal = false) {
  auto e = co_await cache->allocate(sizeof(T), non_temporal);
  FARMEM_CO_TRY(e);
  co_return UniquePtr<T>(cache, *e);
}

template <typename T>
runtime::Task<Result<SharedPtr<T>>> allocate_shared(ThreadCache* cache, bool non_temporal = false) {
  auto e = co_await cache->allocate(sizeof(T), non_temporal);
  FARMEM_CO_TRY(e);
  co_return SharedPtr<T>(cache, *e);
}

}  // namespace farmem::far
