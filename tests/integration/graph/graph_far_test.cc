// The graph algorithms on the far backend (paged regions on real memory nodes, a local budget
// of a quarter of the graph) over shared memory and TCP, checked against the plain references
// of the unit tests: a Kronecker graph, a directed uniform graph and hand-made corner cases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "../../unit/graph/reference.h"
#include "farmem/graph/algorithms.h"
#include "farmem/graph/far_memory.h"
#include "farmem/graph/input.h"
#include "paged/paged_fixture.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using namespace farmem::graph;

FarOptions small_pages() {
  FarOptions fo;
  fo.page_bytes = 4096;
  fo.validate = true;
  return fo;
}

// Writes `csr` to a temporary .fmg file named after `name`; returns its path ("" on failure).
std::string write_temp_fmg(const Csr& csr, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("farmem-graph-far-" + std::to_string(::getpid()) + name + ".fmg"))
                               .string();
  return write_fmg(csr, path).ok() ? path : "";
}

// BFS from `source` on `ctx` against the reference's depths.
void expect_bfs_matches(AlgorithmContext& ctx, const Csr& csr, uint32_t source) {
  auto depth = bfs(ctx, source);
  ASSERT_TRUE(depth.ok()) << depth.status().to_string();
  const auto want = reference::bfs(csr, source);
  for (uint64_t v = 0; v < csr.vertices; ++v) ASSERT_EQ((*depth)[v], want[v]) << v;
}

