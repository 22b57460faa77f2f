// The far backend of GraphMemory: the graph and every vertex array in paged far-memory regions
// (farmem::paged), so the algorithms run unchanged on ordinary pointers while the PageManager's
// local budget bounds what is resident.
//
// The .fmg file becomes one region: allocate_from_file(preload_name) when the memory nodes can
// preload it (the file never passes through this process), else (kUnavailable from the nodes)
// a region of the file's size filled by reading the file here ("copied"). Sections start on
// 1 MiB boundaries, so each is whole pages of any page size up to 1 MiB. Vertex arrays are
// PageManager::allocate regions. counters() are the PageManager's (faults, bytes fetched, bytes
// written back).
// Thread safety: as GraphMemory; the PageManager must outlive the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/graph/memory.h"
#include "farmem/paged/page_manager.h"

namespace farmem::graph {

struct FarOptions {
  uint64_t page_bytes = paged::kDefaultPageBytes;
  // The graph file's region: its page size (0 = page_bytes) and whether it sits on huge pages
  // (paged::RegionOptions::huge_pages).
  uint64_t graph_page_bytes = 0;
  bool graph_huge_pages = false;
  // With graph pages larger than page_bytes: a second copy of the graph on page_bytes pages
  // for sparse rounds over few vertices (GraphMemory::sparse_graph; twice the graph's memory
  // on the memory nodes unless they share preloaded copies).
  bool sparse_view = true;
  std::string preload_name;  // the file's name in the memory nodes' preload_dir ("" = copy)
  bool validate = false;     // check offsets and neighbour ids at open (reads the whole graph)
  // Advice for the neighbours section and the offsets section (sequential: the pager reads
  // ahead of faults, which suits dense rounds that sweep the graph; vertex arrays stay random).
  // `farmem graph run` gives the offsets random advice on huge graph pages (far_graph.h).
  paged::Advice graph_advice = paged::Advice::kRandom;
  paged::Advice offsets_advice = paged::Advice::kRandom;
  // Read-ahead of the graph's region under sequential advice, in bytes (at least one page, at
  // most PageSource::kMaxPagesPerCall: 4 MiB on 64 KiB pages, 16 MiB on 2 MiB ones). Kronecker
  // 21 PageRank at 25%: on huge pages 16 MiB ran 1.6x faster than 512 KiB, on 64 KiB pages 4 MiB
  // about 1.15x.
  uint64_t graph_readahead_bytes = 16 * 1024 * 1024;
  // Advice for Access::kRandom vertex arrays (static: pinned resident, within the paged
  // layer's limit of half the budget; random: paged like the rest).
  // `farmem graph run` passes static unless --far-pin off (BC's later trials are no longer
  // slower since each trial's result is freed before the next trial; pinning cut PageRank's
  // faults 8x at Kronecker 21, 25% budget).
  paged::Advice random_array_advice = paged::Advice::kRandom;
  // Advice for Access::kSequential vertex arrays (sequential: read ahead and paged like the
  // graph; static: pinned too, in allocation order while the half-budget limit lasts, so an
  // algorithm allocates its random-access arrays first). `farmem graph run` passes static
  // unless --far-pin random|off (PageRank's write-back 412 -> 102 MB per trial, -11% time at
  // Kronecker 21, 25%). Access::kScratch arrays always get sequential advice.
  paged::Advice sequential_array_advice = paged::Advice::kSequential;
  // Where pages come from (RegionOptions::source; null = direct): the graph file's region and
  // the vertex arrays' regions (agent mode: agent::make_agent_source with per-source caching).
  std::shared_ptr<paged::PageSource> graph_source;
  std::shared_ptr<paged::PageSource> buffer_source;
};

// How the graph got into far memory: "preloaded" or "copied".
struct FarLoad {
  std::string how;
  std::string why_copied;  // the preload's error when copied
  // The sparse view (FarOptions::sparse_view): how it was made, or why there is none ("" when
  // not asked for).
  std::string sparse_view;
};

Result<std::unique_ptr<GraphMemory>> open_far(paged::PageManager& manager, const std::string& path,
                                              const FarOptions& options, FarLoad* load = nullptr);

}  // namespace farmem::graph
