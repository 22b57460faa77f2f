// Vector<T>: a growable far vector (AIFM's DataFrameVector), chunked (far/chunked.h), with
// remote compute for 8-byte numeric elements (uint64_t, int64_t, double): aggregate
// (count/sum/min/max, optionally filtered by a predicate on another vector and grouped by a
// third), filter (matching positions), copy-by-index (gather) and top-k run on the memory
// nodes; only the requests and the results travel (docs/formats/far.md).
//
//   auto v = far::Vector<double>::create(&cache);
//   co_await v.push_back(1.5);
//   auto s = co_await v.aggregate();                  // Result<wire::AggregateCell>
//   auto idx = co_await v.filter(far::greater(2.0));  // Result<std::vector<uint64_t>>
//   auto n = co_await far::Vector<double>::open_named(&cache, "prices");  // kept across runs
//   co_await n->push_back(2.5);  co_await n->sync();   // acknowledged: survives restarts
//
// at/at_mut do not check bounds (precondition i < size()); read/write/at_safe do.
// Thread safety: the cache's thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "farmem/far/chunked.h"
#include "farmem/far/remote.h"

namespace farmem::far {

template <typename T>
constexpr wire::ElemType elem_type() {
  if constexpr (std::is_same_v<T, uint64_t>) return wire::ElemType::kU64;
  if constexpr (std::is_same_v<T, int64_t>) return wire::ElemType::kI64;
  if constexpr (std::is_same_v<T, double>) return wire::ElemType::kF64;
}
template <typename T>
Predicate make_predicate(wire::Pred op, T a, T b = T{}) {
  return Predicate{op, elem_type<T>(), wire::to_bits(a), wire::to_bits(b)};
}

template <typename T>
class Vector {
 public:
  static constexpr bool kRemoteCompute =
      std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, double>;

  explicit Vector(ThreadCache* cache, uint32_t chunk_bytes = 4096) : store_(cache, chunk_bytes) {}
  Vector(Vector&&) noexcept = default;

  // ---- a named vector (far/named_store.h): outlives this process, and restarts of durable
  // nodes ----
  // The vector named `name`, created empty if there is none, as its last sync() left it: its
  // size and elements (kInvalidArgument if it holds elements of another size or chunking).
  static runtime::Task<Result<Vector>> open_named(ThreadCache* cache, std::string name,
                                                  uint32_t chunk_bytes = 4096) {
    auto st = co_await ChunkedStore<T>::open_named(cache, chunk_bytes, std::move(name));
    FARMEM_CO_TRY(st);
    Vector v(std::move(*st));
    v.size_ = v.store_.named()->synced().size;
    co_return v;
  }
  // Makes the elements and the size stable (persisted on durable nodes); returns once they are.
  runtime::Task<Status> sync() {
    Status s = co_await store_.sync(size_);
    co_return s;
  }

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  runtime::Task<Status> reserve(uint64_t n) {
    Status s = co_await store_.grow_to(n);
    co_return s;
  }
  runtime::Task<Status> push_back(T v) {
    if (size_ == store_.capacity()) {
      Status s = co_await store_.grow_to(size_ + 1);
      FARMEM_CO_TRY(s);
    }
    auto scope = co_await DerefScope::enter(*store_.cache());
    FARMEM_CO_TRY(scope);
    auto p = co_await store_.template element<T>(*scope, size_);
    FARMEM_CO_TRY(p);
    **p = v;
    ++size_;
    co_return OkStatus();
  }
  // Sets the size (new elements are zero; the capacity grows as needed).
  runtime::Task<Status> resize(uint64_t n) {
    Status s = co_await store_.grow_to(n);
    FARMEM_CO_TRY(s);
    size_ = n;
    co_return OkStatus();
  }
  void pop_back() {
    if (size_ > 0) --size_;
  }
  DerefOp<const T> at(const DerefScope& scope, uint64_t i) {
    return store_.template element<const T>(scope, i);
  }
  DerefOp<T> at_mut(const DerefScope& scope, uint64_t i) {
    return store_.template element<T>(scope, i);
  }
  runtime::Task<Result<T>> read(uint64_t i) {
    if (i >= size_) co_return OutOfRange("far vector index out of range");
    auto v = co_await store_.read(i);
    co_return v;
  }
  runtime::Task<Status> write(uint64_t i, T value) {
    if (i >= size_) co_return OutOfRange("far vector index out of range");
    Status s = co_await store_.write(i, value);
    co_return s;
  }
  void prefetch(uint64_t start, int64_t stride, uint64_t count) {
    store_.prefetch(start, stride, count);
  }
  void set_prefetch(bool on) { store_.prefetcher().set_enabled(on); }
  ChunkedStore<T>& store() { return store_; }
  runtime::Task<Result<Spans>> spans() {
    auto s = co_await store_.spans(size_);
    co_return s;
  }