class GraphFarTest : public PagedTest {
 protected:
  // Builds, writes and opens `el` on the far backend; runs the algorithms against the
  // references (Radii and BC only with `every_algorithm`).
  void check_all(EdgeList el, const BuildOptions& bo, const std::string& name,
                 const FarOptions& fo = small_pages(), bool every_algorithm = true) {
    ThreadPool pool(2);
    const Csr csr = build_csr(std::move(el), bo, pool);
    const std::string path = write_temp_fmg(csr, name);
    ASSERT_FALSE(path.empty());
    FarLoad load;
    auto m = open_far(*manager_, path, fo, &load);
    std::filesystem::remove(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_TRUE(load.how == "copied" || load.how == "preloaded") << load.how;
    if (fo.sparse_view && fo.graph_page_bytes > fo.page_bytes) {  // a sparse view on small pages
      EXPECT_GT((*m)->sparse_limit(), 0u) << load.sparse_view;
      EXPECT_NE((*m)->sparse_graph().neighbours, (*m)->graph().neighbours);
    }
    AlgorithmContext ctx(**m, pool);
    const uint32_t source = max_degree_vertex(ctx);
    ASSERT_NO_FATAL_FAILURE(expect_bfs_matches(ctx, csr, source));
    PageRankOptions pr;
    pr.tolerance = 0;  // all 20 iterations
    auto rank = pagerank(ctx, pr);
    ASSERT_TRUE(rank.ok()) << rank.status().to_string();
    const auto want_rank = reference::pagerank(csr, 0.85, 20);
    for (uint64_t v = 0; v < csr.vertices; ++v) {  // float contributions: ~1e-7 relative
      ASSERT_NEAR((*rank)[v], want_rank[v], 1e-12 + 1e-6 * want_rank[v]) << v;
    }
    if (csr.symmetric) {
      auto label = connected_components(ctx);
      ASSERT_TRUE(label.ok()) << label.status().to_string();
      const auto want_label = reference::components(csr);
      for (uint64_t v = 0; v < csr.vertices; ++v) ASSERT_EQ((*label)[v], want_label[v]) << v;
    }
    const MemoryCounters c = (*m)->counters();
    EXPECT_GT(c.faults, 0u);
    EXPECT_GT(c.bytes_fetched, 0u);
    if (!every_algorithm) return;
    const uint64_t seed = test_seed();
    auto r = radii(ctx, seed);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const auto want_r = reference::radii(csr, radii_sources(csr.vertices, seed, 64));
    for (uint64_t v = 0; v < csr.vertices; ++v) ASSERT_EQ((*r)[v], want_r[v]) << v;
    const std::vector<uint32_t> sources = {source, 0};
    auto bc = betweenness(ctx, sources);
    ASSERT_TRUE(bc.ok()) << bc.status().to_string();
    const auto want_bc = reference::betweenness(csr, sources);
    for (uint64_t v = 0; v < csr.vertices; ++v) {
      ASSERT_NEAR((*bc)[v], want_bc[v], 1e-9 * (1 + std::fabs(want_bc[v]))) << v;
    }
  }
};

EdgeList generated(Generator kind, uint32_t scale, uint32_t degree, uint64_t seed) {
  ThreadPool pool(2);
  GenerateOptions o;
  o.generator = kind;
  o.scale = scale;
  o.degree = degree;
  o.seed = seed;
  auto el = generate_edges(o, pool);
  EXPECT_TRUE(el.ok());
  return std::move(*el);
}

TEST_P(GraphFarTest, KroneckerUnderAQuarterBudget) {
  paged::PageManagerOptions mo;
  // A quarter of the scale-10 graph (~140 KiB of sections plus vertex arrays).
  mo.local_bytes = 64 * 1024;
  start(mo);
  check_all(generated(Generator::kKronecker, 10, 8, test_seed()), {true, true, true}, "kron");
}

TEST_P(GraphFarTest, DirectedUniformAndCornerCases) {
  paged::PageManagerOptions mo;
  mo.local_bytes = 64 * 1024;
  start(mo);
  check_all(generated(Generator::kUniform, 8, 4, test_seed()), {}, "uniform");
  EdgeList corners;
  corners.vertices = 11;  // triangles, a path, a self loop, a duplicate, isolated 9 and 10
  corners.edges = {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {3, 3}, {6, 7}, {7, 8}, {6, 7}};
  check_all(std::move(corners), {true, false, false}, "corners");
}

// The graph's region on 2 MiB huge pages (neighbours read ahead), its sparse view and the
// vertex arrays on 4 KiB pages, under a budget of four huge pages for a graph of nine: BFS
// (whose last rounds read the sparse view), PageRank and Components against the references.
TEST_P(GraphFarTest, GraphOnHugePagesUnderEviction) {
  paged::PageManagerOptions mo;
  mo.local_bytes = 8 << 20;
  start(mo);
  // After the memory node started: over shared memory UCX may put its memory on huge pages too.
  HugePagePool pool(40);
  if (!pool.ok()) FARMEM_SKIP_OR_FAIL("no huge pages: " + pool.why());
  FarOptions fo = small_pages();
  fo.graph_page_bytes = 2 << 20;
  fo.graph_huge_pages = true;
  fo.graph_advice = paged::Advice::kSequential;
  check_all(generated(Generator::kKronecker, 17, 16, test_seed()), {true, true, true}, "huge", fo,
            false);
  const paged::ManagerStats ms = manager_->stats();
  EXPECT_GT(ms.total.evictions, 0u);
}

// A memory node with room for one copy of the graph only: the sparse view is an optimisation,
// so the graph opens without it (and says why) and BFS still matches the reference.
TEST_P(GraphFarTest, NoRoomForTheSparseViewBesideHugePagesMeansNone) {
  paged::PageManagerOptions mo;
  mo.local_bytes = 8 << 20;
  server_capacity_bytes_ = 64ull << 20;  // one 32 MiB block for the ~18 MiB graph, less for arrays
  start(mo);
  HugePagePool pool(40);
  if (!pool.ok()) FARMEM_SKIP_OR_FAIL("no huge pages: " + pool.why());
  ThreadPool threads(2);
  const Csr csr =
      build_csr(generated(Generator::kKronecker, 17, 16, test_seed()), {true, true, true}, threads);
  const std::string path = write_temp_fmg(csr, "noroom");
  ASSERT_FALSE(path.empty());
  FarOptions fo = small_pages();
  fo.graph_page_bytes = 2 << 20;
  fo.graph_huge_pages = true;
  FarLoad load;
  auto m = open_far(*manager_, path, fo, &load);
  std::filesystem::remove(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(load.sparse_view.rfind("none (", 0), 0u) << load.sparse_view;
  EXPECT_EQ((*m)->sparse_limit(), 0u);
  AlgorithmContext ctx(**m, threads);
  ASSERT_NO_FATAL_FAILURE(expect_bfs_matches(ctx, csr, max_degree_vertex(ctx)));
}

// The memory node loads the .fmg file itself (--preload-dir): nothing passes through the host.
TEST_P(GraphFarTest, PreloadedGraphGivesTheSameResults) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("farmem-graph-preload-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ThreadPool pool(2);
  const Csr csr =
      build_csr(generated(Generator::kKronecker, 10, 8, test_seed()), {true, true, true}, pool);
  ASSERT_TRUE(write_fmg(csr, (dir / "g.fmg").string()).ok());
  paged::PageManagerOptions mo;
  mo.local_bytes = 64 * 1024;
  start(mo, 1, {"--preload-dir", dir.string()});
  FarOptions fo;
  fo.page_bytes = 4096;
  fo.preload_name = "g.fmg";
  FarLoad load;
  auto m = open_far(*manager_, (dir / "g.fmg").string(), fo, &load);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(load.how, "preloaded") << load.why_copied;
  {  // the result's buffer is freed before the memory it came from
    AlgorithmContext ctx(**m, pool);
    auto label = connected_components(ctx);
    ASSERT_TRUE(label.ok()) << label.status().to_string();
    const auto want = reference::components(csr);
    for (uint64_t v = 0; v < csr.vertices; ++v) ASSERT_EQ((*label)[v], want[v]) << v;
  }
  // A name outside the node's preload_dir is refused; the backend then copies the file.
  fo.preload_name = "../g.fmg";
  auto copied = open_far(*manager_, (dir / "g.fmg").string(), fo, &load);
  ASSERT_TRUE(copied.ok()) << copied.status().to_string();
  EXPECT_EQ(load.how, "copied");
  EXPECT_FALSE(load.why_copied.empty());
  m->reset();
  copied->reset();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Transports, GraphFarTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
