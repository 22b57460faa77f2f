// The .fmg layout (round trip, alignment, refusal of damaged files), the generators
// (determinism, shape) and the edge-list / Matrix Market readers (each format, malformed files).
#include "farmem/graph/format.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "farmem/graph/builder.h"
#include "farmem/graph/input.h"
#include "farmem/graph/memory.h"
#include "test_seed.h"

namespace farmem::graph {
namespace {

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("farmem-graph-fmt-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// Writes `text` to a temporary file called `name`, reads it as an edge file, removes it.
Result<EdgeList> read_text_as(const std::string& name, const std::string& text) {
  const std::string path = temp_file(name);
  std::ofstream(path) << text;
  auto r = read_edge_file(path);
  std::filesystem::remove(path);
  return r;
}

Csr small_weighted() {
  ThreadPool pool(2);
  EdgeList el;
  el.vertices = 6;
  el.edges = {{0, 1}, {1, 2}, {2, 0}, {4, 3}, {0, 1}};
  el.weights = {1.5f, 2, 3, 4, 0.5f};
  return build_csr(std::move(el), {}, pool);
}

void patch(const std::string& path, uint64_t offset, const void* bytes, size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
  ::close(fd);
}

TEST(FmgFormat, RoundTripKeepsEverySectionAndAlignsThem) {
  const Csr csr = small_weighted();
  ASSERT_EQ(csr.neighbours.size(), 5u);  // duplicates kept without remove_duplicates
  EXPECT_FALSE(csr.symmetric);
  const std::string path = temp_file("rt.fmg");
  ASSERT_TRUE(write_fmg(csr, path).ok());
  auto h = read_fmg_header(path);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(h->vertices, 6u);
  EXPECT_EQ(h->edges, 5u);
  EXPECT_EQ(h->flags, kFmgWeighted);
  EXPECT_EQ(std::filesystem::file_size(path), h->file_bytes);
  for (const auto& s : h->sections) EXPECT_EQ(s.offset % kFmgSectionAlign, 0u);
  EXPECT_EQ(h->sections[0].offset, kFmgSectionAlign);
  EXPECT_EQ(h->sections[1].offset, 2 * kFmgSectionAlign);
  EXPECT_EQ(h->sections[2].bytes, 5 * sizeof(float));
  auto m = open_local(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Graph& g = (*m)->graph();
  for (uint64_t v = 0; v <= 6; ++v) EXPECT_EQ(g.offsets[v], csr.offsets[v]);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(g.neighbours[i], csr.neighbours[i]);
    EXPECT_EQ(g.weights[i], csr.weights[i]);
  }
  // Vertex 0's duplicate edges to 1 are sorted by weight.
  EXPECT_EQ(g.weights[0], 0.5f);
  std::filesystem::remove(path);
}

TEST(FmgFormat, DamagedFilesAreRefusedWithAReason) {
  const std::string path = temp_file("bad.fmg");
  auto fresh = [&] { ASSERT_TRUE(write_fmg(small_weighted(), path).ok()); };
  fresh();
  const uint64_t bad_magic = 42;
  patch(path, 0, &bad_magic, 8);
  EXPECT_EQ(read_fmg_header(path).status().code(), StatusCode::kInvalidArgument);
  fresh();
  const uint32_t version = 9;
  patch(path, 8, &version, 4);
  EXPECT_EQ(read_fmg_header(path).status().code(), StatusCode::kVersionMismatch);
  fresh();
  const uint32_t flags = 0x80;
  patch(path, 12, &flags, 4);
  EXPECT_FALSE(read_fmg_header(path).ok());
  fresh();
  const uint64_t vertices = 1000;  // sections no longer match the counts
  patch(path, 16, &vertices, 8);
  EXPECT_FALSE(read_fmg_header(path).ok());
  fresh();
  std::filesystem::resize_file(path, kFmgSectionAlign + 100);  // truncated
  EXPECT_FALSE(read_fmg_header(path).ok());
  EXPECT_FALSE(open_local(path).ok());
  fresh();
  const uint32_t not_a_vertex = 6;  // neighbour id out of range
  patch(path, 2 * kFmgSectionAlign, &not_a_vertex, 4);
  EXPECT_TRUE(read_fmg_header(path).ok());
  auto m = open_local(path);
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().to_string().find("neighbour"), std::string::npos);
  EXPECT_FALSE(open_mmap(path, {}).ok());
  fresh();
  const uint64_t decreasing = 4;  // offsets[1] = 4 > offsets[2]
  patch(path, kFmgSectionAlign + 8, &decreasing, 8);
  EXPECT_FALSE(open_local(path).ok());
  EXPECT_EQ(read_fmg_header(temp_file("missing.fmg")).status().code(), StatusCode::kNotFound);
  std::filesystem::remove(path);
}

TEST(Generators, SameEdgesForAnyThreadCountAndSeedMatters) {
  const uint64_t seed = testing::test_seed();
  for (Generator kind : {Generator::kKronecker, Generator::kUniform}) {
    GenerateOptions o;
    o.generator = kind;
    o.scale = 12;
    o.degree = 8;
    o.seed = seed;
    ThreadPool one(1), two(2);
    auto a = generate_edges(o, one);
    auto b = generate_edges(o, two);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->edges.size(), 8u << 12);
    EXPECT_EQ(std::memcmp(a->edges.data(), b->edges.data(), a->edges.size() * sizeof(Edge)), 0);
    o.seed = seed + 1;
    auto c = generate_edges(o, two);
    EXPECT_NE(std::memcmp(a->edges.data(), c->edges.data(), a->edges.size() * sizeof(Edge)), 0);
    const Csr g = build_csr(std::move(*a), {true, true, true}, two);
    EXPECT_TRUE(g.symmetric);
    uint64_t max_degree = 0;
    for (uint64_t v = 0; v < g.vertices; ++v) {
      max_degree = std::max(max_degree, g.offsets[v + 1] - g.offsets[v]);
      for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
        ASSERT_NE(g.neighbours[i], v);  // no self loops
        if (i > g.offsets[v]) {
          ASSERT_LT(g.neighbours[i - 1], g.neighbours[i]);  // no duplicates
        }
      }
    }
    const double average = static_cast<double>(g.neighbours.size()) / g.vertices;
    if (kind == Generator::kKronecker) {
      EXPECT_GT(max_degree, 10 * average);  // skewed
    } else {
      EXPECT_LT(max_degree, 4 * average);
    }
  }
  GenerateOptions bad;
  bad.scale = 0;
  ThreadPool pool(1);
  EXPECT_FALSE(generate_edges(bad, pool).ok());
}

