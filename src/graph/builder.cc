#include "farmem/graph/builder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <utility>

#include "farmem/graph/format.h"

namespace farmem::graph {

namespace {

constexpr uint64_t kVertexGrain = 4096;
constexpr uint64_t kEdgeGrain = 1 << 16;

void add_reverse_edges(EdgeList& el, ThreadPool& pool) {
  const uint64_t m = el.edges.size();
  const bool weighted = !el.weights.empty();
  el.edges.resize(2 * m);
  if (weighted) el.weights.resize(2 * m);
  pool.parallel_for(m, kEdgeGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      el.edges[m + i] = {el.edges[i].dst, el.edges[i].src};
      if (weighted) el.weights[m + i] = el.weights[i];
    }
  });
}

// Entries a list lost, by cause.
struct Dropped {
  uint64_t self_loops = 0, duplicates = 0;
};

// Sorts v's list (by id, then weight) and drops what the options say; returns the new degree.

uint64_t tidy_list(uint32_t v, uint32_t* nb, float* w, uint64_t n, const BuildOptions& o,
                   std::vector<std::pair<uint32_t, float>>& scratch, Dropped* dropped) {
  if (w == nullptr) {
    std::sort(nb, nb + n);
  } else {
    scratch.assign(n, {});
    for (uint64_t i = 0; i < n; ++i) scratch[i] = {nb[i], w[i]};
    std::sort(scratch.begin(), scratch.end());
    for (uint64_t i = 0; i < n; ++i) {
      nb[i] = scratch[i].first;
      w[i] = scratch[i].second;
    }
  }
  uint64_t out = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (o.remove_self_loops && nb[i] == v) {
      ++dropped->self_loops;
      continue;
    }
    if (o.remove_duplicates && out > 0 && nb[out - 1] == nb[i]) {
      ++dropped->duplicates;
      continue;
    }
    nb[out] = nb[i];
    if (w != nullptr) w[out] = w[i];
    ++out;
  }
  return out;
}

bool check_symmetric(const Csr& g, ThreadPool& pool) {
  std::atomic<bool> symmetric{true};
  pool.parallel_for(g.vertices, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t u = b; u < e && symmetric.load(std::memory_order_relaxed); ++u) {
      for (uint64_t i = g.offsets[u]; i < g.offsets[u + 1]; ++i) {
        const uint32_t v = g.neighbours[i];
        const uint32_t* first = g.neighbours.data() + g.offsets[v];
        const uint32_t* last = g.neighbours.data() + g.offsets[v + 1];
        if (!std::binary_search(first, last, static_cast<uint32_t>(u))) {
          symmetric.store(false, std::memory_order_relaxed);
          break;
        }
      }
    }
  });
  return symmetric.load();
}

}  // namespace

Csr build_csr(EdgeList el, const BuildOptions& o, ThreadPool& pool, BuildStats* stats);

namespace {

// Adds (v,u), with the weight of (u,v), for each (u,v) of `el` whose (v,u) is not in it (the
// lists of a CSR built from the input as it is answer that).
void add_missing_reverse_edges(EdgeList& el, ThreadPool& pool) {
  EdgeList copy = el;
  const Csr in = build_csr(std::move(copy), BuildOptions{}, pool);
  const bool weighted = !in.weights.empty();
  struct Missing {
    Edge edge;
    float weight;
  };
  std::vector<std::vector<Missing>> missing(ThreadPool::chunks(in.vertices, kVertexGrain));
  pool.parallel_for(in.vertices, kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    for (uint64_t u = b; u < e; ++u) {
      for (uint64_t i = in.offsets[u]; i < in.offsets[u + 1]; ++i) {
        const uint32_t v = in.neighbours[i];
        const uint32_t* first = in.neighbours.data() + in.offsets[v];
        const uint32_t* last = in.neighbours.data() + in.offsets[v + 1];
        if (!std::binary_search(first, last, static_cast<uint32_t>(u))) {
          missing[c].push_back({{v, static_cast<uint32_t>(u)}, weighted ? in.weights[i] : 0.0f});
        }
      }
    }
  });
  for (const auto& list : missing) {
    for (const Missing& m : list) {
      el.edges.push_back(m.edge);
      if (weighted) el.weights.push_back(m.weight);
    }
  }
}

}  // namespace

