// Array<T>: a fixed-size far array (AIFM's Array), chunked (far/chunked.h).
//
//   auto a = co_await far::Array<Item>::create(&cache, n);    // zeros; no far write yet
//   auto scope = co_await far::DerefScope::enter(cache);
//   auto item = co_await a->at(*scope, i);                     // Result<const Item*>
//   auto w = co_await a->at_mut(*scope, i);                    // marks the chunk dirty
//   auto v = co_await a->read(i);  co_await a->write(i, v);     // scopes of their own
//   a->prefetch(start, stride, count);                          // known patterns
//   auto n = co_await far::Array<Item>::open_named(&cache, "items", n);  // kept across runs
//   co_await n->write(i, v);  co_await n->sync();               // acknowledged: survives restarts
//
// at/at_mut do not check bounds (precondition i < size()); at_safe/at_mut_safe/read/write
// return kOutOfRange. The stride prefetcher is on by default (set_prefetch(false)).
// Thread safety: the cache's thread.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "farmem/far/chunked.h"

namespace farmem::far {

template <typename T>
class Array {
 public:
  static runtime::Task<Result<Array>> create(ThreadCache* cache, uint64_t size,
                                             uint32_t chunk_bytes = 4096) {
    Array a(cache, size, chunk_bytes);
    Status s = co_await a.store_.grow_to(size);
    FARMEM_CO_TRY(s);
    co_return a;
  }
  Array(Array&&) noexcept = default;

  // ---- a named array (far/named_store.h): outlives this process, and restarts of durable
  // nodes ----
  // The array named `name`: created with `size` zeros if there is none (acknowledged when this
  // returns), else as its last sync() left it (kInvalidArgument if it has another size or
  // element).
  static runtime::Task<Result<Array>> open_named(ThreadCache* cache, std::string name,
                                                 uint64_t size, uint32_t chunk_bytes = 4096) {
    auto st = co_await ChunkedStore<T>::open_named(cache, chunk_bytes, name);
    FARMEM_CO_TRY(st);
    const NamedStore* named = st->named();
    if (!named->created() && named->synced().size != size) {
      co_return InvalidArgument(fmt::format("far array '{}' holds {} elements, not {}", name,
                                            named->synced().size, size));
    }
    Array a(std::move(*st), size);
    Status s = co_await a.store_.grow_to(size);
    if (s.ok() && named->created()) s = co_await a.store_.sync(size);
    FARMEM_CO_TRY(s);
    co_return a;
  }
  // Makes every element stable (persisted on durable nodes); returns once they are.
  runtime::Task<Status> sync() {
    Status s = co_await store_.sync(size_);
    co_return s;
  }

  uint64_t size() const { return size_; }
  DerefOp<const T> at(const DerefScope& scope, uint64_t i) {
    return store_.template element<const T>(scope, i);
  }
  DerefOp<T> at_mut(const DerefScope& scope, uint64_t i) {
    return store_.template element<T>(scope, i);
  }
  runtime::Task<Result<const T*>> at_safe(const DerefScope& scope, uint64_t i) {
    if (i >= size_) co_return OutOfRange("far array index out of range");
    auto p = co_await at(scope, i);
    co_return p;
  }
  runtime::Task<Result<T*>> at_mut_safe(const DerefScope& scope, uint64_t i) {
    if (i >= size_) co_return OutOfRange("far array index out of range");
    auto p = co_await at_mut(scope, i);
    co_return p;
  }
  runtime::Task<Result<T>> read(uint64_t i) {
    if (i >= size_) co_return OutOfRange("far array index out of range");
    auto v = co_await store_.read(i);
    co_return v;
  }
  runtime::Task<Status> write(uint64_t i, T value) {
    if (i >= size_) co_return OutOfRange("far array index out of range");
    Status s = co_await store_.write(i, value);
    co_return s;
  }
  void prefetch(uint64_t start, int64_t stride, uint64_t count) {
    store_.prefetch(start, stride, count);
  }
  void set_prefetch(bool on) { store_.prefetcher().set_enabled(on); }
  ChunkedStore<T>& store() { return store_; }

 private:
  Array(ThreadCache* cache, uint64_t size, uint32_t chunk_bytes)
      : store_(cache, chunk_bytes), size_(size) {}
  Array(ChunkedStore<T>&& store, uint64_t size) : store_(std::move(store)), size_(size) {}
  ChunkedStore<T> store_;
  uint64_t size_;
};

}  // namespace farmem::far
