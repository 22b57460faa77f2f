// Opening a .fmg graph on paged far memory for a run of the algorithms: a paged Manager of the
// run's local budget over a connected cluster, and the graph (far_memory.h) under the page
// sizes, read-ahead advice and pinning of vertex arrays that FarGraphOptions chooses.
//
// The graph file's region is preloaded by the memory nodes from their preload directory when
// they can (the file's name), else copied through this process. A local memory node started for
// the run should have far_graph_node_bytes() of capacity.
// Thread safety: set-up on the calling thread; the result as GraphMemory (memory.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/client/cluster.h"
#include "farmem/graph/far_memory.h"
#include "farmem/graph/format.h"
#include "farmem/graph/memory.h"
#include "farmem/paged/page_manager.h"

namespace farmem::graph {

// Which vertex arrays stay resident (static advice, within the paged layer's half of the
// budget): on: random-access ones, then sequential state; random: random-access ones only;
// off: none (paged like the rest).
enum class FarPin { kOn, kRandom, kOff };

struct FarGraphOptions {
  uint64_t budget_bytes = 0;  // the local budget; 0: unlimited
  uint64_t page_bytes = 64 * 1024;
  uint64_t graph_page_bytes = 0;  // the graph file's region (0 = page_bytes)
  bool huge_pages = false;        // the graph file's region on huge pages
  bool sparse_view = true;        // graph pages larger than page_bytes: a small-page copy
  // The graph's sections: kRandom or kSequential (read ahead of faults).
  paged::Advice graph_advice = paged::Advice::kSequential;
  FarPin pin = FarPin::kOn;
  uint32_t install_threads = 2;  // paged::PageManagerOptions::install_threads
  // Where pages come from (null = the memory nodes directly): the graph's region, the vertex
  // arrays' regions (agent mode).
  std::shared_ptr<paged::PageSource> graph_source;
  std::shared_ptr<paged::PageSource> buffer_source;
};

// Memory-node bytes a graph of `header` needs under `o`: its copies (two, three with a sparse
// view; each the file size rounded up to a power of two, the allocator's blocks) and the vertex
// arrays, with room to spare (at least 1 GiB).
uint64_t far_graph_node_bytes(const FmgHeader& header, const FarGraphOptions& o);

// A graph in far memory and the Manager its regions live in (memory goes first).
struct FarGraph {
  std::unique_ptr<paged::PageManager> manager;
  std::unique_ptr<GraphMemory> memory;
  FarLoad load;              // how the graph got there
  std::string preload_name;  // the file's name in the nodes' preload directory
};

// Opens the .fmg file at `path` on `cluster` (which must outlive the result).
Result<FarGraph> open_far_graph(client::Cluster& cluster, const std::string& path,
                                const FarGraphOptions& o);

}  // namespace farmem::graph
