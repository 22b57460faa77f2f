// farmem graph generate|convert|run: graph analytics over a GraphMemory backend.
//
//   farmem graph generate --kron SCALE | --uniform SCALE [--degree 16] [--seed N] [--directed]
//                         [--threads T] [--order input|degree [--order-map FILE]] --out G.fmg
//   farmem graph convert --input FILE.el|.wel|.mtx [--symmetrize] [--threads T]
//                        [--order input|degree [--order-map FILE]] --out G.fmg
//   farmem graph run bfs|pr|cc|radii|bc --graph G.fmg [--source V[,V...]] [--trials N]
//                    [--threads T] [--backend local|mmap|far] [--local-memory BYTES|PCT%]
//                    [--page-bytes 64KiB] [--agent none|ADDR] [--cache off|static|dynamic]
//                    [--advice default|random] [--mmap-dir DIR] [--output FILE] [--out F.json]
//
// generate symmetrizes (unless --directed) and drops self loops and duplicate edges; convert
// keeps the file's edges as they are (self loops and duplicates included), adding reverse edges
// with --symmetrize (a symmetric .mtx is mirrored either way). --order degree relabels the
// vertices by descending degree before writing (graph::reorder_by_degree: an isomorphic graph
// whose hubs and their lists come first); --order-map writes "new old" per vertex.
//
// --backend far --agent ADDR --servers NODES: paged regions in agent mode (graph_far.h); the
// record's traffic, agent_cache_hit_rate and agent fields come from the agent's stats. Far
// memory failing under a run (memory node or agent dead) ends it with paged::kFaultExitStatus
// (86) and one "fatal" line, from a page fault ("farmem paged: fatal: ...") or from an explicit
// call between faults ("farmem graph: fatal: ..."); never wrong output, never a hang.
#include "graph_cmd.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "farmem/common/units.h"
#include "farmem/graph/algorithms.h"
#include "farmem/graph/builder.h"
#include "farmem/graph/input.h"
#include "farmem/graph/memory.h"
#include "farmem/paged/page_manager.h"
#include "graph_far.h"
#include "memory_cgroup.h"
#include "report.h"

