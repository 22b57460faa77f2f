#include "farmem/graph/algorithms.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "farmem/graph/edge_map.h"

namespace farmem::graph {

namespace {

template <typename T>
T load(T& x) {
  return std::atomic_ref<T>(x).load(std::memory_order_relaxed);
}
template <typename T>
void store(T& x, T v) {
  std::atomic_ref<T>(x).store(v, std::memory_order_relaxed);
}

Status check_source(const AlgorithmContext& ctx, uint32_t source) {
  if (source >= ctx.vertices()) {
    return InvalidArgument(
        fmt::format("source {} is not a vertex (the graph has {})", source, ctx.vertices()));
  }
  return OkStatus();
}

// BFS levels: depth[d] = round the first time d is reached.
struct BfsUpdate {
  int32_t* depth;
  int32_t round;
  bool cond(uint32_t d) const { return load(depth[d]) == -1; }
  bool update(uint32_t, uint32_t d) const {
    store(depth[d], round);
    return true;
  }
  bool update_atomic(uint32_t, uint32_t d) const {
    int32_t unset = -1;
    return std::atomic_ref<int32_t>(depth[d]).compare_exchange_strong(unset, round,
                                                                      std::memory_order_relaxed);
  }
};

}  // namespace

uint32_t max_degree_vertex(AlgorithmContext& ctx) {
  const Graph& g = ctx.graph();
  uint64_t best = 0, best_degree = 0;
  for (uint64_t v = 0; v < g.vertices; ++v) {
    if (g.degree(v) > best_degree) {
      best_degree = g.degree(v);
      best = v;
    }
  }
  return static_cast<uint32_t>(best);
}

Result<Array<int32_t>> bfs(AlgorithmContext& ctx, uint32_t source) {
  if (Status s = check_source(ctx, source); !s.ok()) return s;
  auto depth = allocate_array<int32_t>(ctx.memory(), ctx.vertices(), "bfs depth");
  FARMEM_TRY(depth);
  int32_t* d = depth->data();
  for_each_vertex(ctx, [&](uint32_t v) { d[v] = -1; });
  d[source] = 0;
  auto frontier = ctx.frontier_of({source});
  FARMEM_TRY(frontier);
  for (int32_t round = 1; !frontier->empty(); ++round) {
    BfsUpdate f{d, round};
    auto next = edge_map(ctx, *frontier, f);
    FARMEM_TRY(next);
    *frontier = std::move(*next);
  }
  return depth;
}

namespace {

// One PageRank iteration's inputs: contrib[u] = p(u) / outdeg(u) (0 for dangling u).
double dangling_mass_and_contrib(AlgorithmContext& ctx, const double* rank, double* contrib) {
  const Graph& g = ctx.graph();
  return reduce_vertices<double>(ctx, [&](uint32_t v) {
    const uint64_t deg = g.degree(v);
    contrib[v] = deg == 0 ? 0.0 : rank[v] / static_cast<double>(deg);
    return deg == 0 ? rank[v] : 0.0;
  });
}

void pull_sums(AlgorithmContext& ctx, const double* contrib, double* sum) {
  const Graph& g = ctx.graph();
  for_each_vertex(ctx, [&](uint32_t v) {
    double s = 0;
    for (const uint32_t* p = g.begin(v); p != g.end(v); ++p) s += contrib[*p];
    sum[v] = s;
  });
}

void push_sums(AlgorithmContext& ctx, const double* contrib, double* sum) {
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
  const uint64_t n = ctx.vertices();
  // The randomly read array first: a backend that keeps arrays resident in allocation order
  // while its room lasts (far memory's static advice) keeps this one.
  auto contrib = allocate_array<double>(ctx.memory(), n, "pagerank contributions");
  FARMEM_TRY(contrib);
  auto rank = allocate_array<double>(ctx.memory(), n, "pagerank rank", Access::kSequential);
  FARMEM_TRY(rank);
  auto next = allocate_array<double>(ctx.memory(), n, "pagerank next", Access::kSequential);
  FARMEM_TRY(next);
  if (iterations_run != nullptr) *iterations_run = 0;
  if (n == 0) return rank;
  double* p = rank->data();
  double* q = next->data();
  const double inv_n = 1.0 / static_cast<double>(n);
  for_each_vertex(ctx, [&](uint32_t v) { p[v] = inv_n; });
  for (uint32_t it = 0; it < o.iterations; ++it) {
    const double dangling = dangling_mass_and_contrib(ctx, p, contrib->data());
    if (ctx.graph().symmetric) {
      pull_sums(ctx, contrib->data(), q);
    } else {
      push_sums(ctx, contrib->data(), q);
    }
    const double base = (1 - o.damping) * inv_n + o.damping * dangling * inv_n;
    const double change = reduce_vertices<double>(ctx, [&](uint32_t v) {
      q[v] = base + o.damping * q[v];
      return std::fabs(q[v] - p[v]);
    });
    std::swap(p, q);
    if (iterations_run != nullptr) *iterations_run = it + 1;
    if (o.epsilon > 0 && change < o.epsilon) break;
  }
  return p == rank->data() ? std::move(*rank) : std::move(*next);
}

namespace {

// Label propagation: labels only go down, to the smallest id that reaches them.
struct MinLabel {
  uint32_t* label;
  bool cond(uint32_t) const { return true; }
  bool update(uint32_t s, uint32_t d) const {
    const uint32_t ls = load(label[s]);
    if (ls >= load(label[d])) return false;
    store(label[d], ls);
    return true;
  }
  bool update_atomic(uint32_t s, uint32_t d) const {
    const uint32_t ls = load(label[s]);
    std::atomic_ref<uint32_t> ld(label[d]);
    uint32_t cur = ld.load(std::memory_order_relaxed);
    while (ls < cur) {
      if (ld.compare_exchange_weak(cur, ls, std::memory_order_relaxed)) return true;
    }
    return false;
  }
};

}  // namespace

Result<Array<uint32_t>> connected_components(AlgorithmContext& ctx) {
  if (!ctx.graph().symmetric) {
    return InvalidArgument(
        "connected components need a symmetric graph (convert with --symmetrize)");
  }
  auto label = allocate_array<uint32_t>(ctx.memory(), ctx.vertices(), "cc labels");
  FARMEM_TRY(label);
  uint32_t* l = label->data();
  for_each_vertex(ctx, [&](uint32_t v) { l[v] = v; });
  auto frontier = ctx.all_vertices();
  FARMEM_TRY(frontier);
  EdgeMapOptions options;
  options.may_duplicate = true;
  while (!frontier->empty()) {
    MinLabel f{l};
    auto next = edge_map(ctx, *frontier, f, options);
    FARMEM_TRY(next);
    *frontier = std::move(*next);
  }
  return label;
}

namespace {

uint64_t split_mix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Multi-source BFS step: d learns the sources s has seen; radius[d] = the round it last learnt.
struct RadiiUpdate {
  const uint64_t* visited;
  uint64_t* next_visited;
  int32_t* radius;
  int32_t round;
  bool cond(uint32_t) const { return true; }
  bool update(uint32_t s, uint32_t d) const {
    const uint64_t merged = visited[d] | visited[s];
    if (merged == visited[d]) return false;
    next_visited[d] |= merged;
    if (radius[d] == round) return false;
    radius[d] = round;
    return true;
  }
  bool update_atomic(uint32_t s, uint32_t d) const {
    const uint64_t merged = visited[d] | visited[s];
    if (merged == visited[d]) return false;
    std::atomic_ref<uint64_t>(next_visited[d]).fetch_or(merged, std::memory_order_relaxed);
    std::atomic_ref<int32_t> r(radius[d]);
    int32_t cur = r.load(std::memory_order_relaxed);
    while (cur != round) {
      if (r.compare_exchange_weak(cur, round, std::memory_order_relaxed)) return true;
    }
    return false;
  }
};

}  // namespace

std::vector<uint32_t> radii_sources(uint64_t vertices, uint64_t seed, uint32_t samples) {
  std::vector<uint32_t> out;
  samples = std::min<uint32_t>(std::min<uint32_t>(samples, 64), static_cast<uint32_t>(vertices));
  if (vertices <= samples) {
    for (uint32_t v = 0; v < vertices; ++v) out.push_back(v);
    return out;
  }
  std::unordered_set<uint32_t> chosen;
  uint64_t state = seed;
  while (out.size() < samples) {
    const uint32_t v = static_cast<uint32_t>(split_mix(&state) % vertices);
    if (chosen.insert(v).second) out.push_back(v);
  }
  return out;
}

Result<Array<int32_t>> radii(AlgorithmContext& ctx, uint64_t seed, uint32_t samples) {
  const uint64_t n = ctx.vertices();
  auto visited = allocate_array<uint64_t>(ctx.memory(), n, "radii visited");
  FARMEM_TRY(visited);
  auto next_visited = allocate_array<uint64_t>(ctx.memory(), n, "radii next visited");
  FARMEM_TRY(next_visited);
  auto radius = allocate_array<int32_t>(ctx.memory(), n, "radii");
  FARMEM_TRY(radius);
  int32_t* r = radius->data();
  for_each_vertex(ctx, [&](uint32_t v) { r[v] = -1; });
  const std::vector<uint32_t> sources = radii_sources(n, seed, samples);
  for (size_t i = 0; i < sources.size(); ++i) {
    (*visited)[sources[i]] |= 1ull << i;
    (*next_visited)[sources[i]] |= 1ull << i;
    r[sources[i]] = 0;
  }
  auto frontier = ctx.frontier_of(sources);
  FARMEM_TRY(frontier);
  for (int32_t round = 1; !frontier->empty(); ++round) {
    RadiiUpdate f{visited->data(), next_visited->data(), r, round};
    auto next = edge_map(ctx, *frontier, f);
    FARMEM_TRY(next);
    uint64_t* vis = visited->data();
    const uint64_t* nv = next_visited->data();
    vertex_map(ctx, *next, [&](uint32_t v) { vis[v] = nv[v]; });
    *frontier = std::move(*next);
  }
  return radius;
}

namespace {

// Arrays of one Brandes pass.
struct BrandesState {
  int32_t* depth;
  double* sigma;
  double* delta;
  uint32_t* order;  // vertices in BFS order, level by level
  std::vector<uint64_t> level_start;
};

// Forward BFS from s: levels into order, path counts into sigma.
Status brandes_forward(AlgorithmContext& ctx, uint32_t source, BrandesState& st) {
  const Graph& g = ctx.graph();
  st.depth[source] = 0;
  st.sigma[source] = 1;
  st.order[0] = source;
  st.level_start = {0, 1};
  auto frontier = ctx.frontier_of({source});
  FARMEM_TRY(frontier);
  for (int32_t level = 0; !frontier->empty(); ++level) {
    BfsUpdate f{st.depth, level + 1};
    auto next = edge_map(ctx, *frontier, f);
    FARMEM_TRY(next);
    if (Status s = next->to_sparse(); !s.ok()) return s;
    const uint64_t at = st.level_start.back(), count = next->size();
    if (count != 0) std::memcpy(st.order + at, next->ids(), count * sizeof(uint32_t));
    st.level_start.push_back(at + count);
    const uint32_t* ids = next->ids();
    if (g.symmetric) {
      ctx.pool().parallel_for(count, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e; ++i) {
          const uint32_t v = ids[i];
          double s = 0;
          for (const uint32_t* p = g.begin(v); p != g.end(v); ++p) {
            if (st.depth[*p] == level) s += st.sigma[*p];
          }
          st.sigma[v] = s;
        }
      });
    } else {
      const uint64_t from = st.level_start[st.level_start.size() - 3];
      ctx.pool().parallel_for(at - from, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
        for (uint64_t i = from + b; i < from + e; ++i) {
          const uint32_t u = st.order[i];
          for (const uint32_t* p = g.begin(u); p != g.end(u); ++p) {
            if (st.depth[*p] == level + 1) {
              std::atomic_ref<double>(st.sigma[*p])
                  .fetch_add(st.sigma[u], std::memory_order_relaxed);
            }
          }
        }
      });
    }
    *frontier = std::move(*next);
  }
  return OkStatus();
}

