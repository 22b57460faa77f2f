// The algorithms `farmem graph run` runs (farmem/bench/graph.h): one trial of one algorithm on a
// graph::AlgorithmContext, its result array and a one-line summary of it.
// Thread safety: the calling thread (the algorithm uses the context's thread pool).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/bench/graph.h"
#include "farmem/graph/algorithms.h"
#include "farmem/graph/memory.h"

namespace farmem::bench {

// One algorithm's result: the array it produced and a one-line summary.
struct Outcome {
  graph::Array<int32_t> i32;
  graph::Array<uint32_t> u32;
  graph::Array<double> f64;
  std::string summary;
  uint32_t iterations = 0;  // pr
  std::string value(uint64_t v) const {
    if (!i32.empty()) return std::to_string(i32[v]);
    if (!u32.empty()) return std::to_string(u32[v]);
    return fmt::format("{:.10g}", f64[v]);
  }
};

Result<Outcome> run_algorithm(graph::AlgorithmContext& ctx, const GraphRunOptions& o,
                              const std::vector<uint32_t>& sources);

// Vertex-array bytes per vertex each algorithm allocates (results, state, ~2 frontiers), for
// sizing a PCT% budget before the run; the measured peak is reported after.
uint64_t vertex_bytes_per_vertex(GraphAlgorithm algorithm);

}  // namespace farmem::bench