namespace farmem::apps {

namespace {

using graph::Array;

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int fail(std::string_view what) {
  fmt::print(stderr, "farmem graph: {}\n", what);
  return 1;
}

// Writes "id value" lines to `path`, for id = 0 .. n-1 (--output, --order-map).
template <typename ValueOf>
Status write_id_lines(const std::string& path, uint64_t n, const ValueOf& value_of) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return InvalidArgument(fmt::format("cannot create {}", path));
  for (uint64_t v = 0; v < n; ++v) fmt::print(out, "{} {}\n", v, value_of(v));
  const bool ok = std::fclose(out) == 0;
  return ok ? OkStatus() : Internal(fmt::format("writing {} failed", path));
}

Status write_order_map(const std::vector<uint32_t>& old_ids, const std::string& path) {
  return write_id_lines(path, old_ids.size(), [&](uint64_t i) { return old_ids[i]; });
}

// --order degree: relabels by descending degree (and writes --order-map when asked).
Status apply_order(graph::Csr& csr, const GraphFlags& f, graph::ThreadPool& pool) {
  if (f.order != "degree") return OkStatus();
  std::vector<uint32_t> old_ids;
  csr = graph::reorder_by_degree(csr, pool, &old_ids);
  fmt::print(stderr, "graph: relabelled by descending degree{}\n",
             f.order_map.empty() ? "" : fmt::format("; new -> old ids in {}", f.order_map));
  return f.order_map.empty() ? OkStatus() : write_order_map(old_ids, f.order_map);
}

int write_graph(graph::Csr& csr, const GraphFlags& f, graph::ThreadPool& pool, double start) {
  const std::string& out = f.out;
  fmt::print(stderr, "graph: built {} vertices, {} edges ({}) in {:.2f} s\n", csr.vertices,
             csr.neighbours.size(), csr.symmetric ? "symmetric" : "directed", now_s() - start);
  if (Status s = apply_order(csr, f, pool); !s.ok()) return fail(s.to_string());
  fmt::print(stderr, "graph: writing {}\n", out);
  if (Status s = graph::write_fmg(csr, out); !s.ok()) return fail(s.to_string());
  fmt::print("wrote {}: vertices={} edges={} symmetric={} weighted={} seconds={:.2f}\n", out,
             csr.vertices, csr.neighbours.size(), csr.symmetric, !csr.weights.empty(),
             now_s() - start);
  return 0;
}

int run_generate(const GraphFlags& f) {
  if ((f.kron_scale == 0) == (f.uniform_scale == 0)) {
    return fail("generate needs exactly one of --kron SCALE or --uniform SCALE");
  }
  const double start = now_s();
  graph::ThreadPool pool(f.threads);
  graph::GenerateOptions o;
  o.generator = f.kron_scale != 0 ? graph::Generator::kKronecker : graph::Generator::kUniform;
  o.scale = f.kron_scale != 0 ? f.kron_scale : f.uniform_scale;
  o.degree = f.degree;
  o.seed = f.seed;
  fmt::print(stderr, "graph: generating {} scale {} degree {} seed {} ({} threads)\n",
             f.kron_scale != 0 ? "kron" : "uniform", o.scale, o.degree, o.seed, pool.threads());
  auto el = graph::generate_edges(o, pool);
  if (!el.ok()) return fail(el.status().to_string());
  graph::BuildOptions b;
  b.symmetrize = !f.directed;
  b.remove_self_loops = true;
  b.remove_duplicates = true;
  graph::Csr csr = graph::build_csr(std::move(*el), b, pool);
  return write_graph(csr, f, pool, start);
}

int run_convert(const GraphFlags& f) {
  const double start = now_s();
  auto el = graph::read_edge_file(f.input);
  if (!el.ok()) return fail(el.status().to_string());
  fmt::print(stderr, "graph: read {} edges over {} vertices from {}\n", el->edges.size(),
             el->vertices, f.input);
  graph::ThreadPool pool(f.threads);
  graph::BuildOptions b;
  b.symmetrize = f.symmetrize;
  graph::Csr csr = graph::build_csr(std::move(*el), b, pool);
  return write_graph(csr, f, pool, start);
}

// One algorithm's result: the array it produced and a one-line summary.
struct Outcome {
  Array<int32_t> i32;
  Array<uint32_t> u32;
  Array<double> f64;
  std::string summary;
  uint32_t iterations = 0;  // pr
  std::string value(uint64_t v) const {
    if (!i32.empty()) return std::to_string(i32[v]);
    if (!u32.empty()) return std::to_string(u32[v]);
    return fmt::format("{:.10g}", f64[v]);
  }
};

std::string summarize_depths(const Array<int32_t>& a, uint64_t n, const char* what) {
  uint64_t reached = 0;
  int32_t most = -1;
  for (uint64_t v = 0; v < n; ++v) {
    reached += a[v] >= 0;
    most = std::max(most, a[v]);
  }
  return fmt::format("reached={} max_{}={}", reached, what, most);
}

Result<Outcome> run_algorithm(graph::AlgorithmContext& ctx, const GraphFlags& f,
                              const std::vector<uint32_t>& sources) {
  const uint64_t n = ctx.vertices();
  Outcome out;
  if (f.algorithm == "bfs") {
    auto r = graph::bfs(ctx, sources[0]);
    if (!r.ok()) return r.status();
    out.i32 = std::move(*r);
    out.summary = summarize_depths(out.i32, n, "depth");
  } else if (f.algorithm == "radii") {
    auto r = graph::radii(ctx, f.seed);
    if (!r.ok()) return r.status();
    out.i32 = std::move(*r);
    out.summary = summarize_depths(out.i32, n, "radius");
  } else if (f.algorithm == "cc") {
    auto r = graph::connected_components(ctx);
    if (!r.ok()) return r.status();
    out.u32 = std::move(*r);
    uint64_t components = 0;
    for (uint64_t v = 0; v < n; ++v) components += out.u32[v] == v;
    out.summary = fmt::format("components={}", components);
  } else {
    Result<Array<double>> r = Status(Internal("unreached"));
    if (f.algorithm == "pr") {
      graph::PageRankOptions o;
      o.iterations = f.pr_iterations;
      o.epsilon = f.pr_epsilon;
      r = graph::pagerank(ctx, o, &out.iterations);
    } else {
      r = graph::betweenness(ctx, sources);
    }
    if (!r.ok()) return r.status();
    out.f64 = std::move(*r);
    double sum = 0, most = 0;
    for (uint64_t v = 0; v < n; ++v) {
      sum += out.f64[v];
      most = std::max(most, out.f64[v]);
    }
    out.summary = fmt::format("sum={:.6g} max={:.6g}", sum, most);
    if (f.algorithm == "pr") out.summary += fmt::format(" iterations={}", out.iterations);
  }
  return out;
}

// Vertex-array bytes per vertex each algorithm allocates (results, state, ~2 frontiers), for
// sizing a PCT% budget before the run; the measured peak is reported after.
uint64_t vertex_bytes_per_vertex(const std::string& algorithm) {
  if (algorithm == "pr") return 24;
  if (algorithm == "radii") return 20 + 10;
  if (algorithm == "bc") return 32 + 10;
  return 4 + 10;  // bfs, cc
}

Result<uint64_t> parse_budget(const std::string& text, uint64_t footprint) {
  if (text.empty()) return uint64_t{0};
  if (text.back() == '%') {
    double pct = 0;
    try {
      pct = std::stod(text.substr(0, text.size() - 1));
    } catch (...) {
      pct = -1;
    }
    if (!(pct > 0 && pct <= 100)) {
      return InvalidArgument(fmt::format("--local-memory '{}': expected 0 < PCT <= 100", text));
    }
    return static_cast<uint64_t>(static_cast<double>(footprint) * pct / 100.0);
  }
  return parse_bytes(text);
}

Status drop_page_cache() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "1\n";
  f.flush();
  if (!f) return PermissionDenied("cannot write /proc/sys/vm/drop_caches (needs root)");
  return OkStatus();
}

