// Frontiers (Ligra's vertexSubset) and the context algorithms run in.
//
// A Frontier is a set of vertices held either sparse (a list of ids, ascending or in discovery
// order) or dense (one byte per vertex). Its storage comes from the context's GraphMemory and
// is recycled: a context keeps released stores for the next frontier, so an algorithm
// allocates O(V) frontier memory a few times, not once per round.
//
// Thread safety: a AlgorithmContext and its frontiers are driven by one thread (the algorithm's),
// which runs parallel loops on the context's pool; inside such a loop, threads read a frontier.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/graph/memory.h"
#include "farmem/graph/thread_pool.h"

namespace farmem::graph {

class AlgorithmContext;

// The storage of one frontier: V ids and V flags (both allocated lazily, zero-filled).
struct FrontierStore {
  Array<uint32_t> ids;
  Array<uint8_t> flags;  // all zero whenever the store is released
};

class Frontier {
 public:
  Frontier() = default;
  Frontier(Frontier&&) noexcept;
  Frontier& operator=(Frontier&&) noexcept;
  ~Frontier();

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool dense() const { return dense_; }
  // Sparse: ids()[0..size()). Dense: flags()[v] != 0 iff v is in the set.
  const uint32_t* ids() const { return store_->ids.data(); }
  uint32_t* mutable_ids() { return store_->ids.data(); }
  const uint8_t* flags() const { return store_->flags.data(); }
  uint8_t* mutable_flags() { return store_->flags.data(); }
  // Switches representation (parallel, on the context's pool).
  Status to_dense();
  Status to_sparse();

 private:
  friend class AlgorithmContext;
  AlgorithmContext* ctx_ = nullptr;
  std::unique_ptr<FrontierStore> store_;
  uint64_t size_ = 0;
  bool dense_ = false;
};

class AlgorithmContext {
 public:
  AlgorithmContext(GraphMemory& memory, ThreadPool& pool);
  GraphMemory& memory() { return memory_; }
  ThreadPool& pool() { return pool_; }
  const Graph& graph() const { return graph_; }
  // The view a sparse round over `frontier_size` vertices reads (GraphMemory::sparse_graph).
  const Graph& sparse_graph(uint64_t frontier_size) const {
    return frontier_size <= sparse_limit_ ? sparse_graph_ : graph_;
  }
  uint64_t vertices() const { return graph_.vertices; }
  // kInvalidArgument naming `source` unless it is a vertex of the graph.
  Status check_source(uint32_t source) const;
  // Whether reading lists in address order saves page fetches (GraphMemory::reads_by_page).
  bool reads_by_page() const { return reads_by_page_; }

  // An empty sparse frontier; a frontier holding `ids` (copied); a dense frontier of all.
  Result<Frontier> empty_frontier();
  Result<Frontier> frontier_of(const std::vector<uint32_t>& ids);
  Result<Frontier> all_vertices();
  // Storage that `f` is built in (ids and flags allocated on first use).
  Status ensure_ids(Frontier& f);
  Status ensure_flags(Frontier& f);
  // Sets f's size and representation after a caller filled its storage.
  static void set(Frontier& f, uint64_t size, bool dense) {
    f.size_ = size;
    f.dense_ = dense;
  }
  // Takes back a frontier's storage (clearing its flags when `dense`) for later frontiers.
  void release(std::unique_ptr<FrontierStore> store, bool dense, uint64_t size);

 private:
  GraphMemory& memory_;
  ThreadPool& pool_;
  Graph graph_;
  Graph sparse_graph_;
  uint64_t sparse_limit_ = 0;
  bool reads_by_page_ = false;
  std::vector<std::unique_ptr<FrontierStore>> free_;  // at most kMaxFreeStores
  static constexpr size_t kMaxFreeStores = 4;
};

inline constexpr uint64_t kVertexGrain = 2048;  // vertices per chunk of a vertex loop

// Applies fn(v) to every vertex of f, in parallel.
template <typename Fn>
void vertex_map(AlgorithmContext& ctx, const Frontier& f, Fn&& fn) {
  if (f.dense()) {
    const uint8_t* flags = f.flags();
    ctx.pool().parallel_for(ctx.vertices(), kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      for (uint64_t v = b; v < e; ++v) {
        if (flags[v]) fn(static_cast<uint32_t>(v));
      }
    });
  } else {
    const uint32_t* ids = f.ids();
    ctx.pool().parallel_for(f.size(), kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) fn(ids[i]);
    });
  }
}

// Applies fn(v) to every vertex 0..V-1, in parallel.
template <typename Fn>
void for_each_vertex(AlgorithmContext& ctx, Fn&& fn) {
  ctx.pool().parallel_for(ctx.vertices(), kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t v = b; v < e; ++v) fn(static_cast<uint32_t>(v));
  });
}

// Sum of fn(v) over all vertices, deterministic for any thread count (per-chunk partials
// added in chunk order).
template <typename T, typename Fn>
T reduce_vertices(AlgorithmContext& ctx, Fn&& fn) {
  std::vector<T> partial(ThreadPool::chunks(ctx.vertices(), kVertexGrain), T{});
  ctx.pool().parallel_for(ctx.vertices(), kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    T sum{};
    for (uint64_t v = b; v < e; ++v) sum += fn(static_cast<uint32_t>(v));
    partial[c] = sum;
  });
  T total{};
  for (const T& x : partial) total += x;
  return total;
}

}  // namespace farmem::graph
