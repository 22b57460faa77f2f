// Plain reference implementations the graph algorithms are checked against: written the
// obvious sequential way over an owning Csr (queue BFS, power iteration, union-find, Brandes).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <numeric>
#include <vector>

#include "farmem/graph/builder.h"

namespace farmem::graph::reference {

inline std::vector<int32_t> bfs(const Csr& g, uint32_t source) {
  std::vector<int32_t> depth(g.vertices, -1);
  std::deque<uint32_t> queue{source};
  depth[source] = 0;
  while (!queue.empty()) {
    const uint32_t u = queue.front();
    queue.pop_front();
    for (uint64_t i = g.offsets[u]; i < g.offsets[u + 1]; ++i) {
      const uint32_t v = g.neighbours[i];
      if (depth[v] == -1) {
        depth[v] = depth[u] + 1;
        queue.push_back(v);
      }
    }
  }
  return depth;
}

// Power iteration, dangling mass spread uniformly (networkx) or dropped (GAPBS, spread false);
// changes (if given) gets each iteration's L1 change.
inline std::vector<double> pagerank(const Csr& g, double damping, uint32_t iterations,
                                    bool spread = true, std::vector<double>* changes = nullptr) {
  const uint64_t n = g.vertices;
  std::vector<double> p(n, 1.0 / n), q(n);
  for (uint32_t it = 0; it < iterations; ++it) {
    double dangling = 0;
    std::fill(q.begin(), q.end(), 0.0);
    for (uint64_t u = 0; u < n; ++u) {
      const uint64_t deg = g.offsets[u + 1] - g.offsets[u];
      if (deg == 0) dangling += p[u];
      for (uint64_t i = g.offsets[u]; i < g.offsets[u + 1]; ++i) q[g.neighbours[i]] += p[u] / deg;
    }
    if (!spread) dangling = 0;
    double change = 0;
    for (uint64_t v = 0; v < n; ++v) {
      q[v] = (1 - damping) / n + damping * (q[v] + dangling / n);
      change += std::fabs(q[v] - p[v]);
    }
    if (changes != nullptr) changes->push_back(change);
    std::swap(p, q);
  }
  return p;
}

// Union-find; component id = the smallest vertex id in the component.
inline std::vector<uint32_t> components(const Csr& g) {
  std::vector<uint32_t> parent(g.vertices);
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (uint64_t u = 0; u < g.vertices; ++u) {
    for (uint64_t i = g.offsets[u]; i < g.offsets[u + 1]; ++i) {
      uint32_t a = find(static_cast<uint32_t>(u)), b = find(g.neighbours[i]);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the smaller id stays the root
    }
  }
  std::vector<uint32_t> out(g.vertices);
  for (uint64_t v = 0; v < g.vertices; ++v) out[v] = find(static_cast<uint32_t>(v));
  return out;
}

// Radii: the greatest BFS distance from any of the sources that reaches v.
inline std::vector<int32_t> radii(const Csr& g, const std::vector<uint32_t>& sources) {
  std::vector<int32_t> out(g.vertices, -1);
  for (uint32_t s : sources) {
    const auto d = bfs(g, s);
    for (uint64_t v = 0; v < g.vertices; ++v) out[v] = std::max(out[v], d[v]);
  }
  return out;
}

// Brandes, unweighted, summed over the sources.
inline std::vector<double> betweenness(const Csr& g, const std::vector<uint32_t>& sources) {
  const uint64_t n = g.vertices;
  std::vector<double> bc(n, 0);
  for (uint32_t s : sources) {
    std::vector<int64_t> dist(n, -1);
    std::vector<double> sigma(n, 0), delta(n, 0);
    std::vector<std::vector<uint32_t>> preds(n);
    std::vector<uint32_t> stack;
    std::deque<uint32_t> queue{s};
    dist[s] = 0;
    sigma[s] = 1;
    while (!queue.empty()) {
      const uint32_t u = queue.front();
      queue.pop_front();
      stack.push_back(u);
      for (uint64_t i = g.offsets[u]; i < g.offsets[u + 1]; ++i) {
        const uint32_t v = g.neighbours[i];
        if (dist[v] < 0) {
          dist[v] = dist[u] + 1;
          queue.push_back(v);
        }
        if (dist[v] == dist[u] + 1) {
          sigma[v] += sigma[u];
          preds[v].push_back(u);
        }
      }
    }
    while (!stack.empty()) {
      const uint32_t w = stack.back();
      stack.pop_back();
      for (uint32_t v : preds[w]) delta[v] += sigma[v] / sigma[w] * (1 + delta[w]);
      if (w != s) bc[w] += delta[w];
    }
  }
  return bc;
}

}  // namespace farmem::graph::reference
