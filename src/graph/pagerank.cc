// PageRank by power iteration (Jacobi: an iteration reads only the previous one's values, so
// the result is the same for any thread count on symmetric graphs).
//
// Symmetric graphs pull in one fused pass per iteration, as GAPBS does: each vertex sums its
// neighbours' contributions from a contiguous array, writes its score and its own contribution
// for the next iteration into a second array, and adds to the iteration's L1 change and to the
// next iteration's dangling mass. Contributions are stored as floats, as GAPBS stores its
// scores (an array of V floats stays in cache where V doubles would not; sums and scores are
// doubles, so a rank carries a relative error near 1e-7). Directed graphs (no in-edge index) push
// with atomic adds into a sum array, then a vertex pass applies the same update.
#include <atomic>
#include <cmath>

#include "farmem/graph/algorithms.h"

namespace farmem::graph {

namespace {

// Per chunk: the L1 change and the rank of dangling vertices (out-degree 0) after the update.
struct IterationSums {
  double change = 0;
  double dangling = 0;
};

// Applies score'(v) = base + damping * incoming(v) to every vertex and writes its next
// contribution; incoming(v) is `pull(v)`.
template <typename Pull>
IterationSums update_all(AlgorithmContext& ctx, double base, double damping, double* score,
                         float* contrib_next, Pull&& pull) {
  const Graph& g = ctx.graph();
  std::vector<IterationSums> partial(ThreadPool::chunks(g.vertices, kVertexGrain));
  ctx.pool().parallel_for(g.vertices, kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    IterationSums sums;
    for (uint64_t v = b; v < e; ++v) {
      const double next = base + damping * pull(v);
      sums.change += std::fabs(next - score[v]);
      score[v] = next;
      const uint64_t deg = g.degree(v);
      contrib_next[v] = deg == 0 ? 0.0f : static_cast<float>(next / static_cast<double>(deg));
      sums.dangling += deg == 0 ? next : 0.0;
    }
    partial[c] = sums;
  });
  IterationSums total;
  for (const IterationSums& s : partial) {
    total.change += s.change;
    total.dangling += s.dangling;
  }
  return total;
}

void push_sums(AlgorithmContext& ctx, const float* contrib, double* sum) {
  const Graph& g = ctx.graph();
  for_each_vertex(ctx, [&](uint32_t v) { sum[v] = 0; });
  for_each_vertex(ctx, [&](uint32_t u) {
    const double c = contrib[u];
    for (const uint32_t* p = g.begin(u); p != g.end(u); ++p) {
      std::atomic_ref<double>(sum[*p]).fetch_add(c, std::memory_order_relaxed);
    }
  });
}

}  // namespace

Result<Array<double>> pagerank(AlgorithmContext& ctx, const PageRankOptions& o,
                               uint32_t* iterations_run) {
  const Graph& g = ctx.graph();
  const uint64_t n = ctx.vertices();
  // The randomly read arrays first: a backend that keeps arrays resident in allocation order
  // while its room lasts (far memory's static advice) keeps these.
  auto contrib = allocate_array<float>(ctx.memory(), n, "pagerank contributions");
  FARMEM_TRY(contrib);
  auto contrib_next = allocate_array<float>(ctx.memory(), n, "pagerank next contributions");
  FARMEM_TRY(contrib_next);
  auto rank = allocate_array<double>(ctx.memory(), n, "pagerank rank", Access::kSequential);
  FARMEM_TRY(rank);
  // Directed graphs: the pushed sums.
  Array<double> sums_array;
  if (!g.symmetric) {
    auto a = allocate_array<double>(ctx.memory(), n, "pagerank sums", Access::kSequential);
    FARMEM_TRY(a);
    sums_array = std::move(*a);
  }
  if (iterations_run != nullptr) *iterations_run = 0;
  if (n == 0) return rank;
  double* score = rank->data();
  float* c = contrib->data();
  float* c_next = contrib_next->data();
  const double inv_n = 1.0 / static_cast<double>(n);
  const double dangling0 = reduce_vertices<double>(ctx, [&](uint32_t v) {
    const uint64_t deg = g.degree(v);
    score[v] = inv_n;
    c[v] = deg == 0 ? 0.0f : static_cast<float>(inv_n / static_cast<double>(deg));
    return deg == 0 ? inv_n : 0.0;
  });
  const bool spread = o.convention == PageRankConvention::kNetworkx;
  double dangling = dangling0;
  for (uint32_t it = 0; it < o.iterations; ++it) {
    const double base = (1 - o.damping) * inv_n + (spread ? o.damping * dangling * inv_n : 0.0);
    IterationSums sums;
    if (g.symmetric) {
      sums = update_all(ctx, base, o.damping, score, c_next, [&](uint64_t v) {
        double s = 0;
        for (const uint32_t* p = g.begin(v); p != g.end(v); ++p) s += c[*p];
        return s;
      });
    } else {
      double* pushed = sums_array.data();
      push_sums(ctx, c, pushed);
      sums = update_all(ctx, base, o.damping, score, c_next, [&](uint64_t v) { return pushed[v]; });
    }
    std::swap(c, c_next);
    dangling = sums.dangling;
    if (iterations_run != nullptr) *iterations_run = it + 1;
    if (o.tolerance > 0 && sums.change < o.tolerance) break;
  }
  return rank;
}

}  // namespace farmem::graph
