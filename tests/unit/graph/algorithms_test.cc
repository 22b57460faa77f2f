// Every graph algorithm on every backend (local, mmap) over generated graphs (Kronecker and
// uniform, seeded) and hand-made corner cases, checked against the plain references in
// reference.h. The graphs go through a .fmg file, so the format is exercised too.
#include "farmem/graph/algorithms.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "farmem/graph/builder.h"
#include "farmem/graph/edge_map.h"
#include "farmem/graph/input.h"
#include "farmem/graph/memory.h"
#include "reference.h"
#include "test_seed.h"

namespace farmem::graph {
namespace {

struct Case {
  std::string name;
  EdgeList edges;
  BuildOptions options;
  bool by_degree = false;  // relabelled by reorder_by_degree after building
};

EdgeList edges_of(uint64_t vertices, std::vector<Edge> e, std::vector<float> w = {}) {
  EdgeList el;
  el.vertices = vertices;
  el.edges = std::move(e);
  el.weights = std::move(w);
  return el;
}

EdgeList generated(Generator kind, uint32_t scale, uint32_t degree, uint64_t seed) {
  ThreadPool pool(2);
  GenerateOptions o;
  o.generator = kind;
  o.scale = scale;
  o.degree = degree;
  o.seed = seed;
  auto el = generate_edges(o, pool);
  EXPECT_TRUE(el.ok()) << el.status().to_string();
  return std::move(*el);
}

std::vector<Case> cases() {
  const uint64_t seed = testing::test_seed();
  BuildOptions sym_clean{true, true, true};
  BuildOptions keep{};
  std::vector<Case> out;
  out.push_back({"kron11", generated(Generator::kKronecker, 11, 8, seed), sym_clean});
  out.push_back({"uniform10", generated(Generator::kUniform, 10, 4, seed + 1), sym_clean});
  out.push_back({"directed_uniform9", generated(Generator::kUniform, 9, 3, seed + 2), keep});
  // Two triangles, a path, isolated vertices 9 and 10, a self loop on 3, a duplicate edge.
  out.push_back(
      {"corners",
       edges_of(11,
                {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {3, 3}, {6, 7}, {7, 8}, {6, 7}}),
       {true, false, false}});
  out.push_back({"single_vertex", edges_of(1, {}), keep});
  out.push_back({"single_self_loop", edges_of(1, {{0, 0}}), {true, false, false}});
  out.push_back({"weighted",
                 edges_of(5, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}, {0.5f, 2, 1, 7}),
                 {true, true, true}});
  out.push_back({"directed_dangling", edges_of(6, {{0, 1}, {1, 2}, {2, 0}, {2, 3}, {4, 3}}), keep});
  Case hubs_first{"kron11_by_degree", generated(Generator::kKronecker, 11, 8, seed), sym_clean};
  hubs_first.by_degree = true;
  out.push_back(std::move(hubs_first));
  return out;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("farmem-graph-test-" + std::to_string(::getpid()) + "-" + name + ".fmg"))
      .string();
}

Result<std::unique_ptr<GraphMemory>> open_backend(const std::string& backend,
                                                  const std::string& path) {
  if (backend == "mmap") return open_mmap(path, MmapOptions{"random", "/tmp"});
  return open_local(path);
}

class GraphAlgorithmsTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    auto all = cases();
    const auto& [backend, index] = GetParam();
    ASSERT_LT(static_cast<size_t>(index), all.size());
    Case c = std::move(all[index]);
    ThreadPool build_pool(2);
    csr_ = build_csr(std::move(c.edges), c.options, build_pool);
    if (c.by_degree) csr_ = reorder_by_degree(csr_, build_pool, nullptr);
    path_ = temp_path(backend + "-" + c.name);
    ASSERT_TRUE(write_fmg(csr_, path_).ok());
    auto m = open_backend(backend, path_);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    memory_ = std::move(*m);
    pool_ = std::make_unique<ThreadPool>(2);
    ctx_ = std::make_unique<AlgorithmContext>(*memory_, *pool_);
  }
  void TearDown() override {
    ctx_.reset();
    memory_.reset();
    std::filesystem::remove(path_);
  }

  Csr csr_;
  std::string path_;
  std::unique_ptr<GraphMemory> memory_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<AlgorithmContext> ctx_;
};

TEST_P(GraphAlgorithmsTest, GraphMatchesTheBuiltCsr) {
  const Graph& g = ctx_->graph();
  ASSERT_EQ(g.vertices, csr_.vertices);
  ASSERT_EQ(g.edges, csr_.neighbours.size());
  EXPECT_EQ(g.symmetric, csr_.symmetric);
  EXPECT_EQ((g.weights != nullptr), !csr_.weights.empty());
  for (uint64_t v = 0; v <= g.vertices; ++v) ASSERT_EQ(g.offsets[v], csr_.offsets[v]);
  for (uint64_t i = 0; i < g.edges; ++i) ASSERT_EQ(g.neighbours[i], csr_.neighbours[i]);
  for (uint64_t i = 0; g.weights != nullptr && i < g.edges; ++i) {
    ASSERT_EQ(g.weights[i], csr_.weights[i]);
  }
}

