#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "farmem/graph/input.h"

namespace farmem::graph {

namespace {

constexpr uint64_t kEdgesPerChunk = 1 << 16;

// SplitMix64: the seed mixer and the stream of each chunk.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// Graph500 quadrant thresholds on a 32-bit uniform draw: A, A+B, A+B+C.
constexpr uint64_t kScale32 = 1ull << 32;
constexpr uint32_t kA = static_cast<uint32_t>(0.57 * kScale32);
constexpr uint32_t kAB = static_cast<uint32_t>(0.76 * kScale32);
constexpr uint32_t kABC = static_cast<uint32_t>(0.95 * kScale32);

Edge kron_edge(SplitMix& rng, uint32_t scale) {
  uint32_t src = 0, dst = 0;
  uint64_t bits = 0;
  for (uint32_t level = 0; level < scale; ++level) {
    if ((level & 1) == 0) bits = rng.next();
    const uint32_t r = static_cast<uint32_t>(bits);
    bits >>= 32;
    src <<= 1;
    dst <<= 1;
    if (r >= kABC) {
      src |= 1;
      dst |= 1;
    } else if (r >= kAB) {
      src |= 1;
    } else if (r >= kA) {
      dst |= 1;
    }
  }
  return {src, dst};
}

}  // namespace

Result<EdgeList> generate_edges(const GenerateOptions& o, ThreadPool& pool) {
  if (o.scale < 1 || o.scale > 31) {
    return InvalidArgument(fmt::format("scale {} out of range 1..31", o.scale));
  }
  if (o.degree < 1 || o.degree > 1024) {
    return InvalidArgument(fmt::format("degree {} out of range 1..1024", o.degree));
  }
  EdgeList el;
  el.vertices = 1ull << o.scale;
  const uint64_t m = static_cast<uint64_t>(o.degree) << o.scale;
  el.edges.resize(m);
  const uint64_t mask = el.vertices - 1;
  pool.parallel_for(m, kEdgesPerChunk, [&](uint64_t chunk, uint64_t b, uint64_t e) {
    SplitMix seeder{o.seed * 0x100000001b3ull + chunk};
    SplitMix rng{seeder.next()};
    for (uint64_t i = b; i < e; ++i) {
      if (o.generator == Generator::kKronecker) {
        el.edges[i] = kron_edge(rng, o.scale);
      } else {
        const uint64_t r = rng.next();
        el.edges[i] = {static_cast<uint32_t>(r & mask), static_cast<uint32_t>((r >> 32) & mask)};
      }
    }
  });
  if (o.generator == Generator::kKronecker) {
    // Rename vertices so that high degrees are not clustered at low ids (Fisher-Yates).
    std::vector<uint32_t> perm(el.vertices);
    std::iota(perm.begin(), perm.end(), 0u);
    SplitMix rng{o.seed ^ 0x5bd1e995ull};
    for (uint64_t i = el.vertices - 1; i > 0; --i) std::swap(perm[i], perm[rng.next() % (i + 1)]);
    pool.parallel_for(m, kEdgesPerChunk, [&](uint64_t, uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) el.edges[i] = {perm[el.edges[i].src], perm[el.edges[i].dst]};
    });
  }
  return el;
}

}  // namespace farmem::graph
