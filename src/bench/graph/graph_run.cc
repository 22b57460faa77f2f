// `farmem graph run` (farmem/bench/graph.h): an algorithm over --trials timed runs on a backend.
//
// --backend far --agent ADDR --servers NODES: paged regions in agent mode (far_session.h); the
// record's traffic, agent_cache_hit_rate and agent fields come from the agent's stats. Far
// memory failing under a run (memory node or agent dead) ends it with paged::kFaultExitStatus
// (86) and one "fatal" line, from a page fault ("farmem paged: fatal: ...") or from an explicit
// call between faults ("farmem graph: fatal: ..."); never wrong output, never a hang.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "far_session.h"
#include "farmem/bench/baseline/memory_cgroup.h"
#include "farmem/bench/baseline/page_cache.h"
#include "farmem/bench/graph.h"
#include "farmem/bench/harness/report.h"
#include "farmem/common/units.h"
#include "farmem/graph/builder.h"
#include "farmem/graph/format.h"
#include "farmem/graph/input.h"
#include "farmem/graph/thread_pool.h"
#include "graph_algorithms.h"
#include "graph_output.h"

namespace farmem::bench {
namespace {

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

double median_of(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2;
}

// One run's state, in the order it is made (and unmade in reverse: the last result's arrays go
// back to the backend before it closes, the backend before its far session).
struct GraphRun {
  const GraphRunOptions* o = nullptr;
  graph::FmgHeader header{};
  uint64_t budget = 0;
  std::unique_ptr<FarSession> far;
  std::unique_ptr<graph::GraphMemory> memory;
  std::unique_ptr<graph::ThreadPool> pool;
  std::vector<uint32_t> sources;
  std::unique_ptr<MemoryCgroup> cgroup;
  graph::MemoryCounters before{}, after{};
  uint64_t cgroup_usage = 0;
  std::vector<double> seconds;
  Outcome last;
};

int check_options(const GraphRunOptions& o) {
  if (o.backend != GraphBackend::kFar && (o.agent != "none" || o.cache != AgentCache::kOff)) {
    return graph_fail("--agent and --cache apply to --backend far only");
  }
  if (o.backend == GraphBackend::kLocal && !o.local_memory.empty()) {
    return graph_fail("--local-memory applies to --backend mmap or far (local keeps all in DRAM)");
  }
  return 0;
}

Result<std::unique_ptr<graph::GraphMemory>> open_backend(const GraphRunOptions& o, uint64_t budget,
                                                         std::unique_ptr<FarSession>* far) {
  switch (o.backend) {
    case GraphBackend::kLocal:
      return graph::open_local(o.graph);
    case GraphBackend::kMmap:
      return graph::open_mmap(o.graph,
                              {std::string(name_of(kMmapGraphAdviceNames, o.advice)), o.mmap_dir});
    case GraphBackend::kFar:
      break;
  }
  return open_far_backend(o, budget, far);
}

// Reads the header, sizes the budget, opens the backend, picks the sources.
int open(GraphRun* r) {
  const GraphRunOptions& o = *r->o;
  auto header = graph::read_fmg_header(o.graph);
  if (!header.ok()) return graph_fail(header.status().to_string());
  r->header = *header;
  const uint64_t n = r->header.vertices;
  uint64_t graph_bytes = 0;
  for (const auto& s : r->header.sections) graph_bytes += s.bytes;
  const uint64_t estimate = graph_bytes + vertex_bytes_per_vertex(o.algorithm) * n;
  auto budget = parse_budget(o.local_memory, estimate);
  if (!budget.ok()) return graph_fail(budget.status().to_string());
  r->budget = *budget;
  fmt::print(stderr, "graph: loading {} ({} vertices, {} edges) on backend {}\n", o.graph, n,
             r->header.edges, name_of(kGraphBackendNames, o.backend));
  const double t0 = now_s();
  auto memory = open_backend(o, r->budget, &r->far);
  if (!memory.ok()) return graph_fail(memory.status().to_string());
  r->memory = std::move(*memory);
  r->pool = std::make_unique<graph::ThreadPool>(o.threads);
  graph::AlgorithmContext probe(*r->memory, *r->pool);
  r->sources = o.sources;
  if (r->sources.empty()) r->sources.push_back(graph::max_degree_vertex(probe));
  fmt::print(stderr, "graph: loaded in {:.2f} s; source {}{}\n", now_s() - t0, r->sources[0],
             r->sources.size() > 1 ? fmt::format(" (+{} more)", r->sources.size() - 1) : "");
  return 0;
}

// The mmap backend with a budget: the run joins a memory cgroup of the budget, with the graph's
// pages dropped from this process and from the page cache.
int enter_cgroup(GraphRun* r) {
  if (r->o->backend != GraphBackend::kMmap || r->budget == 0) return 0;
  auto g = MemoryCgroup::create(fmt::format("farmem-graph-{}", ::getpid()), r->budget);
  if (!g.ok()) return graph_fail("mmap backend: " + g.status().to_string());
  r->cgroup = std::move(*g);
  if (Status s = r->cgroup->join(); !s.ok()) return graph_fail("mmap backend: " + s.to_string());
  fmt::print(stderr, "graph: joined memory cgroup {} ({}) limited to {} bytes\n", r->cgroup->path(),
             r->cgroup->version(), r->budget);
  r->memory->drop_resident();
  if (Status s = drop_page_cache(); !s.ok()) return graph_fail(s.to_string());
  fmt::print(stderr, "graph: dropped the page cache (echo 1 > /proc/sys/vm/drop_caches)\n");
  return 0;
}

// Far memory (a memory node or the agent) failed in an explicit call (an allocation or a free
// between faults): the same exit as a fault that could not be served.
bool far_memory_failed(const GraphRunOptions& o, const Status& s) {
  const StatusCode code = s.code();
  return o.backend == GraphBackend::kFar &&
         (code == StatusCode::kPeerFailed || code == StatusCode::kTimedOut ||
          code == StatusCode::kUnavailable);
}

int run_trials(GraphRun* r) {
  const GraphRunOptions& o = *r->o;
  r->before = r->memory->counters();
  r->memory->reset_peak();
  for (uint32_t t = 0; t < o.trials; ++t) {
    // The previous trial's result goes first: its arrays would otherwise hold local memory
    // (and, with --far-pin on, pins) through this trial.
    r->last = Outcome{};
    graph::AlgorithmContext ctx(*r->memory, *r->pool);
    const double start = now_s();
    auto outcome = run_algorithm(ctx, o, r->sources);
    const double took = now_s() - start;
    if (!outcome.ok()) {
      if (!far_memory_failed(o, outcome.status())) return graph_fail(outcome.status().to_string());
      fmt::print(stderr, "farmem graph: fatal: far memory failed in trial {}: {}\n", t + 1,
                 outcome.status().to_string());
      return paged::kFaultExitStatus;
    }
    r->seconds.push_back(took);
    fmt::print(stderr, "graph: trial {}/{}: {:.4f} s {}\n", t + 1, o.trials, took,
               outcome->summary);
    r->last = std::move(*outcome);
  }
  r->after = r->memory->counters();
  r->cgroup_usage = r->cgroup != nullptr ? r->cgroup->usage_bytes() : 0;
  if (r->cgroup != nullptr) (void)r->cgroup->leave();
  return 0;
}

uint64_t footprint(const GraphRun& r) {
  return r.memory->graph_bytes() + r.memory->peak_buffer_bytes();
}

void print_result(const GraphRun& r) {
  const GraphRunOptions& o = *r.o;
  const std::string_view backend = name_of(kGraphBackendNames, o.backend);
  const std::string advice = o.backend == GraphBackend::kMmap
                                 ? fmt::format("/{}", name_of(kMmapGraphAdviceNames, o.advice))
                                 : std::string();
  fmt::print(
      "graph {} backend={}{} vertices={} edges={} threads={} median_seconds={:.4f} {} "
      "local_memory={} footprint={} faults={} bytes_fetched={} bytes_written_back={}\n",
      name_of(kGraphAlgorithmNames, o.algorithm), backend, advice, r.header.vertices,
      r.header.edges, r.pool->threads(), median_of(r.seconds), r.last.summary, r.budget,
      footprint(r), r.after.faults - r.before.faults,
      r.after.bytes_fetched - r.before.bytes_fetched,
      r.after.bytes_written_back - r.before.bytes_written_back);
}

Status write_record(const GraphRun& r) {
  const GraphRunOptions& o = *r.o;
  nlohmann::ordered_json rec;
  rec["bench"] = "graph";
  rec["algorithm"] = name_of(kGraphAlgorithmNames, o.algorithm);
  rec["backend"] = name_of(kGraphBackendNames, o.backend);
  rec["advice"] = o.backend == GraphBackend::kMmap
                      ? std::string(name_of(kMmapGraphAdviceNames, o.advice))
                      : std::string();
  rec["agent"] = o.agent;
  rec["cache"] = name_of(kAgentCacheNames, o.cache);
  rec["graph"] = o.graph;
  rec["vertices"] = r.header.vertices;
  rec["edges"] = r.header.edges;
  rec["threads"] = r.pool->threads();
  rec["sources"] = r.sources;
  rec["trial_seconds"] = r.seconds;
  rec["median_seconds"] = median_of(r.seconds);
  rec["local_memory_bytes"] = r.budget;
  rec["footprint_bytes"] = footprint(r);
  rec["graph_bytes"] = r.memory->graph_bytes();
  rec["vertex_array_peak_bytes"] = r.memory->peak_buffer_bytes();
  rec["bytes_fetched"] = r.after.bytes_fetched - r.before.bytes_fetched;
  rec["bytes_written_back"] = r.after.bytes_written_back - r.before.bytes_written_back;
  rec["faults"] = r.after.faults - r.before.faults;
  rec["agent_cache_hit_rate"] = nullptr;
  rec["traffic"] = nlohmann::ordered_json::object();
  if (r.far != nullptr) r.far->fill_record(&rec);
  if (r.cgroup != nullptr) rec["cgroup_usage_bytes"] = r.cgroup_usage;
  rec["summary"] = r.last.summary;
  rec["unix_time"] = static_cast<uint64_t>(::time(nullptr));
  return append_report(o.json_out, rec);
}

// A GAPBS .sg/.wsg becomes a temporary .fmg in mmap_dir (removed when the run ends).
class TemporaryFmg {
 public:
  ~TemporaryFmg() {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  int make(const GraphRunOptions& o) {
    const double t0 = now_s();
    auto csr = graph::read_gapbs_file(o.graph);
    if (!csr.ok()) return graph_fail(csr.status().to_string());
    const std::string path = fmt::format("{}/farmem-{}-{}.fmg", o.mmap_dir, ::getpid(),
                                         std::filesystem::path(o.graph).stem().string());
    if (Status s = graph::write_fmg(*csr, path); !s.ok()) return graph_fail(s.to_string());
    path_ = path;
    fmt::print(stderr, "graph: read GAPBS {} ({} vertices, {} arcs) into {} in {:.2f} s\n", o.graph,
               csr->vertices, csr->neighbours.size(), path_, now_s() - t0);
    return 0;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

int run_fmg(const GraphRunOptions& o);

}  // namespace

int run_graph(const GraphRunOptions& o) {
  if (!graph::is_gapbs_file(o.graph)) return run_fmg(o);
  TemporaryFmg fmg;
  if (int rc = fmg.make(o); rc != 0) return rc;
  GraphRunOptions converted = o;
  converted.graph = fmg.path();
  return run_fmg(converted);
}

namespace {

int run_fmg(const GraphRunOptions& o) {
  if (int rc = check_options(o); rc != 0) return rc;
  GraphRun r;
  r.o = &o;
  if (int rc = open(&r); rc != 0) return rc;
  if (int rc = enter_cgroup(&r); rc != 0) return rc;
  if (int rc = run_trials(&r); rc != 0) return rc;
  print_result(r);
  if (!o.output.empty()) {
    const uint64_t n = r.header.vertices;
    Status s = write_id_lines(o.output, n, [&r](uint64_t v) { return r.last.value(v); });
    if (!s.ok()) return graph_fail(s.to_string());
  }
  if (o.json_out.empty()) return 0;
  if (Status s = write_record(r); !s.ok()) return graph_fail(s.to_string());
  return 0;
}

}  // namespace

}  // namespace farmem::bench
