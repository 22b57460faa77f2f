// GAPBS serialized graphs (.sg, .wsg): read into an owning Csr, checked against the layout in
// docs/formats/graph.md ("GAPBS .sg / .wsg").
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "farmem/graph/format.h"
#include "farmem/graph/input.h"
#include "farmem/graph/memory.h"

namespace farmem::graph {

namespace {

constexpr uint64_t kSgHeaderBytes = 1 + 8 + 8;  // bool directed, int64 arcs, int64 vertices

Status read_exact(std::ifstream& in, void* out, uint64_t bytes, const std::string& path) {
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  if (static_cast<uint64_t>(in.gcount()) != bytes) {
    return InvalidArgument(fmt::format("{}: truncated (GAPBS .sg layout)", path));
  }
  return OkStatus();
}

// Reads the out-neighbour section: ids alone (.sg) or {id, int32 weight} pairs (.wsg).
Status read_neighbours(std::ifstream& in, Csr& g, uint64_t arcs, bool weighted,
                       const std::string& path) {
  g.neighbours.resize(arcs);
  if (!weighted) return read_exact(in, g.neighbours.data(), arcs * sizeof(uint32_t), path);
  std::vector<int32_t> pairs(2 * arcs);
  if (Status s = read_exact(in, pairs.data(), pairs.size() * sizeof(int32_t), path); !s.ok()) {
    return s;
  }
  g.weights.resize(arcs);
  for (uint64_t i = 0; i < arcs; ++i) {
    g.neighbours[i] = static_cast<uint32_t>(pairs[2 * i]);
    g.weights[i] = static_cast<float>(pairs[2 * i + 1]);
  }
  return OkStatus();
}

// GAPBS sorts its lists; a file that did not is sorted here (by id, weights alongside).
void sort_lists(Csr& g) {
  for (uint64_t v = 0; v < g.vertices; ++v) {
    uint32_t* b = g.neighbours.data() + g.offsets[v];
    uint32_t* e = g.neighbours.data() + g.offsets[v + 1];
    if (std::is_sorted(b, e)) continue;
    std::vector<std::pair<uint32_t, float>> l;
    for (uint32_t* p = b; p != e; ++p) {
      l.push_back({*p, g.weights.empty() ? 0.0f : g.weights[p - g.neighbours.data()]});
    }
    std::sort(l.begin(), l.end());
    for (size_t i = 0; i < l.size(); ++i) {
      b[i] = l[i].first;
      if (!g.weights.empty()) g.weights[g.offsets[v] + i] = l[i].second;
    }
  }
}

}  // namespace

bool is_gapbs_file(const std::string& path) {
  return path.ends_with(".sg") || path.ends_with(".wsg");
}

Result<Csr> read_gapbs_file(const std::string& path) {
  const bool weighted = path.ends_with(".wsg");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return InvalidArgument(fmt::format("cannot open {}", path));
  const uint64_t file_bytes = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint8_t directed = 0;
  int64_t arcs = 0, vertices = 0;
  FARMEM_TRY(read_exact(in, &directed, 1, path));
  FARMEM_TRY(read_exact(in, &arcs, 8, path));
  FARMEM_TRY(read_exact(in, &vertices, 8, path));
  if (directed > 1 || arcs < 0 || vertices < 0 ||
      static_cast<uint64_t>(vertices) > kFmgMaxVertices) {
    return InvalidArgument(
        fmt::format("{}: not a GAPBS serialized graph (directed={}, arcs={}, vertices={})", path,
                    directed, arcs, vertices));
  }
  const uint64_t n = static_cast<uint64_t>(vertices), m = static_cast<uint64_t>(arcs);
  const uint64_t one_csr = (n + 1) * 8 + m * (weighted ? 8 : 4);
  const uint64_t want = kSgHeaderBytes + one_csr * (directed ? 2 : 1);
  if (file_bytes != want) {
    return InvalidArgument(fmt::format(
        "{}: {} bytes, but a {} {} graph of {} vertices and {} arcs takes {} (GAPBS layout)", path,
        file_bytes, directed ? "directed" : "undirected", weighted ? ".wsg" : ".sg", n, m, want));
  }
  Csr g;
  g.vertices = n;
  g.symmetric = directed == 0;
  g.offsets.resize(n + 1);
  FARMEM_TRY(read_exact(in, g.offsets.data(), (n + 1) * 8, path));
  FARMEM_TRY(read_neighbours(in, g, m, weighted, path));
  // A directed file's in-edge CSR follows; the algorithms use out-edges only.
  FARMEM_TRY(check_fmg_sections(g.view(), path));
  sort_lists(g);
  return g;
}

}  // namespace farmem::graph
