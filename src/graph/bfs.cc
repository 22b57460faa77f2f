// Direction-optimizing BFS (Beamer et al., as GAPBS runs it): top-down rounds push from a queue
// of the frontier; once the edges leaving the frontier exceed the unexplored edges / alpha, the
// search turns bottom-up (each unvisited vertex scans its neighbours for a frontier bit) and
// stays there while the frontier grows or holds more than V / beta vertices.
//
// depth[v] holds -(degree + 1) while v is unvisited (so a top-down round counts the edges it
// will scout next without touching the offsets again), and its depth once visited.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <vector>

#include "farmem/graph/algorithms.h"
#include "farmem/graph/bitmap.h"
#include "farmem/graph/edge_map.h"

namespace farmem::graph {

namespace {

constexpr int64_t kAlpha = 15;
constexpr int64_t kBeta = 18;
constexpr uint64_t kTopDownGrain = 64;        // frontier vertices per chunk
constexpr uint64_t kBottomUpGrain = 64 * 64;  // a multiple of 64: one chunk owns its words

int32_t unvisited_mark(uint64_t degree) {
  return -static_cast<int32_t>(std::min<uint64_t>(degree, INT32_MAX - 1) + 1);
}

// The queue of frontier ids: the current frontier is ids[begin, end); a top-down round appends
// the next one after it.
struct Queue {
  uint32_t* ids;
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end - begin; }
};

// One top-down round: returns the out-degree sum of the vertices it reached (the next scout
// count) and leaves them in the queue's next window.
uint64_t top_down(AlgorithmContext& ctx, int32_t* depth, Queue& q, int32_t round) {
  const Graph& g = ctx.sparse_graph(q.size());
  ctx.memory().will_read(g, q.ids + q.begin, q.size());
  std::atomic<uint64_t> tail{q.end}, scout{0};
  ctx.pool().parallel_for(q.size(), kTopDownGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    thread_local std::vector<uint32_t> found;
    found.clear();
    uint64_t edges = 0;
    for (uint64_t i = q.begin + b; i < q.begin + e; ++i) {
      const uint32_t u = q.ids[i];
      for (const uint32_t* p = g.begin(u); p != g.end(u); ++p) {
        std::atomic_ref<int32_t> d(depth[*p]);
        int32_t cur = d.load(std::memory_order_relaxed);
        if (cur < 0 && d.compare_exchange_strong(cur, round, std::memory_order_relaxed)) {
          found.push_back(*p);
          edges += static_cast<uint64_t>(-cur - 1);
        }
      }
    }
    if (!found.empty()) {
      const uint64_t at = tail.fetch_add(found.size(), std::memory_order_relaxed);
      std::memcpy(q.ids + at, found.data(), found.size() * sizeof(uint32_t));
    }
    scout.fetch_add(edges, std::memory_order_relaxed);
  });
  q.begin = q.end;
  q.end = tail.load();
  // Far and mmap backends read the next round's lists in address order.
  if (ctx.reads_by_page() && q.size() <= detail::kSortedSparseMax) {
    std::sort(q.ids + q.begin, q.ids + q.end);
  }
  return scout.load();
}

// One bottom-up round from `front` into `next`: returns the vertices it reached.
uint64_t bottom_up(AlgorithmContext& ctx, int32_t* depth, const Bitmap& front, Bitmap& next,
                   int32_t round) {
  const Graph& g = ctx.graph();
  next.clear(ctx.pool());
  std::vector<uint64_t> awake(ThreadPool::chunks(g.vertices, kBottomUpGrain), 0);
  ctx.pool().parallel_for(g.vertices, kBottomUpGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t u = b; u < e; ++u) {
      if (depth[u] >= 0) continue;
      for (const uint32_t* p = g.begin(u); p != g.end(u); ++p) {
        if (front.get(*p)) {
          depth[u] = round;
          next.set(u);
          ++n;
          break;
        }
      }
    }
    awake[c] = n;
  });
  uint64_t total = 0;
  for (uint64_t n : awake) total += n;
  return total;
}

void queue_to_bitmap(AlgorithmContext& ctx, const Queue& q, Bitmap& bm) {
  bm.clear(ctx.pool());
  ctx.pool().parallel_for(q.size(), kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t i = q.begin + b; i < q.begin + e; ++i) bm.set_atomic(q.ids[i]);
  });
}

// The bitmap's members in ascending order, into a fresh window at the queue's start.
void bitmap_to_queue(AlgorithmContext& ctx, const Bitmap& bm, Queue& q) {
  const uint64_t words = bm.words();
  constexpr uint64_t kWordGrain = 1024;
  std::vector<uint64_t> start(ThreadPool::chunks(words, kWordGrain) + 1, 0);
  ctx.pool().parallel_for(words, kWordGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t w = b; w < e; ++w) n += std::popcount(bm.word(w));
    start[c + 1] = n;
  });
  for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
  ctx.pool().parallel_for(words, kWordGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    uint64_t at = start[c];
    for (uint64_t w = b; w < e; ++w) {
      for (uint64_t bits = bm.word(w); bits != 0; bits &= bits - 1) {
        q.ids[at++] = static_cast<uint32_t>(w * 64 + std::countr_zero(bits));
      }
    }
  });
  q.begin = 0;
  q.end = start.back();
}

}  // namespace

Result<Array<int32_t>> bfs(AlgorithmContext& ctx, uint32_t source) {
  FARMEM_TRY(ctx.check_source(source));
  const Graph& g = ctx.graph();
  const uint64_t n = g.vertices;
  auto depth = allocate_array<int32_t>(ctx.memory(), n, "bfs depth");
  FARMEM_TRY(depth);
  auto ids = allocate_array<uint32_t>(ctx.memory(), n, "bfs queue", Access::kScratch);
  FARMEM_TRY(ids);
  auto front = allocate_bitmap(ctx.memory(), n, "bfs frontier bits");
  FARMEM_TRY(front);
  auto next = allocate_bitmap(ctx.memory(), n, "bfs next frontier bits");
  FARMEM_TRY(next);
  int32_t* d = depth->data();
  for_each_vertex(ctx, [&](uint32_t v) { d[v] = unvisited_mark(g.degree(v)); });
  d[source] = 0;
  Queue q{ids->data(), 0, 1};
  q.ids[0] = source;
  int64_t edges_to_check = static_cast<int64_t>(g.edges);
  int64_t scout = static_cast<int64_t>(g.degree(source));
  int32_t round = 1;
  while (q.size() > 0) {
    if (g.symmetric && scout > edges_to_check / kAlpha) {
      queue_to_bitmap(ctx, q, *front);
      uint64_t awake = q.size(), old_awake = 0;
      do {
        old_awake = awake;
        awake = bottom_up(ctx, d, *front, *next, round++);
        front->swap(*next);
      } while (awake >= old_awake || awake > n / kBeta);
      bitmap_to_queue(ctx, *front, q);
      scout = 1;
    } else {
      edges_to_check -= scout;
      scout = static_cast<int64_t>(top_down(ctx, d, q, round++));
    }
  }
  for_each_vertex(ctx, [&](uint32_t v) { d[v] = d[v] < 0 ? -1 : d[v]; });
  return depth;
}

}  // namespace farmem::graph