TEST(EdgeFiles, ReadsEachFormat) {
  auto el = read_text_as("a.el", "# comment\n0 1\n1 2\n\n5 5\n");
  ASSERT_TRUE(el.ok()) << el.status().to_string();
  EXPECT_EQ(el->vertices, 6u);
  EXPECT_EQ(el->edges.size(), 3u);
  EXPECT_TRUE(el->weights.empty());
  auto wel = read_text_as("a.wel", "0 1 2.5\r\n1 0 -1\n");
  ASSERT_TRUE(wel.ok()) << wel.status().to_string();
  ASSERT_EQ(wel->weights.size(), 2u);
  EXPECT_EQ(wel->weights[0], 2.5f);
  EXPECT_EQ(wel->weights[1], -1.0f);
  auto pattern = read_text_as(
      "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n% c\n3 4 2\n1 2\n3 4\n");
  ASSERT_TRUE(pattern.ok()) << pattern.status().to_string();
  EXPECT_EQ(pattern->vertices, 4u);
  ASSERT_EQ(pattern->edges.size(), 2u);
  EXPECT_EQ(pattern->edges[1].src, 2u);
  EXPECT_EQ(pattern->edges[1].dst, 3u);
  auto sym = read_text_as(
      "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 0.5\n3 3 1e1\n3 1 2\n");
  ASSERT_TRUE(sym.ok()) << sym.status().to_string();
  EXPECT_EQ(sym->edges.size(), 5u);  // two mirrored, the diagonal entry once
  EXPECT_EQ(sym->weights[2], 10.0f);
  ThreadPool pool(2);
  EXPECT_TRUE(build_csr(std::move(*sym), {}, pool).symmetric);
  auto integer =
      read_text_as("i.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 7\n");
  ASSERT_TRUE(integer.ok()) << integer.status().to_string();
  EXPECT_EQ(integer->weights[0], 7.0f);
}