TEST_P(GraphAlgorithmsTest, BfsDepthsMatchAQueueBfs) {
  for (uint32_t source : {0u, max_degree_vertex(*ctx_), static_cast<uint32_t>(csr_.vertices - 1)}) {
    auto depth = bfs(*ctx_, source);
    ASSERT_TRUE(depth.ok()) << depth.status().to_string();
    const auto want = reference::bfs(csr_, source);
    for (uint64_t v = 0; v < csr_.vertices; ++v) {
      ASSERT_EQ((*depth)[v], want[v]) << "source " << source << " vertex " << v;
    }
  }
  EXPECT_FALSE(bfs(*ctx_, static_cast<uint32_t>(csr_.vertices)).ok());
}

TEST_P(GraphAlgorithmsTest, PageRankMatchesPowerIterationInBothConventions) {
  for (PageRankConvention convention :
       {PageRankConvention::kNetworkx, PageRankConvention::kGapbs}) {
    const bool spread = convention == PageRankConvention::kNetworkx;
    PageRankOptions o;
    o.iterations = 15;
    o.tolerance = 0;
    o.convention = convention;
    uint32_t ran = 0;
    auto rank = pagerank(*ctx_, o, &ran);
    ASSERT_TRUE(rank.ok()) << rank.status().to_string();
    EXPECT_EQ(ran, 15u);
    const auto want = reference::pagerank(csr_, o.damping, o.iterations, spread);
    double sum = 0;
    for (uint64_t v = 0; v < csr_.vertices; ++v) {
      // Contributions are floats (as GAPBS's scores): about 1e-7 relative.
      ASSERT_NEAR((*rank)[v], want[v], 1e-12 + 1e-6 * want[v]) << "spread " << spread << " v " << v;
      sum += (*rank)[v];
    }
    if (spread) {
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
    // With a tolerance the run stops after the first iteration whose L1 change is below it.
    std::vector<double> changes;
    reference::pagerank(csr_, o.damping, 200, spread, &changes);
    o.iterations = 200;
    o.tolerance = 1e-4;  // GAPBS's default
    ASSERT_TRUE(pagerank(*ctx_, o, &ran).ok());
    // (Float contributions move a change by ~1e-7 relative: the stop is checked with a 1% band.)
    ASSERT_GE(ran, 1u);
    ASSERT_LT(ran, 200u) << "spread " << spread;
    EXPECT_LT(changes[ran - 1], o.tolerance * 1.01) << "spread " << spread;
    if (ran >= 2) {
      EXPECT_GT(changes[ran - 2], o.tolerance * 0.99) << "spread " << spread;
    }
  }
}

TEST_P(GraphAlgorithmsTest, ComponentsMatchUnionFind) {
  auto label = connected_components(*ctx_);
  if (!csr_.symmetric) {
    EXPECT_EQ(label.status().code(), StatusCode::kInvalidArgument);
    return;
  }
  ASSERT_TRUE(label.ok()) << label.status().to_string();
  const auto want = reference::components(csr_);
  for (uint64_t v = 0; v < csr_.vertices; ++v) ASSERT_EQ((*label)[v], want[v]) << "vertex " << v;
}

TEST_P(GraphAlgorithmsTest, RadiiMatchBfsFromTheSampledSources) {
  const uint64_t seed = testing::test_seed();
  auto r = radii(*ctx_, seed);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto sources = radii_sources(csr_.vertices, seed, 64);
  EXPECT_EQ(sources.size(), std::min<uint64_t>(64, csr_.vertices));
  const auto want = reference::radii(csr_, sources);
  for (uint64_t v = 0; v < csr_.vertices; ++v) ASSERT_EQ((*r)[v], want[v]) << "vertex " << v;
}

TEST_P(GraphAlgorithmsTest, BetweennessMatchesBrandes) {
  std::vector<uint32_t> sources = {max_degree_vertex(*ctx_), 0};
  if (csr_.vertices > 3) sources.push_back(3);
  auto bc = betweenness(*ctx_, sources);
  ASSERT_TRUE(bc.ok()) << bc.status().to_string();
  const auto want = reference::betweenness(csr_, sources);
  for (uint64_t v = 0; v < csr_.vertices; ++v) {
    ASSERT_NEAR((*bc)[v], want[v], 1e-9 * (1 + std::fabs(want[v]))) << "vertex " << v;
  }
  // GAPBS's normalisation: divided by the greatest score.
  const double most = *std::max_element(want.begin(), want.end());
  normalize_betweenness(*ctx_, *bc, BcNormalization::kMax, sources.size());
  for (uint64_t v = 0; v < csr_.vertices; ++v) {
    const double expect = most > 0 ? want[v] / most : want[v];
    ASSERT_NEAR((*bc)[v], expect, 1e-9 * (1 + std::fabs(expect))) << "vertex " << v;
  }
}

TEST_P(GraphAlgorithmsTest, ResultsDoNotDependOnTheThreadCount) {
  ThreadPool one(1);
  AlgorithmContext single(*memory_, one);
  auto a = bfs(single, max_degree_vertex(single));
  auto b = bfs(*ctx_, max_degree_vertex(*ctx_));
  ASSERT_TRUE(a.ok() && b.ok());
  for (uint64_t v = 0; v < csr_.vertices; ++v) ASSERT_EQ((*a)[v], (*b)[v]);
  if (!csr_.symmetric) return;  // directed PageRank adds atomically
  auto p = pagerank(single, {});
  auto q = pagerank(*ctx_, {});
  ASSERT_TRUE(p.ok() && q.ok());
  for (uint64_t v = 0; v < csr_.vertices; ++v) ASSERT_EQ((*p)[v], (*q)[v]);
}

// networkx.betweenness_centrality(G) (normalized=True, every vertex a source) on graphs whose
// values are known: a path a-b-c gives b 1.0; a star's centre 1.0; a 4-cycle 1/6 everywhere.
TEST(GraphBetweenness, NetworkxNormalisationMatchesItsKnownValues) {
  const std::string path = temp_path("bc-networkx");
  ThreadPool pool(2);
  struct Known {
    EdgeList edges;
    std::vector<double> want;
  };
  std::vector<Known> known;
  known.push_back({edges_of(3, {{0, 1}, {1, 2}}), {0, 1, 0}});
  known.push_back({edges_of(5, {{0, 1}, {0, 2}, {0, 3}, {0, 4}}), {1, 0, 0, 0, 0}});
  known.push_back(
      {edges_of(4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}), {1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}});
  for (Known& k : known) {
    const Csr csr = build_csr(std::move(k.edges), {true, true, true}, pool);
    ASSERT_TRUE(write_fmg(csr, path).ok());
    auto m = open_local(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    AlgorithmContext ctx(**m, pool);
    std::vector<uint32_t> all(csr.vertices);
    for (uint32_t v = 0; v < csr.vertices; ++v) all[v] = v;
    auto bc = betweenness(ctx, all);
    ASSERT_TRUE(bc.ok()) << bc.status().to_string();
    normalize_betweenness(ctx, *bc, BcNormalization::kNetworkx, all.size());
    for (uint64_t v = 0; v < csr.vertices; ++v) EXPECT_NEAR((*bc)[v], k.want[v], 1e-12) << v;
  }
  std::filesystem::remove(path);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  static const std::vector<Case> all = cases();
  return std::get<0>(info.param) + "_" + all[std::get<1>(info.param)].name;
}

// Visits every edge once (a sparse push's functor).
struct TakeAll {
  bool cond(uint32_t) const { return true; }
  bool update(uint32_t, uint32_t) const { return true; }
  bool update_atomic(uint32_t, uint32_t) const { return true; }
};

// A small sparse round's output is in id order, whatever order the lists were visited in (the
// next round then reads the lists front to back).
TEST(GraphEdgeMap, SmallSparseOutputsComeSortedById) {
  // 1 -> {10, 30}, 2 -> {20, 40}: visited 10, 30, 20, 40.
  const std::string path = temp_path("sorted-sparse");
  ThreadPool pool(1);
  const Csr csr = build_csr(edges_of(41, {{1, 10}, {1, 30}, {2, 20}, {2, 40}}), {}, pool);
  ASSERT_TRUE(write_fmg(csr, path).ok());
  auto m = open_local(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  {
    AlgorithmContext ctx(**m, pool);
    auto in = ctx.frontier_of({1, 2});
    ASSERT_TRUE(in.ok());
    TakeAll f;
    EdgeMapOptions o;
    o.allow_dense = false;
    auto out = edge_map(ctx, *in, f, o);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_FALSE(out->dense());
    const std::vector<uint32_t> got(out->ids(), out->ids() + out->size());
    EXPECT_EQ(got, (std::vector<uint32_t>{10, 20, 30, 40}));
  }
  m->reset();
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Backends, GraphAlgorithmsTest,
                         ::testing::Combine(::testing::Values("local", "mmap"),
                                            ::testing::Range(0, 9)),
                         case_name);

}  // namespace
}  // namespace farmem::graph
