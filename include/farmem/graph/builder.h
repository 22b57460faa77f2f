// Building a CSR graph from an edge list, and writing it as a .fmg file.
//
// build_csr: neighbour lists come out sorted ascending (by id, then weight), so the result is
// the same for any thread count. Options: symmetrize (add (v,u) for every (u,v)), drop self
// loops, drop duplicate edges (of equal (u,v) the one with the smallest weight stays). The
// result's `symmetric` flag is set when every (u,v) has its (v,u) (by construction when
// symmetrizing, else checked).
// Thread safety: build_csr drives `pool` (one caller at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/graph/graph.h"
#include "farmem/graph/thread_pool.h"

namespace farmem::graph {

struct Edge {
  uint32_t src;
  uint32_t dst;
};

struct EdgeList {
  uint64_t vertices = 0;  // ids are < vertices
  std::vector<Edge> edges;
  std::vector<float> weights;  // empty (unweighted) or one per edge
};

struct BuildOptions {
  bool symmetrize = false;
  bool remove_self_loops = false;
  bool remove_duplicates = false;
};

// What build_csr dropped (input edges, reverse edges added and entries removed).
struct BuildStats {
  uint64_t input_edges = 0;
  uint64_t reverse_edges_added = 0;
  uint64_t self_loops_dropped = 0;
  uint64_t duplicates_dropped = 0;  // of those added by symmetrizing or in the input
};

// An owning CSR graph in DRAM.
struct Csr {
  uint64_t vertices = 0;
  bool symmetric = false;
  std::vector<uint64_t> offsets;  // vertices + 1
  std::vector<uint32_t> neighbours;
  std::vector<float> weights;  // empty or parallel to neighbours
  Graph view() const;
};

// Symmetrizing never creates a duplicate: with remove_duplicates every (u,v) stays once; without
// it, (v,u) is added only for the (u,v) that have no (v,u) already (one per occurrence, so the
// input's own duplicates are mirrored and the result is symmetric).
// Precondition: every id < el.vertices <= kFmgMaxVertices; weights empty or one per edge.
Csr build_csr(EdgeList el, const BuildOptions& options, ThreadPool& pool,
              BuildStats* stats = nullptr);

// Relabels the vertices by descending degree (ties keep the lower old id first): new vertex i is
// old vertex old_ids[i]. The result is isomorphic to `in` (same symmetric flag, every list
// sorted as build_csr sorts), and its high-degree vertices and their long lists come first, so
// an algorithm that finishes with the hubs early (a BFS, a pull that stops at its first hit on
// a hub) leaves whole stretches of the neighbour array untouched afterwards: at page
// granularity that is what a far-memory or mmap backend fetches. `old_ids` may be null.
// Thread safety: drives `pool` (one caller at a time).
Csr reorder_by_degree(const Csr& in, ThreadPool& pool, std::vector<uint32_t>* old_ids);

// Writes `csr` to `path` (created or truncated) in the .fmg layout (docs/formats/graph.md).
Status write_fmg(const Csr& csr, const std::string& path);

}  // namespace farmem::graph