TEST(EdgeFiles, MalformedFilesGetAClearError) {
  struct Bad {
    const char* name;
    const char* text;
    const char* says;
  };
  const Bad bad[] = {
      {"f.el", "0 1\n2\n", ":2: expected 2 fields"},
      {"g.el", "0 x\n", "non-negative integers"},
      {"n.el", "-1 2\n", "non-negative integers"},
      {"h.wel", "0 1 abc\n", "bad weight"},
      {"big.el", "0 99999999999\n", "too large"},
      {"a.mtx", "%%MatrixMarket matrix array real general\n2 2\n", "coordinate"},
      {"b.mtx", "%%MatrixMarket matrix coordinate complex general\n", "unsupported"},
      {"c.mtx", "%%MatrixMarket matrix coordinate pattern hermitian\n", "unsupported"},
      {"d.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n0 1\n", "1..2"},
      {"e.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 3\n", "1..2"},
      {"f.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n", "declared"},
      {"g.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n2 1\n", "more"},
      {"h.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\n", "3 fields"},
      {"i.mtx", "not a banner\n", "MatrixMarket"},
      {"j.mtx", "", "empty"},
      {"k.mtx", "%%MatrixMarket matrix coordinate pattern general\n% only comments\n", "size"},
      {"l.txt", "0 1\n", "unknown input format"},
  };
  for (const Bad& b : bad) {
    auto r = read_text_as(b.name, b.text);
    ASSERT_FALSE(r.ok()) << b.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << b.name;
    EXPECT_NE(r.status().to_string().find(b.says), std::string::npos)
        << b.name << ": " << r.status().to_string();
  }
  EXPECT_EQ(read_edge_file(temp_file("absent.el")).status().code(), StatusCode::kNotFound);
}

// Checks that `got` is `in` relabelled by old_ids (new vertex i = old vertex old_ids[i]).
void expect_relabelled(const Csr& in, const Csr& got, const std::vector<uint32_t>& old_ids) {
  ASSERT_EQ(got.vertices, in.vertices);
  ASSERT_EQ(got.neighbours.size(), in.neighbours.size());
  EXPECT_EQ(got.symmetric, in.symmetric);
  ASSERT_EQ(old_ids.size(), in.vertices);
  std::vector<uint32_t> new_of(in.vertices, UINT32_MAX);
  for (uint32_t i = 0; i < in.vertices; ++i) {
    ASSERT_LT(old_ids[i], in.vertices);
    ASSERT_EQ(new_of[old_ids[i]], UINT32_MAX) << "old id " << old_ids[i] << " appears twice";
    new_of[old_ids[i]] = i;
  }
  auto degree = [](const Csr& g, uint64_t v) { return g.offsets[v + 1] - g.offsets[v]; };
  for (uint32_t i = 0; i < got.vertices; ++i) {
    const uint32_t old = old_ids[i];
    ASSERT_EQ(degree(got, i), degree(in, old)) << "vertex " << i;
    if (i > 0) {
      ASSERT_GE(degree(got, i - 1), degree(got, i)) << "not by descending degree at " << i;
      if (degree(got, i - 1) == degree(got, i)) {
        ASSERT_LT(old_ids[i - 1], old) << "tie order";
      }
    }
    std::vector<std::pair<uint32_t, float>> want, have;
    for (uint64_t k = in.offsets[old]; k < in.offsets[old + 1]; ++k) {
      want.push_back({new_of[in.neighbours[k]], in.weights.empty() ? 0.f : in.weights[k]});
    }
    for (uint64_t k = got.offsets[i]; k < got.offsets[i + 1]; ++k) {
      have.push_back({got.neighbours[k], got.weights.empty() ? 0.f : got.weights[k]});
    }
    std::sort(want.begin(), want.end());
    ASSERT_EQ(have, want) << "list of new vertex " << i << " (old " << old << ")";
  }
}

TEST(Builder, ReorderByDegreeRelabelsHubsFirstAndKeepsTheGraph) {
  const uint64_t seed = testing::test_seed();
  ThreadPool pool(2);
  GenerateOptions o;
  o.scale = 11;
  o.degree = 8;
  o.seed = seed;
  auto el = generate_edges(o, pool);
  ASSERT_TRUE(el.ok()) << el.status().to_string();
  const Csr kron = build_csr(std::move(*el), {true, true, true}, pool);
  std::vector<uint32_t> old_ids;
  const Csr by_degree = reorder_by_degree(kron, pool, &old_ids);
  expect_relabelled(kron, by_degree, old_ids);
  EXPECT_GT(by_degree.offsets[1], by_degree.offsets[kron.vertices] / kron.vertices);
  // Weighted and directed, with a duplicate edge: weights travel with their edges.
  const Csr weighted = small_weighted();
  const Csr w2 = reorder_by_degree(weighted, pool, &old_ids);
  expect_relabelled(weighted, w2, old_ids);
  EXPECT_EQ(old_ids[0], 0u);  // vertex 0 has the most out-edges (two, one of them a duplicate)
  // The result is the same for any thread count, and without a map.
  ThreadPool one(1);
  const Csr again = reorder_by_degree(kron, one, nullptr);
  EXPECT_EQ(again.offsets, by_degree.offsets);
  EXPECT_EQ(again.neighbours, by_degree.neighbours);
}

}  // namespace
}  // namespace farmem::graph
