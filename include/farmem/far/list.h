// List<T>: a far doubly linked list (AIFM's List): the links are local, the elements far, in
// node objects of up to kPerNode elements each (an unrolled list: one fetch brings a node's
// worth of neighbours). Each local node records its far object and which of its slots are in
// use ([begin, begin + count)), so positions are found by walking the local links without
// touching far memory; push/pop at both ends fill and empty nodes from the outside in.
//
//   far::List<uint64_t> l(&cache);
//   co_await l.push_back(1);  co_await l.push_front(0);
//   auto v = co_await l.pop_front();                    // Result<T>; kOutOfRange when empty
//   co_await l.insert(1, 7);  auto x = co_await l.read(1);  co_await l.erase(0);
//   co_await l.for_each([&](const T& v) { ... });        // in order, next nodes prefetched
//
// Operations suspend (allocations, fetches); several coroutines may use one list: each
// operation holds the list until it finishes (the others yield meanwhile), so every operation
// is atomic with respect to the others. for_each's callback must not use the list.
// Thread safety: the cache's thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <list>
#include <utility>

#include "farmem/far/far_ptr.h"

namespace farmem::far {

template <typename T, uint32_t kNodeBytes = 4096>
class List {
  static_assert(std::is_trivially_copyable_v<T>, "far list elements are trivially copyable");

 public:
  static constexpr uint32_t kPerNode =
      static_cast<uint32_t>(std::max<size_t>(2, kNodeBytes / sizeof(T)));
  // Nodes for_each fetches ahead of the one it reads.
  static constexpr uint32_t kPrefetchNodes = 4;

  explicit List(ThreadCache* cache) : cache_(cache) {}
  List(List&&) noexcept = default;

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint64_t nodes() const { return nodes_.size(); }
  ThreadCache* cache() const { return cache_; }

  runtime::Task<Status> push_back(T v) {
    Hold hold = co_await acquire();
    Status s = co_await push_back_held(v);
    co_return s;
  }
  runtime::Task<Status> push_front(T v) {
    Hold hold = co_await acquire();
    Status s = co_await push_front_held(v);
    co_return s;
  }
  runtime::Task<Result<T>> pop_front() {
    Hold hold = co_await acquire();
    if (size_ == 0) co_return OutOfRange("pop_front of an empty far list");
    auto it = nodes_.begin();
    auto v = co_await get(*it, it->begin);
    FARMEM_CO_TRY(v);
    ++it->begin;
    drop_one(it);
    co_return v;
  }
  runtime::Task<Result<T>> pop_back() {
    Hold hold = co_await acquire();
    if (size_ == 0) co_return OutOfRange("pop_back of an empty far list");
    auto it = std::prev(nodes_.end());
    auto v = co_await get(*it, end_of(*it) - 1);
    FARMEM_CO_TRY(v);
    drop_one(it);
    co_return v;
  }
  runtime::Task<Result<T>> front() {
    auto v = co_await read(0);
    co_return v;
  }
  runtime::Task<Result<T>> back() {
    auto v = co_await read(size_ == 0 ? 0 : size_ - 1);
    co_return v;
  }

  // The element at position i (0-based; kOutOfRange past the end).
  runtime::Task<Result<T>> read(uint64_t i) {
    Hold hold = co_await acquire();
    if (i >= size_) co_return OutOfRange("far list position out of range");
    const Location at = locate(i);
    auto v = co_await get(*at.node, at.slot);
    co_return v;
  }
  runtime::Task<Status> write(uint64_t i, T v) {
    Hold hold = co_await acquire();
    if (i >= size_) co_return OutOfRange("far list position out of range");
    const Location at = locate(i);
    Status s = co_await put(*at.node, at.slot, v);
    co_return s;
  }
  // Inserts v before position i (i == size() appends). A full node is split in two.
  runtime::Task<Status> insert(uint64_t i, T v) {
    Hold hold = co_await acquire();
    if (i > size_) co_return OutOfRange("far list position out of range");
    if (i == 0) {
      Status s = co_await push_front_held(v);
      co_return s;
    }
    if (i == size_) {
      Status s = co_await push_back_held(v);
      co_return s;
    }
    Location at = locate(i);
    if (at.node->count == kPerNode) {
      Status s = co_await split(at.node);
      FARMEM_CO_TRY(s);
      at = locate(i);
    }
    NodeIt it = at.node;
    const uint32_t slot = at.slot;
    Status s = co_await shift_in(it, slot, v);
    FARMEM_CO_TRY(s);
    ++size_;
    co_return OkStatus();
  }
  // Removes and returns the element at position i.
  runtime::Task<Result<T>> erase(uint64_t i) {
    Hold hold = co_await acquire();
    if (i >= size_) co_return OutOfRange("far list position out of range");
    const Location at = locate(i);
    NodeIt it = at.node;
    const uint32_t slot = at.slot;
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await it->chunk.deref_mut(*scope);
    FARMEM_CO_TRY(p);
    T* items = (*p)->items;
    const T v = items[slot];
    std::move(items + slot + 1, items + end_of(*it), items + slot);  // close the gap
    drop_one(it);
    co_return v;
  }