Result<std::unique_ptr<graph::GraphMemory>> open_backend(const GraphFlags& f, uint64_t budget,
                                                         std::unique_ptr<FarGraphSession>* far) {
  if (f.backend == "local") return graph::open_local(f.graph);
  if (f.backend == "mmap") return graph::open_mmap(f.graph, {f.advice, f.mmap_dir});
  return open_far_graph(f, budget, far);
}

Status write_output(const std::string& path, const Outcome& o, uint64_t n) {
  return write_id_lines(path, n, [&](uint64_t v) { return o.value(v); });
}

double median_of(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2;
}

int run_run(const GraphFlags& f) {
  if (f.backend != "far" && (f.agent != "none" || f.cache != "off")) {
    return fail("--agent and --cache apply to --backend far only");
  }
  if (f.backend == "local" && !f.local_memory.empty()) {
    return fail("--local-memory applies to --backend mmap or far (local keeps all in DRAM)");
  }
  auto header = graph::read_fmg_header(f.graph);
  if (!header.ok()) return fail(header.status().to_string());
  const uint64_t n = header->vertices;
  const graph::FmgHeader& h = *header;
  uint64_t graph_bytes = 0;
  for (const auto& s : h.sections) graph_bytes += s.bytes;
  const uint64_t estimate = graph_bytes + vertex_bytes_per_vertex(f.algorithm) * n;
  auto budget = parse_budget(f.local_memory, estimate);
  if (!budget.ok()) return fail(budget.status().to_string());

  fmt::print(stderr, "graph: loading {} ({} vertices, {} edges) on backend {}\n", f.graph, n,
             h.edges, f.backend);
  const double t0 = now_s();
  std::unique_ptr<FarGraphSession> far;
  auto memory = open_backend(f, *budget, &far);
  if (!memory.ok()) return fail(memory.status().to_string());
  graph::ThreadPool pool(f.threads);
  graph::AlgorithmContext probe(**memory, pool);
  std::vector<uint32_t> sources = f.sources;
  if (sources.empty()) sources.push_back(graph::max_degree_vertex(probe));
  fmt::print(stderr, "graph: loaded in {:.2f} s; source {}{}\n", now_s() - t0, sources[0],
             sources.size() > 1 ? fmt::format(" (+{} more)", sources.size() - 1) : "");

  std::unique_ptr<MemoryCgroup> cgroup;
  if (f.backend == "mmap" && *budget > 0) {
    auto g = MemoryCgroup::create(fmt::format("farmem-graph-{}", ::getpid()), *budget);
    if (!g.ok()) return fail("mmap backend: " + g.status().to_string());
    cgroup = std::move(*g);
    if (Status s = cgroup->join(); !s.ok()) return fail("mmap backend: " + s.to_string());
    fmt::print(stderr, "graph: joined memory cgroup {} ({}) limited to {} bytes\n", cgroup->path(),
               cgroup->version(), *budget);
  }
  if (cgroup != nullptr) {
    (*memory)->drop_resident();
    if (Status s = drop_page_cache(); !s.ok()) return fail(s.to_string());
    fmt::print(stderr, "graph: dropped the page cache (echo 1 > /proc/sys/vm/drop_caches)\n");
  }

  const graph::MemoryCounters before = (*memory)->counters();
  std::vector<double> seconds;
  Outcome last;
  (*memory)->reset_peak();
  for (uint32_t t = 0; t < f.trials; ++t) {
    // The previous trial's result goes first: its arrays would otherwise hold local memory
    // (and, with --far-pin on, pins) through this trial.
    last = Outcome{};
    graph::AlgorithmContext ctx(**memory, pool);
    const double start = now_s();
    auto outcome = run_algorithm(ctx, f, sources);
    const double took = now_s() - start;
    if (!outcome.ok()) {
      const StatusCode code = outcome.status().code();
      if (f.backend == "far" && (code == StatusCode::kPeerFailed || code == StatusCode::kTimedOut ||
                                 code == StatusCode::kUnavailable)) {
        // Far memory (a memory node or the agent) failed in an explicit call (an allocation or
        // a free between faults): the same exit as a fault that could not be served.
        fmt::print(stderr, "farmem graph: fatal: far memory failed in trial {}: {}\n", t + 1,
                   outcome.status().to_string());
        return paged::kFaultExitStatus;
      }
      return fail(outcome.status().to_string());
    }
    seconds.push_back(took);
    fmt::print(stderr, "graph: trial {}/{}: {:.4f} s {}\n", t + 1, f.trials, took,
               outcome->summary);
    last = std::move(*outcome);
  }
  const graph::MemoryCounters after = (*memory)->counters();
  const uint64_t cgroup_usage = cgroup != nullptr ? cgroup->usage_bytes() : 0;
  if (cgroup != nullptr) (void)cgroup->leave();

  const uint64_t footprint = (*memory)->graph_bytes() + (*memory)->peak_buffer_bytes();
  const double median = median_of(seconds);
  fmt::print(
      "graph {} backend={}{} vertices={} edges={} threads={} median_seconds={:.4f} {} "
      "local_memory={} footprint={} faults={} bytes_fetched={} bytes_written_back={}\n",
      f.algorithm, f.backend, f.backend == "mmap" ? "/" + f.advice : "", n, h.edges, pool.threads(),
      median, last.summary, *budget, footprint, after.faults - before.faults,
      after.bytes_fetched - before.bytes_fetched,
      after.bytes_written_back - before.bytes_written_back);
  if (!f.output.empty()) {
    if (Status s = write_output(f.output, last, n); !s.ok()) return fail(s.to_string());
  }
  if (f.json_out.empty()) return 0;
  nlohmann::ordered_json rec;
  rec["bench"] = "graph";
  rec["algorithm"] = f.algorithm;
  rec["backend"] = f.backend;
  rec["advice"] = f.backend == "mmap" ? f.advice : "";
  rec["agent"] = f.agent;
  rec["cache"] = f.cache;
  rec["graph"] = f.graph;
  rec["vertices"] = n;
  rec["edges"] = h.edges;
  rec["threads"] = pool.threads();
  rec["sources"] = sources;
  rec["trial_seconds"] = seconds;
  rec["median_seconds"] = median;
  rec["local_memory_bytes"] = *budget;
  rec["footprint_bytes"] = footprint;
  rec["graph_bytes"] = (*memory)->graph_bytes();
  rec["vertex_array_peak_bytes"] = (*memory)->peak_buffer_bytes();
  rec["bytes_fetched"] = after.bytes_fetched - before.bytes_fetched;
  rec["bytes_written_back"] = after.bytes_written_back - before.bytes_written_back;
  rec["faults"] = after.faults - before.faults;
  rec["agent_cache_hit_rate"] = nullptr;
  rec["traffic"] = nlohmann::ordered_json::object();
  if (far != nullptr) far->fill_record(&rec);
  if (cgroup != nullptr) rec["cgroup_usage_bytes"] = cgroup_usage;
  rec["summary"] = last.summary;
  rec["unix_time"] = static_cast<uint64_t>(::time(nullptr));
  if (Status s = append_report(f.json_out, rec); !s.ok()) return fail(s.to_string());
  return 0;
}

