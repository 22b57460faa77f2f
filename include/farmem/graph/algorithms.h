// The graph algorithms (Ligra's BFS, PageRank, Components, Radii, BC) over a AlgorithmContext.
//
// Every result array comes from the context's GraphMemory (it lives where the backend puts
// vertex data). Results are deterministic for any thread count except where noted.
//
//  * bfs: depth[v] = hops from source, -1 if unreached.
//  * pagerank: p0 = 1/V; each iteration p'(v) = (1-d)/V + d * (sum over in-neighbours u of
//    p(u)/outdeg(u) + D/V), where D is the total rank of dangling vertices (out-degree 0):
//    their mass is spread uniformly, so the ranks always sum to 1 (no other normalisation).
//    Runs `iterations` iterations, or stops earlier once the L1 change of an iteration is below
//    epsilon (> 0). Symmetric graphs pull (deterministic); directed graphs push with atomic
//    double adds (the last bits may differ between runs).
//  * connected_components: label propagation to the smallest vertex id of each component (so
//    outputs compare across implementations). Needs a symmetric graph (kInvalidArgument).
//  * radii: Ligra's estimate: multi-source BFS from `samples` (<= 64) distinct vertices drawn
//    with `seed`, one bit per source; radius[v] = the greatest distance from a sampled source
//    that reaches v, -1 if none does.
//  * betweenness: Brandes' dependencies summed over `sources`: bc[v] = sum over sources s != v
//    of delta_s(v), unnormalised (an undirected graph's scores are not halved); sources count 0
//    for themselves. Path counts are doubles: exact below 2^53 paths (directed graphs add them
//    atomically, so beyond that the last bits may differ between runs).
#pragma once

#include <cstdint>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/graph/frontier.h"

namespace farmem::graph {

Result<Array<int32_t>> bfs(AlgorithmContext& ctx, uint32_t source);

struct PageRankOptions {
  double damping = 0.85;
  uint32_t iterations = 20;  // the most iterations
  double epsilon = 0;        // > 0: stop when an iteration's L1 change is below it
};
Result<Array<double>> pagerank(AlgorithmContext& ctx, const PageRankOptions& options,
                               uint32_t* iterations_run = nullptr);

Result<Array<uint32_t>> connected_components(AlgorithmContext& ctx);

Result<Array<int32_t>> radii(AlgorithmContext& ctx, uint64_t seed, uint32_t samples = 64);
// The sources radii() samples (exposed for tests).
std::vector<uint32_t> radii_sources(uint64_t vertices, uint64_t seed, uint32_t samples);

Result<Array<double>> betweenness(AlgorithmContext& ctx, const std::vector<uint32_t>& sources);

// The smallest-id vertex of the greatest out-degree (the default source), 0 if no vertex.
uint32_t max_degree_vertex(AlgorithmContext& ctx);

}  // namespace farmem::graph