  // ---- remote compute (uint64_t, int64_t, double) ----
  // count/sum/min/max of the elements whose element in `where_column` satisfies `pred` (all
  // when pred.op is kNone), grouped by `group_by` (u64 keys 0..15; kMaxGroups cells) if given.
  // The other vectors have this one's size.
  template <typename P = T>
  runtime::Task<Result<std::vector<wire::AggregateCell>>> aggregate(
      Predicate pred = {}, Vector<P>* where_column = nullptr,
      Vector<uint64_t>* group_by = nullptr) {
    static_assert(kRemoteCompute);
    auto vs = co_await spans();
    FARMEM_CO_TRY(vs);
    Spans ps, gs;
    if (pred.op != wire::Pred::kNone) {
      Vector<P>* col = where_column;
      if (col == nullptr) co_return InvalidArgument("aggregate: a predicate needs its column");
      if (col->size() != size_) co_return InvalidArgument("aggregate: columns differ in size");
      auto p = co_await col->spans();
      FARMEM_CO_TRY(p);
      ps = std::move(*p);
    }
    if (group_by != nullptr) {
      if (group_by->size() != size_) co_return InvalidArgument("aggregate: columns differ in size");
      auto g = co_await group_by->spans();
      FARMEM_CO_TRY(g);
      gs = std::move(*g);
    }
    if (size_ == 0) co_return std::vector<wire::AggregateCell>(group_by ? wire::kMaxGroups : 1);
    auto r = co_await remote_aggregate(store_.cache(), elem_type<T>(), &*vs, pred, &ps,
                                       group_by != nullptr ? &gs : nullptr);
    co_return r;
  }
  // Positions of the elements matching pred.
  runtime::Task<Result<std::vector<uint64_t>>> filter(Predicate pred) {
    static_assert(kRemoteCompute);
    if (size_ == 0) co_return std::vector<uint64_t>{};
    auto vs = co_await spans();
    FARMEM_CO_TRY(vs);
    auto r = co_await remote_filter(store_.cache(), &*vs, pred);
    co_return r;
  }
  // The k largest elements (k <= 64), largest first, with their positions.
  runtime::Task<Result<std::vector<std::pair<T, uint64_t>>>> top_k(uint32_t k) {
    static_assert(kRemoteCompute);
    std::vector<std::pair<T, uint64_t>> out;
    if (size_ == 0) co_return out;
    auto vs = co_await spans();
    FARMEM_CO_TRY(vs);
    auto r = co_await remote_top_k(store_.cache(), elem_type<T>(), &*vs, k);
    FARMEM_CO_TRY(r);
    for (const auto& it : *r) out.emplace_back(wire::from_bits<T>(it.value), it.position);
    co_return out;
  }
  // *dst becomes this[indices[0]], this[indices[1]], ... (copied on the memory nodes).
  runtime::Task<Status> copy_by_index(const std::vector<uint64_t>* indices, Vector<T>* dst) {
    auto vs = co_await spans();
    FARMEM_CO_TRY(vs);
    Status s = co_await dst->resize(indices->size());
    FARMEM_CO_TRY(s);
    if (indices->empty()) co_return OkStatus();
    auto ds = co_await dst->spans();
    FARMEM_CO_TRY(ds);
    s = co_await remote_gather(store_.cache(), sizeof(T), &*vs, indices, &*ds);
    FARMEM_CO_TRY(s);
    s = co_await dst->store().invalidate(indices->size());
    co_return s;
  }

 private:
  explicit Vector(ChunkedStore<T>&& store) : store_(std::move(store)) {}
  ChunkedStore<T> store_;
  uint64_t size_ = 0;
};

}  // namespace farmem::far
