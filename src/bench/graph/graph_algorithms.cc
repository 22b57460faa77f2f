#include "graph_algorithms.h"

#include <fmt/format.h>

#include <algorithm>

namespace farmem::bench {
namespace {

using graph::Array;

std::string summarize_depths(const Array<int32_t>& a, uint64_t n, const char* what) {
  uint64_t reached = 0;
  int32_t most = -1;
  for (uint64_t v = 0; v < n; ++v) {
    reached += a[v] >= 0;
    most = std::max(most, a[v]);
  }
  return fmt::format("reached={} max_{}={}", reached, what, most);
}

Status depths(Result<Array<int32_t>> r, uint64_t n, const char* what, Outcome* out) {
  FARMEM_ASSIGN_OR_RETURN(out->i32, std::move(r));
  out->summary = summarize_depths(out->i32, n, what);
  return OkStatus();
}

Status components(Result<Array<uint32_t>> r, uint64_t n, Outcome* out) {
  FARMEM_ASSIGN_OR_RETURN(out->u32, std::move(r));
  uint64_t count = 0;
  for (uint64_t v = 0; v < n; ++v) count += out->u32[v] == v;
  out->summary = fmt::format("components={}", count);
  return OkStatus();
}

Status scores(Result<Array<double>> r, uint64_t n, Outcome* out) {
  FARMEM_ASSIGN_OR_RETURN(out->f64, std::move(r));
  double sum = 0, most = 0;
  for (uint64_t v = 0; v < n; ++v) {
    sum += out->f64[v];
    most = std::max(most, out->f64[v]);
  }
  out->summary = fmt::format("sum={:.6g} max={:.6g}", sum, most);
  return OkStatus();
}

}  // namespace

Result<Outcome> run_algorithm(graph::AlgorithmContext& ctx, const GraphRunOptions& o,
                              const std::vector<uint32_t>& sources) {
  const uint64_t n = ctx.vertices();
  Outcome out;
  switch (o.algorithm) {
    case GraphAlgorithm::kBfs:
      FARMEM_TRY(depths(graph::bfs(ctx, sources[0]), n, "depth", &out));
      break;
    case GraphAlgorithm::kRadii:
      FARMEM_TRY(depths(graph::radii(ctx, o.seed), n, "radius", &out));
      break;
    case GraphAlgorithm::kCc:
      FARMEM_TRY(components(graph::connected_components(ctx), n, &out));
      break;
    case GraphAlgorithm::kPr: {
      graph::PageRankOptions pr;
      pr.iterations = o.pr_iterations;
      pr.tolerance = o.pr_tolerance;
      pr.convention = o.pr_convention;
      FARMEM_TRY(scores(graph::pagerank(ctx, pr, &out.iterations), n, &out));
      out.summary += fmt::format(" iterations={}", out.iterations);
      break;
    }
    case GraphAlgorithm::kBc: {
      auto bc = graph::betweenness(ctx, sources);
      if (bc.ok()) graph::normalize_betweenness(ctx, *bc, o.bc_normalize, sources.size());
      FARMEM_TRY(scores(std::move(bc), n, &out));
      break;
    }
  }
  return out;
}

uint64_t vertex_bytes_per_vertex(GraphAlgorithm algorithm) {
  if (algorithm == GraphAlgorithm::kPr) return 24;
  if (algorithm == GraphAlgorithm::kRadii) return 20 + 10;
  if (algorithm == GraphAlgorithm::kBc) return 28 + 10;  // + a bit per edge
  return 4 + 10;                                         // bfs, cc
}

}  // namespace farmem::bench
