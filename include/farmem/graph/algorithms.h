// The graph algorithms (GAPBS's BFS, PageRank, CC and BC; Ligra's Radii) over an
// AlgorithmContext, one file each in src/graph/.
//
// Every result array comes from the context's GraphMemory (it lives where the backend puts
// vertex data). Results are deterministic for any thread count except where noted.
//
//  * bfs: depth[v] = hops from source, -1 if unreached. Direction-optimizing on symmetric
//    graphs (GAPBS's alpha 15 / beta 18 switching, bitmap frontiers bottom-up); directed graphs
//    (no in-edge index) stay top-down.
//  * pagerank: p0 = 1/V; each iteration p'(v) = (1-d)/V + d * (sum over in-neighbours u of
//    p(u)/outdeg(u)) [+ d * D/V in the networkx convention, where D is the total rank of
//    dangling vertices (out-degree 0): their mass is spread uniformly, so the ranks sum to 1;
//    GAPBS's convention drops it]. Runs at most `iterations` iterations and stops after the
//    first whose L1 change (sum |p' - p|) is below `tolerance` (> 0; GAPBS's default 1e-4).
//    Jacobi iterations (GAPBS updates in place, Gauss-Seidel, so it may need fewer).
//    Symmetric graphs pull (deterministic); directed graphs push with atomic double adds (the
//    last bits may differ between runs).
//  * connected_components: Afforest; label[v] = the smallest vertex id of v's component (so
//    outputs compare across implementations). Needs a symmetric graph (kInvalidArgument).
//  * radii: Ligra's estimate: multi-source BFS from `samples` (<= 64) distinct vertices drawn
//    with `seed`, one bit per source; radius[v] = the greatest distance from a sampled source
//    that reaches v, -1 if none does.
//  * betweenness: Brandes' dependencies summed over `sources`: bc[v] = sum over sources s != v
//    of delta_s(v), unnormalised (an undirected graph's scores are not halved); sources count 0
//    for themselves (GAPBS adds a source's own dependency to it). Path counts are doubles added
//    atomically: exact below 2^53 paths, beyond that the last bits may differ between runs.
//    normalize_betweenness rescales: kMax divides by the greatest score (GAPBS's output);
//    kNetworkx multiplies by V / (sources * (V-1) * (V-2)), networkx's betweenness_centrality
//    with normalized=True and k = sources (all V sources: its exact normalised scores).
#pragma once

#include <cstdint>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/graph/frontier.h"

namespace farmem::graph {

Result<Array<int32_t>> bfs(AlgorithmContext& ctx, uint32_t source);

enum class PageRankConvention : uint8_t {
  kNetworkx,  // dangling vertices' rank spread uniformly (the ranks sum to 1)
  kGapbs,     // dangling rank dropped, as GAPBS's pr does
};

struct PageRankOptions {
  double damping = 0.85;
  uint32_t iterations = 20;  // the most iterations
  double tolerance = 1e-4;   // > 0: stop after an iteration whose L1 change is below it
  PageRankConvention convention = PageRankConvention::kNetworkx;
};
Result<Array<double>> pagerank(AlgorithmContext& ctx, const PageRankOptions& options,
                               uint32_t* iterations_run = nullptr);

Result<Array<uint32_t>> connected_components(AlgorithmContext& ctx);

Result<Array<int32_t>> radii(AlgorithmContext& ctx, uint64_t seed, uint32_t samples = 64);
// The sources radii() samples (exposed for tests).
std::vector<uint32_t> radii_sources(uint64_t vertices, uint64_t seed, uint32_t samples);

Result<Array<double>> betweenness(AlgorithmContext& ctx, const std::vector<uint32_t>& sources);

enum class BcNormalization : uint8_t { kNone, kMax, kNetworkx };
void normalize_betweenness(AlgorithmContext& ctx, Array<double>& bc, BcNormalization how,
                           uint64_t sources);

// The smallest-id vertex of the greatest out-degree (the default source), 0 if no vertex.
uint32_t max_degree_vertex(AlgorithmContext& ctx);

}  // namespace farmem::graph
