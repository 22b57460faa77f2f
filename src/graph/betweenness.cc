// Brandes' betweenness as GAPBS runs it: per source, a top-down BFS that counts shortest paths
// and marks each edge that lies on one (u at depth k to v at depth k+1) in a successor bitmap
// indexed like the neighbour array; then a backward sweep, deepest level first, in which each
// vertex sums over its marked edges only (no depth lookups of its neighbours).
//
// The backward sweep needs, of a successor v, only (1 + delta(v)) / sigma(v); once v's level is
// done that value replaces sigma(v) in the same array (a vertex reads its own sigma before it
// overwrites it, and only its successors' slots, one level deeper, already converted). So the
// randomly read state is the depths, one double per vertex and the successor bits.
//
// Path counts are sums of integers in doubles, exact below 2^53 in any order, so the scores are
// the same for any thread count until then.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "farmem/graph/algorithms.h"
#include "farmem/graph/bitmap.h"

namespace farmem::graph {

namespace {

constexpr uint64_t kBrandesGrain = 64;  // frontier vertices per chunk

struct BrandesState {
  int32_t* depth;
  double* sigma;    // path counts; in the backward sweep (1 + delta) / sigma, level by level
  uint32_t* order;  // vertices in BFS order, level by level
  Bitmap* successor;
  std::vector<uint64_t> level_start;
};

// One level of the forward pass: the vertices of order[begin, end) reach the next level.
void forward_level(AlgorithmContext& ctx, BrandesState& st, uint64_t begin, uint64_t end,
                   int32_t level, std::atomic<uint64_t>& tail) {
  const Graph& g = ctx.sparse_graph(end - begin);
  ctx.memory().will_read(g, st.order + begin, end - begin);
  ctx.pool().parallel_for(end - begin, kBrandesGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    thread_local std::vector<uint32_t> found;
    found.clear();
    for (uint64_t i = begin + b; i < begin + e; ++i) {
      const uint32_t u = st.order[i];
      const double sigma_u = st.sigma[u];
      for (uint64_t k = g.offsets[u]; k < g.offsets[u + 1]; ++k) {
        const uint32_t v = g.neighbours[k];
        std::atomic_ref<int32_t> dv(st.depth[v]);
        int32_t cur = dv.load(std::memory_order_relaxed);
        if (cur == -1 && dv.compare_exchange_strong(cur, level, std::memory_order_relaxed)) {
          found.push_back(v);
          cur = level;
        }
        if (cur == level) {
          st.successor->set_atomic(k);
          std::atomic_ref<double>(st.sigma[v]).fetch_add(sigma_u, std::memory_order_relaxed);
        }
      }
    }
    if (!found.empty()) {
      const uint64_t at = tail.fetch_add(found.size(), std::memory_order_relaxed);
      std::memcpy(st.order + at, found.data(), found.size() * sizeof(uint32_t));
    }
  });
}

void brandes_forward(AlgorithmContext& ctx, uint32_t source, BrandesState& st) {
  st.depth[source] = 0;
  st.sigma[source] = 1;
  st.order[0] = source;
  st.level_start = {0, 1};
  std::atomic<uint64_t> tail{1};
  for (int32_t level = 1;; ++level) {
    const uint64_t begin = st.level_start[st.level_start.size() - 2];
    const uint64_t end = st.level_start.back();
    if (begin == end) break;
    forward_level(ctx, st, begin, end, level, tail);
    st.level_start.push_back(tail.load());
    // Far and mmap backends: the next level (and its backward sweep) reads the lists in address
    // order, a pass over the pages rather than a fault per vertex.
    if (ctx.reads_by_page()) std::sort(st.order + end, st.order + tail.load());
  }
  st.level_start.pop_back();  // the empty last level
}

// Dependencies level by level, deepest first, added to bc.
void brandes_backward(AlgorithmContext& ctx, uint32_t source, BrandesState& st, double* bc) {
  for (size_t k = st.level_start.size() - 1; k-- > 0;) {
    const uint64_t b0 = st.level_start[k], e0 = st.level_start[k + 1];
    const Graph& g = ctx.sparse_graph(e0 - b0);
    ctx.memory().will_read(g, st.order + b0, e0 - b0);
    ctx.pool().parallel_for(e0 - b0, kBrandesGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      for (uint64_t i = b0 + b; i < b0 + e; ++i) {
        const uint32_t u = st.order[i];
        const double sigma_u = st.sigma[u];
        double sum = 0;
        for (uint64_t j = g.offsets[u]; j < g.offsets[u + 1]; ++j) {
          if (st.successor->get(j)) sum += st.sigma[g.neighbours[j]];
        }
        const double d = sigma_u * sum;
        st.sigma[u] = (1 + d) / sigma_u;
        if (u != source) bc[u] += d;
      }
    });
  }
}

}  // namespace

Result<Array<double>> betweenness(AlgorithmContext& ctx, const std::vector<uint32_t>& sources) {
  const uint64_t n = ctx.vertices();
  for (uint32_t s : sources) FARMEM_TRY(ctx.check_source(s));
  // The successor bits first: they are set and read in edge order at random vertices, and a
  // backend that keeps random-access arrays resident in allocation order keeps these.
  auto successor = allocate_bitmap(ctx.memory(), ctx.graph().edges, "bc successor edges");
  FARMEM_TRY(successor);
  auto bc = allocate_array<double>(ctx.memory(), n, "bc scores", Access::kSequential);
  FARMEM_TRY(bc);
  auto depth = allocate_array<int32_t>(ctx.memory(), n, "bc depth");
  FARMEM_TRY(depth);
  auto sigma = allocate_array<double>(ctx.memory(), n, "bc path counts");
  FARMEM_TRY(sigma);
  auto order = allocate_array<uint32_t>(ctx.memory(), n, "bc order", Access::kSequential);
  FARMEM_TRY(order);
  BrandesState st{depth->data(), sigma->data(), order->data(), &*successor, {}};
  for (uint32_t s : sources) {
    for_each_vertex(ctx, [&](uint32_t v) {
      st.depth[v] = -1;
      st.sigma[v] = 0;
    });
    successor->clear(ctx.pool());
    brandes_forward(ctx, s, st);
    brandes_backward(ctx, s, st, bc->data());
  }
  return bc;
}

void normalize_betweenness(AlgorithmContext& ctx, Array<double>& bc, BcNormalization how,
                           uint64_t sources) {
  const uint64_t n = ctx.vertices();
  double scale = 1;
  if (how == BcNormalization::kMax) {
    double most = 0;
    for (uint64_t v = 0; v < n; ++v) most = std::max(most, bc[v]);
    scale = most > 0 ? 1 / most : 1;
  } else if (how == BcNormalization::kNetworkx && n > 2 && sources > 0) {
    scale = static_cast<double>(n) / static_cast<double>(sources) /
            (static_cast<double>(n - 1) * static_cast<double>(n - 2));
  }
  if (scale == 1) return;
  double* b = bc.data();
  for_each_vertex(ctx, [&](uint32_t v) { b[v] *= scale; });
}

}  // namespace farmem::graph