// Backward pass: dependencies level by level, deepest first, added to bc.
void brandes_backward(AlgorithmContext& ctx, uint32_t source, BrandesState& st, double* bc) {
  const Graph& g = ctx.graph();
  for (size_t k = st.level_start.size() - 1; k-- > 0;) {
    const uint64_t b0 = st.level_start[k], e0 = st.level_start[k + 1];
    const int32_t child = static_cast<int32_t>(k) + 1;
    ctx.pool().parallel_for(e0 - b0, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      for (uint64_t i = b0 + b; i < b0 + e; ++i) {
        const uint32_t v = st.order[i];
        double d = 0;
        for (const uint32_t* p = g.begin(v); p != g.end(v); ++p) {
          if (st.depth[*p] == child) d += st.sigma[v] / st.sigma[*p] * (1 + st.delta[*p]);
        }
        st.delta[v] = d;
        if (v != source) bc[v] += d;
      }
    });
  }
}

}  // namespace

Result<Array<double>> betweenness(AlgorithmContext& ctx, const std::vector<uint32_t>& sources) {
  for (uint32_t s : sources) {
    if (Status st = check_source(ctx, s); !st.ok()) return st;
  }
  const uint64_t n = ctx.vertices();
  auto bc = allocate_array<double>(ctx.memory(), n, "bc scores");
  FARMEM_TRY(bc);
  auto depth = allocate_array<int32_t>(ctx.memory(), n, "bc depth");
  FARMEM_TRY(depth);
  auto sigma = allocate_array<double>(ctx.memory(), n, "bc path counts");
  FARMEM_TRY(sigma);
  auto delta = allocate_array<double>(ctx.memory(), n, "bc dependencies");
  FARMEM_TRY(delta);
  auto order = allocate_array<uint32_t>(ctx.memory(), n, "bc order", Access::kSequential);
  FARMEM_TRY(order);
  BrandesState st{depth->data(), sigma->data(), delta->data(), order->data(), {}};
  for (uint32_t s : sources) {
    for_each_vertex(ctx, [&](uint32_t v) {
      st.depth[v] = -1;
      st.sigma[v] = 0;
      st.delta[v] = 0;
    });
    if (Status status = brandes_forward(ctx, s, st); !status.ok()) return status;
    brandes_backward(ctx, s, st, bc->data());
  }
  return bc;
}

}  // namespace farmem::graph
