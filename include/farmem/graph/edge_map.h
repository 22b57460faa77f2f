// edge_map: Ligra's edgeMap. Applies an update to the edges leaving a frontier and returns the
// frontier of the destinations the update accepted.
//
// The functor F provides
//   bool cond(uint32_t d)                    d may still be updated (checked before each edge)
//   bool update(uint32_t s, uint32_t d)      pull mode: only this thread updates d
//   bool update_atomic(uint32_t s, uint32_t d)  push modes: other threads may update d too
// and is called concurrently from the pool's threads.
//
// Mode (Ligra's rule): when |frontier| + its out-degree sum > E / threshold_divisor the
// frontier is made dense and the dense mode runs, else the sparse (push) mode.
//   * sparse push: each frontier vertex pushes along its out-edges; accepted destinations are
//     collected per chunk and concatenated in chunk order (sparse result).
//   * dense pull (symmetric graphs): each vertex with cond() scans its in-neighbours (= its
//     neighbours) for frontier members, stopping once cond() turns false (dense result).
//   * dense push (directed graphs, which have no in-edge index): each frontier vertex pushes
//     along its out-edges into a dense result.
// may_duplicate: the update may accept one destination more than once (e.g. a write-min); the
// sparse result is then deduplicated.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "farmem/graph/frontier.h"

namespace farmem::graph {

struct EdgeMapOptions {
  uint64_t threshold_divisor = 20;
  bool allow_dense = true;
  bool may_duplicate = false;
};

inline constexpr uint64_t kSparseGrain = 64;  // frontier vertices per chunk of a sparse push

namespace detail {

inline uint64_t out_degree_sum(AlgorithmContext& ctx, const Frontier& in) {
  const Graph& g = ctx.graph();
  std::atomic<uint64_t> sum{0};
  if (in.dense()) {
    const uint8_t* flags = in.flags();
    ctx.pool().parallel_for(g.vertices, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      uint64_t s = 0;
      for (uint64_t v = b; v < e; ++v) s += flags[v] ? g.degree(v) : 0;
      sum.fetch_add(s, std::memory_order_relaxed);
    });
  } else {
    const uint32_t* ids = in.ids();
    ctx.pool().parallel_for(in.size(), kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      uint64_t s = 0;
      for (uint64_t i = b; i < e; ++i) s += g.degree(ids[i]);
      sum.fetch_add(s, std::memory_order_relaxed);
    });
  }
  return sum.load();
}

inline uint64_t count_flags(AlgorithmContext& ctx, const uint8_t* flags) {
  return reduce_vertices<uint64_t>(ctx, [&](uint32_t v) -> uint64_t { return flags[v] != 0; });
}

// A sparse output this small is sorted by id, so the next round visits the lists in address
// order (a paged or mmap graph then touches each page once, not once per vertex).
inline constexpr uint64_t kSortedSparseMax = uint64_t{1} << 16;

