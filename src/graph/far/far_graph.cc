#include "farmem/graph/far_graph.h"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <utility>

namespace farmem::graph {

uint64_t far_graph_node_bytes(const FmgHeader& header, const FarGraphOptions& o) {
  const uint64_t copies = o.sparse_view && o.graph_page_bytes > o.page_bytes ? 3 : 2;
  return std::max<uint64_t>(1ull << 30, copies * std::bit_ceil(header.file_bytes) +
                                            64 * header.vertices + (256ull << 20));
}

namespace {

FarOptions far_options(const std::string& path, const FarGraphOptions& o) {
  FarOptions fo;
  fo.page_bytes = o.page_bytes;
  fo.graph_page_bytes = o.graph_page_bytes;
  fo.graph_huge_pages = o.huge_pages;
  fo.sparse_view = o.sparse_view;
  fo.graph_advice = o.graph_advice;
  // On huge graph pages the offsets section is nine 2 MiB pages that CLOCK keeps; read ahead
  // with the neighbours (sequential), the sweeps pushed it out (Kronecker 21 BFS: +8% bytes).
  // On small pages it follows the graph's advice: PageRank through the agent took 3x longer
  // with random-advice offsets (a round trip per offsets page).
  fo.offsets_advice = o.huge_pages ? paged::Advice::kRandom : fo.graph_advice;
  fo.random_array_advice = o.pin != FarPin::kOff ? paged::Advice::kStatic : paged::Advice::kRandom;
  fo.sequential_array_advice =
      o.pin == FarPin::kOn ? paged::Advice::kStatic : paged::Advice::kSequential;
  fo.preload_name = std::filesystem::path(path).filename().string();
  fo.graph_source = o.graph_source;
  fo.buffer_source = o.buffer_source;
  return fo;
}

}  // namespace

Result<FarGraph> open_far_graph(client::Cluster& cluster, const std::string& path,
                                const FarGraphOptions& o) {
  FarGraph g;
  paged::PageManagerOptions mo;
  mo.local_bytes = o.budget_bytes;
  if (o.budget_bytes == 0) mo.local_percent = 100;
  mo.install_threads = o.install_threads;
  FARMEM_ASSIGN_OR_RETURN(g.manager, paged::PageManager::create(cluster, mo));
  const FarOptions fo = far_options(path, o);
  g.preload_name = fo.preload_name;
  FARMEM_ASSIGN_OR_RETURN(g.memory, open_far(*g.manager, path, fo, &g.load));
  return g;
}

}  // namespace farmem::graph
