// `farmem graph generate` and `farmem graph convert` (farmem/bench/graph.h): build a graph's
// CSR (generated, or read from an edge file), relabel it by degree if asked, write it as .fmg.
#include <fmt/format.h>

#include "farmem/bench/graph.h"
#include "farmem/graph/builder.h"
#include "farmem/graph/format.h"
#include "farmem/graph/input.h"
#include "farmem/graph/thread_pool.h"
#include "graph_output.h"

namespace farmem::bench {
namespace {

Status write_order_map(const std::vector<uint32_t>& old_ids, const std::string& path) {
  return write_id_lines(path, old_ids.size(), [&](uint64_t i) { return old_ids[i]; });
}

// --order degree: relabels by descending degree (and writes --order-map when asked).
Status apply_order(graph::Csr& csr, const GraphOutputOptions& f, graph::ThreadPool& pool) {
  if (f.order != VertexOrder::kDegree) return OkStatus();
  std::vector<uint32_t> old_ids;
  csr = graph::reorder_by_degree(csr, pool, &old_ids);
  fmt::print(stderr, "graph: relabelled by descending degree{}\n",
             f.order_map.empty() ? "" : fmt::format("; new -> old ids in {}", f.order_map));
  return f.order_map.empty() ? OkStatus() : write_order_map(old_ids, f.order_map);
}

int write_graph(graph::Csr& csr, const GraphOutputOptions& f, graph::ThreadPool& pool,
                double start) {
  const std::string& out = f.out;
  fmt::print(stderr, "graph: built {} vertices, {} edges ({}) in {:.2f} s\n", csr.vertices,
             csr.neighbours.size(), csr.symmetric ? "symmetric" : "directed", now_s() - start);
  if (Status s = apply_order(csr, f, pool); !s.ok()) return graph_fail(s.to_string());
  fmt::print(stderr, "graph: writing {}\n", out);
  if (Status s = graph::write_fmg(csr, out); !s.ok()) return graph_fail(s.to_string());
  fmt::print("wrote {}: vertices={} edges={} symmetric={} weighted={} seconds={:.2f}\n", out,
             csr.vertices, csr.neighbours.size(), csr.symmetric, !csr.weights.empty(),
             now_s() - start);
  return 0;
}

}  // namespace

int run_graph_generate(const GraphGenerateOptions& f) {
  if ((f.kron_scale == 0) == (f.uniform_scale == 0)) {
    return graph_fail("generate needs exactly one of --kron SCALE or --uniform SCALE");
  }
  const double start = now_s();
  graph::ThreadPool pool(f.output.threads);
  graph::GenerateOptions o;
  o.generator = f.kron_scale != 0 ? graph::Generator::kKronecker : graph::Generator::kUniform;
  o.scale = f.kron_scale != 0 ? f.kron_scale : f.uniform_scale;
  o.degree = f.degree;
  o.seed = f.seed;
  fmt::print(stderr, "graph: generating {} scale {} degree {} seed {} ({} threads)\n",
             f.kron_scale != 0 ? "kron" : "uniform", o.scale, o.degree, o.seed, pool.threads());
  auto el = graph::generate_edges(o, pool);
  if (!el.ok()) return graph_fail(el.status().to_string());
  graph::BuildOptions b;
  b.symmetrize = !f.directed;
  b.remove_self_loops = true;
  b.remove_duplicates = true;
  graph::Csr csr = graph::build_csr(std::move(*el), b, pool);
  return write_graph(csr, f.output, pool, start);
}

int run_graph_convert(const GraphConvertOptions& f) {
  const double start = now_s();
  graph::ThreadPool pool(f.output.threads);
  if (graph::is_gapbs_file(f.input)) {
    if (f.symmetrize) return graph_fail("--symmetrize: a GAPBS .sg/.wsg is converted as it is");
    auto csr = graph::read_gapbs_file(f.input);
    if (!csr.ok()) return graph_fail(csr.status().to_string());
    return write_graph(*csr, f.output, pool, start);
  }
  auto el = graph::read_edge_file(f.input);
  if (!el.ok()) return graph_fail(el.status().to_string());
  fmt::print(stderr, "graph: read {} edges over {} vertices from {}\n", el->edges.size(),
             el->vertices, f.input);
  graph::BuildOptions b;
  b.symmetrize = f.symmetrize;
  b.remove_self_loops = !f.keep_duplicates;
  b.remove_duplicates = !f.keep_duplicates;
  graph::BuildStats stats;
  graph::Csr csr = graph::build_csr(std::move(*el), b, pool, &stats);
  fmt::print(
      "graph: input edges={} reverse_added={} self_loops_dropped={} "
      "duplicates_dropped={}\n",
      stats.input_edges, stats.reverse_edges_added, stats.self_loops_dropped,
      stats.duplicates_dropped);
  return write_graph(csr, f.output, pool, start);
}

}  // namespace farmem::bench
