// Radii (Ligra's estimate by multi-source BFS) and the default source.
#include "farmem/graph/algorithms.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <unordered_set>

#include "farmem/graph/edge_map.h"

namespace farmem::graph {

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

}  // namespace farmem::graph
