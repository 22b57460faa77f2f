// Graph inputs: synthetic generators (Graph500 Kronecker, uniform random) and edge-list files.
//
// generate_edges: `degree << scale` edges over 2^scale vertices. kron draws each edge's
// endpoints bit by bit with the Graph500 quadrant probabilities A=0.57, B=0.19, C=0.19
// (D=0.05), as GAPBS does, then renames the vertices by a seeded random permutation; uniform
// draws both endpoints uniformly. Edge i depends only on (seed, i), so the list is the same
// for any thread count. The raw list may hold self loops and duplicates (callers building a
// graph from it usually drop them).
//
// read_edge_file: by extension,
//   .el   "src dst" per line, 0-based ids;
//   .wel  "src dst weight" per line (weight a number);
//   .mtx  Matrix Market coordinate (pattern | integer | real, general | symmetric), 1-based;
//         a symmetric file's off-diagonal entries are mirrored.
// Blank lines and lines starting with '#' or '%' (.el/.wel) are skipped. Anything else that
// does not parse is kInvalidArgument naming the file and line.
//
// read_gapbs_file: a GAPBS serialized graph, .sg (unweighted) or .wsg (int32 weights, read as
// floats), layout in docs/formats/graph.md; the size must match the header exactly, offsets
// and ids are checked, lists sorted if they are not. An undirected file is symmetric; of a
// directed one only the out-edge CSR is kept.
// Thread safety: generate_edges drives `pool`; the readers are plain functions.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/common/result.h"
#include "farmem/graph/builder.h"
#include "farmem/graph/thread_pool.h"

namespace farmem::graph {

enum class Generator { kKronecker, kUniform };

struct GenerateOptions {
  Generator generator = Generator::kKronecker;
  uint32_t scale = 10;  // 2^scale vertices (1..31)
  uint32_t degree = 16;
  uint64_t seed = 1;
};

Result<EdgeList> generate_edges(const GenerateOptions& options, ThreadPool& pool);

Result<EdgeList> read_edge_file(const std::string& path);

bool is_gapbs_file(const std::string& path);  // ends in .sg or .wsg
Result<Csr> read_gapbs_file(const std::string& path);

}  // namespace farmem::graph
