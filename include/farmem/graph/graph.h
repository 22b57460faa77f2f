// Graph: a read-only CSR view over three pointers (the sections of a .fmg file wherever a
// GraphMemory backend put them). Out-neighbours of v are neighbours[offsets[v] ..
// offsets[v+1]), sorted ascending; weights (may be null) run parallel to neighbours.
// A symmetric graph's in-neighbours are its out-neighbours.
// Thread safety: a value over memory nobody writes; any thread may read.
#pragma once

#include <cstdint>

namespace farmem::graph {

struct Graph {
  uint64_t vertices = 0;
  uint64_t edges = 0;  // directed entries
  bool symmetric = false;
  const uint64_t* offsets = nullptr;     // vertices + 1
  const uint32_t* neighbours = nullptr;  // edges
  const float* weights = nullptr;        // edges, or null

  uint64_t degree(uint64_t v) const { return offsets[v + 1] - offsets[v]; }
  const uint32_t* begin(uint64_t v) const { return neighbours + offsets[v]; }
  const uint32_t* end(uint64_t v) const { return neighbours + offsets[v + 1]; }
};

}  // namespace farmem::graph