Graph Csr::view() const {
  Graph g;
  g.vertices = vertices;
  g.edges = neighbours.size();
  g.symmetric = symmetric;
  g.offsets = offsets.data();
  g.neighbours = neighbours.data();
  g.weights = weights.empty() ? nullptr : weights.data();
  return g;
}

Csr build_csr(EdgeList el, const BuildOptions& o, ThreadPool& pool, BuildStats* stats) {
  BuildStats local;
  if (stats == nullptr) stats = &local;
  *stats = {};
  stats->input_edges = el.edges.size();
  if (o.symmetrize && o.remove_duplicates) add_reverse_edges(el, pool);
  if (o.symmetrize && !o.remove_duplicates) add_missing_reverse_edges(el, pool);
  stats->reverse_edges_added = el.edges.size() - stats->input_edges;
  const uint64_t n = el.vertices, m = el.edges.size();
  const bool weighted = !el.weights.empty();
  Csr g;
  g.vertices = n;
  // Degrees, offsets, then a scatter into place (order within a list fixed by the sort below).
  std::vector<uint64_t> cursor(n + 1, 0);
  pool.parallel_for(m, kEdgeGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      std::atomic_ref<uint64_t>(cursor[el.edges[i].src]).fetch_add(1, std::memory_order_relaxed);
    }
  });
  g.offsets.assign(n + 1, 0);
  for (uint64_t v = 0; v < n; ++v) g.offsets[v + 1] = g.offsets[v] + cursor[v];
  std::copy(g.offsets.begin(), g.offsets.end(), cursor.begin());
  std::vector<uint32_t> nb(m);
  std::vector<float> w(weighted ? m : 0);
  pool.parallel_for(m, kEdgeGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      const uint64_t at = std::atomic_ref<uint64_t>(cursor[el.edges[i].src])
                              .fetch_add(1, std::memory_order_relaxed);
      nb[at] = el.edges[i].dst;
      if (weighted) w[at] = el.weights[i];
    }
  });
  el = EdgeList();
  // Sort and filter each list in place; the new degrees go to cursor.
  std::vector<Dropped> dropped(ThreadPool::chunks(n, kVertexGrain));
  pool.parallel_for(n, kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    std::vector<std::pair<uint32_t, float>> scratch;
    for (uint64_t v = b; v < e; ++v) {
      const uint64_t at = g.offsets[v];
      cursor[v] =
          tidy_list(static_cast<uint32_t>(v), nb.data() + at, weighted ? w.data() + at : nullptr,
                    g.offsets[v + 1] - at, o, scratch, &dropped[c]);
    }
  });
  for (const Dropped& d : dropped) {
    stats->self_loops_dropped += d.self_loops;
    stats->duplicates_dropped += d.duplicates;
  }
  // Compact.
  std::vector<uint64_t> old = std::move(g.offsets);
  g.offsets.assign(n + 1, 0);
  for (uint64_t v = 0; v < n; ++v) g.offsets[v + 1] = g.offsets[v] + cursor[v];
  g.neighbours.resize(g.offsets[n]);
  if (weighted) g.weights.resize(g.offsets[n]);
  pool.parallel_for(n, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t v = b; v < e; ++v) {
      std::copy_n(nb.begin() + old[v], cursor[v], g.neighbours.begin() + g.offsets[v]);
      if (weighted) std::copy_n(w.begin() + old[v], cursor[v], g.weights.begin() + g.offsets[v]);
    }
  });
  // Symmetrized lists are symmetric by construction (dropping self loops and duplicates keeps
  // that); anything else is checked.
  g.symmetric = o.symmetrize || check_symmetric(g, pool);
  return g;
}