template <typename F>
Result<Frontier> sparse_push(AlgorithmContext& ctx, Frontier& in, F& f, bool may_duplicate) {
  if (Status s = in.to_sparse(); !s.ok()) return s;
  auto out = ctx.empty_frontier();
  FARMEM_TRY(out);
  if (Status s = ctx.ensure_ids(*out); !s.ok()) return s;
  if (may_duplicate) {
    if (Status s = ctx.ensure_flags(*out); !s.ok()) return s;
  }
  const Graph& g = ctx.sparse_graph(in.size());
  const uint32_t* ids = in.ids();
  ctx.memory().will_read(g, ids, in.size());
  uint8_t* seen = may_duplicate ? out->mutable_flags() : nullptr;
  std::vector<std::vector<uint32_t>> found(ThreadPool::chunks(in.size(), kSparseGrain));
  ctx.pool().parallel_for(in.size(), kSparseGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    std::vector<uint32_t>& mine = found[c];
    for (uint64_t i = b; i < e; ++i) {
      const uint32_t s = ids[i];
      for (const uint32_t* p = g.begin(s); p != g.end(s); ++p) {
        const uint32_t d = *p;
        if (!f.cond(d) || !f.update_atomic(s, d)) continue;
        if (seen != nullptr &&
            std::atomic_ref<uint8_t>(seen[d]).exchange(1, std::memory_order_relaxed) != 0) {
          continue;
        }
        mine.push_back(d);
      }
    }
  });
  std::vector<uint64_t> start(found.size() + 1, 0);
  for (size_t c = 0; c < found.size(); ++c) start[c + 1] = start[c] + found[c].size();
  uint32_t* out_ids = out->mutable_ids();
  ctx.pool().parallel_for(found.size(), 1, [&](uint64_t c, uint64_t, uint64_t) {
    if (!found[c].empty()) {
      std::memcpy(out_ids + start[c], found[c].data(), found[c].size() * sizeof(uint32_t));
    }
    if (seen != nullptr) {
      for (uint32_t d : found[c]) seen[d] = 0;
    }
  });
  if (start.back() <= kSortedSparseMax) std::sort(out_ids, out_ids + start.back());
  AlgorithmContext::set(*out, start.back(), false);
  return out;
}

template <typename F>
Result<Frontier> dense_pull(AlgorithmContext& ctx, Frontier& in, F& f) {
  auto out = ctx.empty_frontier();
  FARMEM_TRY(out);
  if (Status s = ctx.ensure_flags(*out); !s.ok()) return s;
  const Graph& g = ctx.graph();
  const uint8_t* in_flags = in.flags();
  uint8_t* out_flags = out->mutable_flags();
  std::vector<uint64_t> count(ThreadPool::chunks(g.vertices, kVertexGrain), 0);
  ctx.pool().parallel_for(g.vertices, kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t v = b; v < e; ++v) {
      const uint32_t d = static_cast<uint32_t>(v);
      if (!f.cond(d)) continue;
      for (const uint32_t* p = g.begin(d); p != g.end(d); ++p) {
        if (in_flags[*p] && f.update(*p, d) && out_flags[d] == 0) {
          out_flags[d] = 1;
          ++n;
        }
        if (!f.cond(d)) break;
      }
    }
    count[c] = n;
  });
  uint64_t total = 0;
  for (uint64_t n : count) total += n;
  AlgorithmContext::set(*out, total, true);
  return out;
}

template <typename F>
Result<Frontier> dense_push(AlgorithmContext& ctx, Frontier& in, F& f) {
  auto out = ctx.empty_frontier();
  FARMEM_TRY(out);
  if (Status s = ctx.ensure_flags(*out); !s.ok()) return s;
  const Graph& g = ctx.graph();
  const uint8_t* in_flags = in.flags();
  uint8_t* out_flags = out->mutable_flags();
  ctx.pool().parallel_for(g.vertices, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t v = b; v < e; ++v) {
      if (!in_flags[v]) continue;
      const uint32_t s = static_cast<uint32_t>(v);
      for (const uint32_t* p = g.begin(s); p != g.end(s); ++p) {
        if (f.cond(*p) && f.update_atomic(s, *p)) {
          std::atomic_ref<uint8_t>(out_flags[*p]).store(1, std::memory_order_relaxed);
        }
      }
    }
  });
  AlgorithmContext::set(*out, count_flags(ctx, out_flags), true);
  return out;
}

}  // namespace detail

template <typename F>
Result<Frontier> edge_map(AlgorithmContext& ctx, Frontier& in, F& f, const EdgeMapOptions& o = {}) {
  if (in.empty()) return ctx.empty_frontier();
  const uint64_t work = in.size() + detail::out_degree_sum(ctx, in);
  if (o.allow_dense && work > ctx.graph().edges / o.threshold_divisor) {
    if (Status s = in.to_dense(); !s.ok()) return s;
    return ctx.graph().symmetric ? detail::dense_pull(ctx, in, f) : detail::dense_push(ctx, in, f);
  }
  return detail::sparse_push(ctx, in, f, o.may_duplicate);
}

}  // namespace farmem::graph