  // Calls f(const T&) on every element in order, fetching up to kPrefetchNodes nodes ahead.
  template <typename F>
  runtime::Task<Status> for_each(F f) {
    Hold hold = co_await acquire();
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
      auto ahead = std::next(it);
      for (uint32_t k = 0; k < kPrefetchNodes && ahead != nodes_.end(); ++k, ++ahead) {
        cache_->prefetch(ahead->chunk.entry());
      }
      auto scope = co_await DerefScope::enter(*cache_);
      FARMEM_CO_TRY(scope);
      auto p = co_await it->chunk.deref(*scope);
      FARMEM_CO_TRY(p);
      for (uint32_t s = it->begin; s < end_of(*it); ++s) f((*p)->items[s]);
    }
    co_return OkStatus();
  }

 private:
  struct Chunk {
    T items[kPerNode];
  };
  struct Node {
    UniquePtr<Chunk> chunk;
    uint32_t begin = 0;  // slots [begin, begin + count) hold elements, in order
    uint32_t count = 0;
  };
  using NodeIt = typename std::list<Node>::iterator;

  // Holding the list: released when the operation's frame ends.
  class Hold {
   public:
    explicit Hold(bool* busy) : busy_(busy) {}
    Hold(Hold&& o) noexcept : busy_(std::exchange(o.busy_, nullptr)) {}
    Hold& operator=(Hold&&) = delete;
    ~Hold() {
      if (busy_ != nullptr) *busy_ = false;
    }

   private:
    bool* busy_;
  };
  runtime::Task<Hold> acquire() {
    while (busy_) co_await cache_->client()->scheduler().yield();
    busy_ = true;
    co_return Hold(&busy_);
  }

  runtime::Task<Status> push_back_held(T v) {
    if (nodes_.empty() || end_of(nodes_.back()) == kPerNode) {
      Status s = co_await add_node(nodes_.end(), 0);
      FARMEM_CO_TRY(s);
    }
    Node& n = nodes_.back();
    Status s = co_await put(n, end_of(n), v);
    FARMEM_CO_TRY(s);
    ++n.count;
    ++size_;
    co_return OkStatus();
  }
  runtime::Task<Status> push_front_held(T v) {
    if (nodes_.empty() || nodes_.front().begin == 0) {
      Status s = co_await add_node(nodes_.begin(), kPerNode);
      FARMEM_CO_TRY(s);
    }
    Node& n = nodes_.front();
    Status s = co_await put(n, n.begin - 1, v);
    FARMEM_CO_TRY(s);
    --n.begin;
    ++n.count;
    ++size_;
    co_return OkStatus();
  }

  static uint32_t end_of(const Node& n) { return n.begin + n.count; }

  // The node holding position i (< size()) and the slot in it.
  struct Location {
    NodeIt node;
    uint32_t slot;
  };
  Location locate(uint64_t i) {
    auto it = nodes_.begin();
    while (i >= it->count) {
      i -= it->count;
      ++it;
    }
    return Location{it, it->begin + static_cast<uint32_t>(i)};
  }

  // A new empty node before `at` whose slots start at `begin`.
  runtime::Task<Status> add_node(NodeIt at, uint32_t begin) {
    auto c = co_await allocate_unique<Chunk>(cache_);
    FARMEM_CO_TRY(c);
    nodes_.insert(at, Node{std::move(*c), begin, 0});
    co_return OkStatus();
  }
  // One element fewer in node `it` (already moved out); an emptied node goes.
  void drop_one(NodeIt it) {
    --it->count;
    --size_;
    if (it->count == 0) nodes_.erase(it);
  }

  runtime::Task<Status> put(Node& n, uint32_t slot, T v) {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await n.chunk.deref_mut(*scope);
    FARMEM_CO_TRY(p);
    (*p)->items[slot] = v;
    co_return OkStatus();
  }
  runtime::Task<Result<T>> get(Node& n, uint32_t slot) {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await n.chunk.deref(*scope);
    FARMEM_CO_TRY(p);
    co_return (*p)->items[slot];
  }

  // Moves the upper half of a full node into a new node after it.
  runtime::Task<Status> split(NodeIt it) {
    Status s = co_await add_node(std::next(it), 0);
    FARMEM_CO_TRY(s);
    Node& to = *std::next(it);
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto src = co_await it->chunk.deref(*scope);
    FARMEM_CO_TRY(src);
    auto dst = co_await to.chunk.deref_mut(*scope);
    FARMEM_CO_TRY(dst);
    const uint32_t keep = it->count / 2, moved = it->count - keep;
    std::copy_n((*src)->items + it->begin + keep, moved, (*dst)->items);
    to.count = moved;
    it->count = keep;
    co_return OkStatus();
  }
  // Puts v at `slot` of a node with room, moving the elements from `slot` on one to the right
  // (or, when the node's end is at the chunk's end, those before it one to the left).
  runtime::Task<Status> shift_in(NodeIt it, uint32_t slot, T v) {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await it->chunk.deref_mut(*scope);
    FARMEM_CO_TRY(p);
    T* items = (*p)->items;
    if (end_of(*it) < kPerNode) {
      std::move_backward(items + slot, items + end_of(*it), items + end_of(*it) + 1);
      items[slot] = v;
    } else {
      std::move(items + it->begin, items + slot, items + it->begin - 1);
      items[slot - 1] = v;
      --it->begin;
    }
    ++it->count;
    co_return OkStatus();
  }

  ThreadCache* cache_;
  std::list<Node> nodes_;
  uint64_t size_ = 0;
  bool busy_ = false;
};

}  // namespace farmem::far