Csr reorder_by_degree(const Csr& in, ThreadPool& pool, std::vector<uint32_t>* old_ids) {
  const uint64_t n = in.vertices;
  const bool weighted = !in.weights.empty();
  auto degree = [&](uint64_t v) { return in.offsets[v + 1] - in.offsets[v]; };
  std::vector<uint32_t> old_of(n);
  std::iota(old_of.begin(), old_of.end(), 0u);
  std::stable_sort(old_of.begin(), old_of.end(),
                   [&](uint32_t a, uint32_t b) { return degree(a) > degree(b); });
  std::vector<uint32_t> new_of(n);
  for (uint64_t i = 0; i < n; ++i) new_of[old_of[i]] = static_cast<uint32_t>(i);
  Csr g;
  g.vertices = n;
  g.symmetric = in.symmetric;
  g.offsets.assign(n + 1, 0);
  for (uint64_t i = 0; i < n; ++i) g.offsets[i + 1] = g.offsets[i] + degree(old_of[i]);
  g.neighbours.resize(in.neighbours.size());
  if (weighted) g.weights.resize(in.weights.size());
  pool.parallel_for(n, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    std::vector<std::pair<uint32_t, float>> scratch;
    const BuildOptions keep_all;
    for (uint64_t i = b; i < e; ++i) {
      const uint64_t from = in.offsets[old_of[i]], to = g.offsets[i], len = g.offsets[i + 1] - to;
      for (uint64_t k = 0; k < len; ++k) {
        g.neighbours[to + k] = new_of[in.neighbours[from + k]];
        if (weighted) g.weights[to + k] = in.weights[from + k];
      }
      Dropped none;
      tidy_list(static_cast<uint32_t>(i), g.neighbours.data() + to,
                weighted ? g.weights.data() + to : nullptr, len, keep_all, scratch, &none);
    }
  });
  if (old_ids != nullptr) *old_ids = std::move(old_of);
  return g;
}

namespace {

Status write_all(int fd, const void* data, uint64_t bytes, uint64_t at) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, p, std::min<uint64_t>(bytes, 1ull << 30), at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Internal(fmt::format("write failed: {}", std::strerror(errno)));
    p += n;
    at += n;
    bytes -= n;
  }
  return OkStatus();
}

}  // namespace

Status write_fmg(const Csr& csr, const std::string& path) {
  if (csr.vertices > kFmgMaxVertices) return InvalidArgument("too many vertices for .fmg");
  uint32_t flags = csr.symmetric ? kFmgSymmetric : 0;
  if (!csr.weights.empty()) flags |= kFmgWeighted;
  const FmgHeader h = make_fmg_header(csr.vertices, csr.neighbours.size(), flags);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return InvalidArgument(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  Status s = ::ftruncate(fd, static_cast<off_t>(h.file_bytes)) == 0
                 ? OkStatus()
                 : Internal(fmt::format("cannot size {}: {}", path, std::strerror(errno)));
  auto section = [&](FmgSection sec) { return h.sections[static_cast<uint32_t>(sec)]; };
  if (s.ok()) s = write_all(fd, &h, sizeof(h), 0);
  if (s.ok()) {
    s = write_all(fd, csr.offsets.data(), section(FmgSection::kOffsets).bytes,
                  section(FmgSection::kOffsets).offset);
  }
  if (s.ok()) {
    s = write_all(fd, csr.neighbours.data(), section(FmgSection::kNeighbours).bytes,
                  section(FmgSection::kNeighbours).offset);
  }
  if (s.ok() && (flags & kFmgWeighted)) {
    s = write_all(fd, csr.weights.data(), section(FmgSection::kWeights).bytes,
                  section(FmgSection::kWeights).offset);
  }
  if (::close(fd) != 0 && s.ok()) s = Internal(fmt::format("closing {} failed", path));
  if (!s.ok()) return Status(s.code(), fmt::format("{}: {}", path, s.message()));
  return OkStatus();
}

}  // namespace farmem::graph
