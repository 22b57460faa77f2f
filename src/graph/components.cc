// Connected components by Afforest (Sutton et al., as GAPBS runs it): link every vertex to its
// first `kSampleRounds` neighbours and compress, which already joins most of the largest
// component; estimate that component from a fixed sample of labels; then link the remaining
// edges of every vertex outside it and compress once more.
//
// Link keeps the smaller id as the parent, so every tree's root is the smallest id of its
// component: after the final compression label[v] is exactly that (comparable across
// implementations, and the same for any thread count).
#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "farmem/graph/algorithms.h"

namespace farmem::graph {

namespace {

constexpr uint32_t kSampleRounds = 2;
constexpr uint32_t kLabelSamples = 1024;
constexpr uint64_t kComponentGrain = 16384;

uint32_t label_of(const uint32_t* comp, uint32_t v) {
  return std::atomic_ref<const uint32_t>(comp[v]).load(std::memory_order_relaxed);
}

// Joins the trees of u and v, hooking the higher root under the lower one.
void link(uint32_t u, uint32_t v, uint32_t* comp) {
  uint32_t p1 = label_of(comp, u), p2 = label_of(comp, v);
  while (p1 != p2) {
    const uint32_t high = std::max(p1, p2), low = std::min(p1, p2);
    std::atomic_ref<uint32_t> at(comp[high]);
    uint32_t p_high = at.load(std::memory_order_relaxed);
    if (p_high == low) return;
    if (p_high == high && at.compare_exchange_strong(p_high, low, std::memory_order_relaxed)) {
      return;
    }
    p1 = label_of(comp, label_of(comp, high));
    p2 = label_of(comp, low);
  }
}

void compress(AlgorithmContext& ctx, uint32_t* comp) {
  ctx.pool().parallel_for(ctx.vertices(), kComponentGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t v = b; v < e; ++v) {
      for (;;) {
        const uint32_t p = label_of(comp, static_cast<uint32_t>(v));
        const uint32_t gp = label_of(comp, p);
        if (p == gp) break;
        std::atomic_ref<uint32_t>(comp[v]).store(gp, std::memory_order_relaxed);
      }
    }
  });
}

// The most frequent label among a fixed pseudo-random sample (the largest component, likely).
uint32_t frequent_label(const uint32_t* comp, uint64_t n) {
  std::unordered_map<uint32_t, uint32_t> count;
  uint64_t state = 0x5eed;
  uint32_t best = comp[0], best_count = 0;
  for (uint32_t i = 0; i < kLabelSamples; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t label = comp[(state >> 33) % n];
    if (++count[label] > best_count) {
      best_count = count[label];
      best = label;
    }
  }
  return best;
}

}  // namespace

Result<Array<uint32_t>> connected_components(AlgorithmContext& ctx) {
  const Graph& g = ctx.graph();
  if (!g.symmetric) {
    return InvalidArgument(
        "connected components need a symmetric graph (convert with --symmetrize)");
  }
  auto label = allocate_array<uint32_t>(ctx.memory(), ctx.vertices(), "cc labels");
  FARMEM_TRY(label);
  uint32_t* comp = label->data();
  for_each_vertex(ctx, [&](uint32_t v) { comp[v] = v; });
  if (ctx.vertices() == 0) return label;
  for (uint32_t r = 0; r < kSampleRounds; ++r) {
    ctx.pool().parallel_for(g.vertices, kComponentGrain, [&](uint64_t, uint64_t b, uint64_t e) {
      for (uint64_t u = b; u < e; ++u) {
        if (g.degree(u) > r) link(static_cast<uint32_t>(u), g.begin(u)[r], comp);
      }
    });
    compress(ctx, comp);
  }
  const uint32_t largest = frequent_label(comp, g.vertices);
  ctx.pool().parallel_for(g.vertices, kComponentGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t u = b; u < e; ++u) {
      if (label_of(comp, static_cast<uint32_t>(u)) == largest) continue;
      for (const uint32_t* p = g.begin(u) + std::min<uint64_t>(g.degree(u), kSampleRounds);
           p != g.end(u); ++p) {
        link(static_cast<uint32_t>(u), *p, comp);
      }
    }
  });
  compress(ctx, comp);
  return label;
}

}  // namespace farmem::graph