void add_order_options(CLI::App* cmd, GraphFlags* f) {
  cmd->add_option("--order", f->order,
                  "vertex ids: input (as generated/read) or degree (relabelled by descending "
                  "degree, hubs first)")
      ->check(CLI::IsMember({"input", "degree"}));
  cmd->add_option("--order-map", f->order_map, "with --order degree: write 'new old' id lines");
}

}  // namespace

GraphCommands add_graph_commands(CLI::App* app, GraphFlags* f) {
  CLI::App* g = app->add_subcommand("graph", "graph analytics (Ligra-style) on far memory");
  g->require_subcommand(1);
  GraphCommands c;
  c.generate = g->add_subcommand("generate", "generate a Kronecker or uniform graph (.fmg)");
  c.generate->add_option("--kron", f->kron_scale, "Graph500 Kronecker graph of 2^SCALE vertices")
      ->check(CLI::Range(1u, 31u));
  c.generate->add_option("--uniform", f->uniform_scale, "uniform random graph of 2^SCALE vertices")
      ->check(CLI::Range(1u, 31u));
  c.generate->add_option("--degree", f->degree, "edges per vertex before symmetrizing (16)")
      ->check(CLI::Range(1u, 1024u));
  c.generate->add_option("--seed", f->seed, "generator seed (1)");
  c.generate->add_flag("--directed", f->directed, "do not symmetrize");
  c.generate->add_option("--threads", f->threads, "threads (2)")->check(CLI::Range(1u, 256u));
  c.generate->add_option("--out", f->out, "the .fmg file to write")->required();
  add_order_options(c.generate, f);

  c.convert = g->add_subcommand("convert", "convert an edge list (.el, .wel) or .mtx to .fmg");
  c.convert->add_option("--input", f->input, "FILE.el | FILE.wel | FILE.mtx")->required();
  c.convert->add_flag("--symmetrize", f->symmetrize, "add (v,u) for every (u,v)");
  c.convert->add_option("--threads", f->threads, "threads (2)")->check(CLI::Range(1u, 256u));
  c.convert->add_option("--out", f->out, "the .fmg file to write")->required();
  add_order_options(c.convert, f);

  c.run = g->add_subcommand("run", "run an algorithm on a .fmg graph");
  c.run->add_option("algorithm", f->algorithm, "bfs | pr | cc | radii | bc")
      ->required()
      ->check(CLI::IsMember({"bfs", "pr", "cc", "radii", "bc"}));
  c.run->add_option("--graph", f->graph, "the .fmg file")->required();
  c.run
      ->add_option("--source", f->sources,
                   "source vertex (bfs; bc: one or more, comma-separated); default: the "
                   "smallest-id vertex of the greatest degree")
      ->delimiter(',');
  c.run->add_option("--trials", f->trials, "timed runs (3)")->check(CLI::Range(1u, 1000u));
  c.run->add_option("--threads", f->threads, "threads (2)")->check(CLI::Range(1u, 256u));
  c.run->add_option("--seed", f->seed, "radii: the seed of the 64 sampled sources (1)");
  c.run->add_option("--backend", f->backend, "local | mmap | far (local)")
      ->check(CLI::IsMember({"local", "mmap", "far"}));
  c.run->add_option("--local-memory", f->local_memory,
                    "mmap/far: local budget, BYTES or PCT% of the footprint (graph + vertex "
                    "arrays); mmap runs inside a memory cgroup of that size");
  c.run->add_option("--page-bytes", f->page_bytes, "far: page size (64KiB)")
      ->transform(bytes_unit());
  c.run
      ->add_option("--graph-page-bytes", f->graph_page_bytes,
                   "far: page size of the graph file's region (--page-bytes)")
      ->transform(bytes_unit());
  c.run->add_flag("--far-huge-pages", f->far_huge_pages,
                  "far: back the graph file's region with huge pages (vm.nr_hugepages; "
                  "--graph-page-bytes a multiple of the huge page size)");
  c.run
      ->add_option("--far-sparse-view", f->far_sparse_view,
                   "far, graph pages larger than --page-bytes: a second copy of the graph on "
                   "--page-bytes pages for sparse rounds over few vertices (true)")
      ->default_str("true");
  c.run->add_option("--agent", f->agent, "far: none | ADDR of a farmem-agent");
  c.run->add_option("--cache", f->cache, "far with an agent: off | static | dynamic")
      ->check(CLI::IsMember({"off", "static", "dynamic"}));
  c.run->add_option("--advice", f->advice, "mmap: default (readahead) | random (MADV_RANDOM)")
      ->check(CLI::IsMember({"default", "random"}));
  c.run
      ->add_option("--far-advice", f->far_advice,
                   "far: random | sequential (read-ahead) for the graph's sections (random)")
      ->check(CLI::IsMember({"random", "sequential"}));
  c.run
      ->add_option("--far-pin", f->far_pin,
                   "far: on | random | off: keep vertex arrays resident (static advice, at most "
                   "half the budget): random-access ones, then sequential state (on) or "
                   "random-access ones only (random); frontier lists never (on)")
      ->check(CLI::IsMember({"on", "random", "off"}));
  c.run
      ->add_option("--far-install-threads", f->far_install_threads,
                   "far: threads that map fetched pages beside the pager thread (0: the pager "
                   "thread maps them) (2)")
      ->check(CLI::Range(0u, 16u));
  c.run->add_option("--mmap-dir", f->mmap_dir,
                    "mmap: directory of the vertex arrays' files (a disk file system) (/tmp)");
  c.run->add_option("--iterations", f->pr_iterations, "pr: iterations at most (20)")
      ->check(CLI::Range(1u, 100000u));
  c.run->add_option("--epsilon", f->pr_epsilon, "pr: stop below this L1 change (0: never)");
  c.run->add_option("--output", f->output, "write 'vertex value' per line to FILE");
  c.run->add_option("--out", f->json_out, "append a JSON (or CSV) record to FILE");
  add_cluster_flags(c.run, &f->cluster);
  return c;
}

int run_graph(const GraphCommands& c, const GraphFlags& f) {
  if (c.generate->parsed()) return run_generate(f);
  if (c.convert->parsed()) return run_convert(f);
  return run_run(f);
}

}  // namespace farmem::apps
