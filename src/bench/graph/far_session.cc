#include "far_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "farmem/agent/page_source.h"
#include "farmem/bench/harness/cluster.h"
#include "farmem/graph/far_graph.h"
#include "farmem/paged/huge_pool.h"
#include "farmem/paged/page_manager.h"

namespace farmem::bench {

nlohmann::ordered_json FarSession::agent_json(std::map<std::string, paged::PathTraffic>* paths,
                                              nlohmann::ordered_json* hit_rate) {
  auto now = agent_client->thread_client().run(agent_client->stats());
  if (!now.ok()) return {{"address", agent_address}, {"error", now.status().to_string()}};
  const agent::wire::StatsResponse& a = *now;
  const agent::wire::StatsResponse& b = agent_before;
  const uint64_t reads = a.host_reads - b.host_reads;
  const uint64_t static_hits = a.static_hits - b.static_hits;
  const uint64_t dynamic_hits = a.dynamic_hits - b.dynamic_hits;
  const uint64_t dynamic_misses = a.dynamic_misses - b.dynamic_misses;
  (*paths)["agent->memnode"] = {
      "agent->memnode",
      a.node_read_bytes - b.node_read_bytes + a.node_write_bytes - b.node_write_bytes,
      a.node_reads - b.node_reads + a.node_writes - b.node_writes};
  if (reads > 0) *hit_rate = static_cast<double>(static_hits + dynamic_hits) / reads;
  return {{"address", agent_address},
          {"cache", cache},
          {"host_reads", reads},
          {"static_hits", static_hits},
          {"dynamic_hits", dynamic_hits},
          {"dynamic_misses", dynamic_misses},
          {"dynamic_hit_rate", dynamic_hits + dynamic_misses > 0
                                   ? nlohmann::ordered_json(static_cast<double>(dynamic_hits) /
                                                            (dynamic_hits + dynamic_misses))
                                   : nlohmann::ordered_json(nullptr)},
          {"node_read_bytes", a.node_read_bytes - b.node_read_bytes},
          {"node_write_bytes", a.node_write_bytes - b.node_write_bytes},
          {"staged_bytes", a.staged_bytes - b.staged_bytes},
          {"aggregated_reads", a.aggregated_reads - b.aggregated_reads},
          {"static_bytes_now", a.static_bytes},
          {"dynamic_enabled_now", a.dynamic_enabled != 0},
          {"dynamic_switches", a.dynamic_switches - b.dynamic_switches},
          {"static_pin_refusals", agent::pin_refusals(*buffer_source)}};
}

void FarSession::fill_record(nlohmann::ordered_json* rec) {
  (*rec)["far_huge_pages"] = graph_huge_pages;
  (*rec)["far_graph_page_bytes"] = graph_page_bytes;
  std::map<std::string, paged::PathTraffic> paths;
  paths["host->memnode"].path = "host->memnode";
  for (const paged::PathTraffic& p : manager->stats().traffic) {
    paged::PathTraffic& t = paths[p.path];  // one entry per path (several agent sources)
    t.bytes += p.bytes;
    t.messages += p.messages;
  }
  nlohmann::ordered_json agent = nullptr;
  nlohmann::ordered_json hit_rate = nullptr;
  if (agent_client != nullptr) agent = agent_json(&paths, &hit_rate);
  nlohmann::ordered_json t = nlohmann::ordered_json::object();
  for (const auto& [path, p] : paths) {
    t[path] = {{"bytes", p.bytes}, {"messages", p.messages}};
  }
  (*rec)["agent_cache_hit_rate"] = hit_rate;
  (*rec)["traffic"] = std::move(t);
  (*rec)["agent_stats"] = std::move(agent);
}

FarSession::~FarSession() {
  manager.reset();  // before the clusters its sources use
  graph_source.reset();
  buffer_source.reset();
  if (agent_client != nullptr) {
    agent_client.reset();
    agent_cluster->release_thread_client();
  }
  agent_cluster.reset();
  cluster.reset();
}

namespace {

// Connects to the agent (same transport options as the memory nodes) and makes the sources.
Status open_agent(const GraphRunOptions& o, const client::ClusterConfig& nodes, FarSession* s) {
  auto cfg = client::ClusterConfig::from_server_list(o.agent);
  FARMEM_TRY(cfg);
  cfg->options = nodes.options;
  auto c = client::Cluster::connect(*cfg);
  if (!c.ok()) {
    return Status(c.status().code(), fmt::format("--agent {}: {}", o.agent, c.status().message()));
  }
  s->agent_cluster = std::move(*c);
  FARMEM_ASSIGN_OR_RETURN(s->agent_client, agent::AgentClient::create(*s->agent_cluster));
  auto before = s->agent_client->thread_client().run(s->agent_client->stats());
  if (!before.ok()) {
    return Status(before.status().code(),
                  fmt::format("--agent {}: stats: {}", o.agent, before.status().message()));
  }
  s->agent_before = *before;
  s->agent_address = o.agent;
  s->cache = std::string(name_of(kAgentCacheNames, o.cache));
  // --cache alone decides what the agent caches: the paged layer's own pinning of vertex
  // arrays (static advice, --far-pin) stays local.
  agent::AgentSourceOptions graph_options;
  graph_options.dynamic_cache = o.cache == AgentCache::kDynamic;
  graph_options.pin_advised = false;
  agent::AgentSourceOptions buffer_options;
  buffer_options.dynamic_cache = false;
  buffer_options.pin_static = o.cache == AgentCache::kStatic;
  buffer_options.pin_advised = false;
  s->graph_source = agent::make_agent_source(*s->agent_cluster, graph_options);
  s->buffer_source = agent::make_agent_source(*s->agent_cluster, buffer_options);
  return OkStatus();
}

// The cluster: --servers/--config, else a local node that holds the graph and its arrays.
Status connect(const GraphRunOptions& o, const graph::FmgHeader& header,
               client::ClusterConfig* config, FarSession* s) {
  ClusterOptions cf = o.cluster;
  cf.local_capacity_bytes = graph::far_graph_node_bytes(header, o.far);
  // The local node sleeps when idle: shared-memory reads need none of its CPU, and its
  // yield-spinning would take a core from the algorithm's threads on a small machine.
  if (cf.local_idle_spin_us < 0) cf.local_idle_spin_us = 0;
  // It may preload the graph from the graph's own directory (the file never passes through
  // this process); nodes given by --servers/--config preload from their configured preload_dir.
  cf.local_preload_dir = std::filesystem::absolute(o.graph).parent_path().string();
  FARMEM_ASSIGN_OR_RETURN(*config, resolve_cluster(cf, &s->local));
  FARMEM_ASSIGN_OR_RETURN(s->cluster, client::Cluster::connect(*config));
  return OkStatus();
}

void print_load(const GraphRunOptions& o, const graph::FarGraph& g, bool use_agent) {
  if (!g.load.sparse_view.empty()) {
    fmt::print(stderr, "graph: far: sparse rounds over few vertices: {}\n", g.load.sparse_view);
  }
  if (g.load.how == "copied") {
    fmt::print(stderr, "graph: far: copied {} into far memory through this process ({})\n", o.graph,
               g.load.why_copied);
  } else {
    fmt::print(stderr, "graph: far: the memory nodes preloaded {}\n", g.preload_name);
  }
  fmt::print(stderr, "graph: far: local budget {} bytes, pages of {} bytes, vertex arrays {}{}\n",
             g.manager->budget_bytes(), o.far.page_bytes,
             o.far.pin == graph::FarPin::kOn
                 ? "pinned, random-access then sequential (static advice)"
             : o.far.pin == graph::FarPin::kRandom ? "pinned, random-access ones (static advice)"
                                                   : "paged",
             use_agent ? fmt::format(", through the agent at {} (cache {})", o.agent,
                                     name_of(kAgentCacheNames, o.cache))
                       : std::string(", direct"));
}

// The graph region's page size if --far-huge-pages may put it on huge pages of `huge` bytes
// (0: it may not): the asked size, else one huge page (or --page-bytes if larger). Through the
// agent 2 MiB pages made PageRank 2.4x slower, so auto stays small there.
uint64_t huge_candidate_page_bytes(const GraphRunOptions& o, uint64_t huge) {
  if (o.far_huge_pages == HugePagesMode::kOff || huge == 0) return 0;
  if (o.far_huge_pages == HugePagesMode::kAuto && o.agent != "none") return 0;
  return o.far.graph_page_bytes != 0 ? o.far.graph_page_bytes : std::max(huge, o.far.page_bytes);
}

// The far options the memory node is sized for: graph pages as --far-huge-pages auto/on would
// make them (a node sized for the sparse view beside huge pages serves small pages too).
graph::FarGraphOptions sizing_options(const GraphRunOptions& o) {
  graph::FarGraphOptions fo = o.far;
  const uint64_t page = huge_candidate_page_bytes(o, paged::huge_pool().page_bytes);
  if (page != 0) fo.graph_page_bytes = page;
  return fo;
}

// --far-huge-pages (graph.h): the far options with huge_pages (and graph_page_bytes) decided,
// after the memory node started (over shared memory UCX may take huge pages for it too).
Result<graph::FarGraphOptions> resolve_huge_pages(const GraphRunOptions& o,
                                                  const graph::FmgHeader& header,
                                                  uint64_t budget_bytes) {
  graph::FarGraphOptions fo = o.far;
  fo.huge_pages = false;
  const bool asked = o.far_huge_pages == HugePagesMode::kOn;
  const paged::HugePool pool = paged::huge_pool();
  const uint64_t page = huge_candidate_page_bytes(o, pool.page_bytes);
  if (page == 0) {
    if (asked) return Unavailable("--far-huge-pages on: this kernel offers no huge pages");
    return fo;
  }
  if (page % pool.page_bytes != 0) {
    if (asked) {
      return InvalidArgument(fmt::format(
          "--far-huge-pages on: --graph-page-bytes is not a multiple of the huge page size ({})",
          pool.page_bytes));
    }
    return fo;  // the user chose small graph pages
  }
  const uint64_t need =
      paged::huge_pages_needed(header.file_bytes, page, budget_bytes,
                               paged::PageManagerOptions{}.max_inflight, pool.page_bytes);
  const std::string sysctl = paged::huge_pool_sysctl(pool, need);
  if (pool.free >= need) {
    fo.huge_pages = true;
    fo.graph_page_bytes = page;
    fmt::print(stderr, "graph: far: the graph's region on huge pages ({} needed, {} free)\n", need,
               pool.free);
    return fo;
  }
  if (asked) {
    return ResourceExhausted(fmt::format(
        "--far-huge-pages on: the graph needs {} free huge pages, the pool has {} (as root: {})",
        need, pool.free, sysctl));
  }
  fmt::print(stderr,
             "graph: far: the graph's region on small pages: huge pages measure faster, but the "
             "pool has {} free of the {} needed (as root: {})\n",
             pool.free, need, sysctl);
  return fo;
}

}  // namespace

Result<std::unique_ptr<graph::GraphMemory>> open_far_backend(const GraphRunOptions& o,
                                                             uint64_t budget_bytes,
                                                             std::unique_ptr<FarSession>* out) {
  const bool use_agent = o.agent != "none";
  if (!use_agent && o.cache != AgentCache::kOff)
    return InvalidArgument("--cache needs --agent ADDR");
  if (use_agent && o.cluster.servers.empty() && o.cluster.config.empty()) {
    return InvalidArgument(
        "--agent needs the memory nodes the agent serves (--servers or --config, listed as the "
        "agent lists them)");
  }
  FARMEM_ASSIGN_OR_RETURN(const graph::FmgHeader header, graph::read_fmg_header(o.graph));
  GraphRunOptions resolved = o;
  resolved.far = sizing_options(o);
  auto s = std::make_unique<FarSession>();
  client::ClusterConfig config;
  FARMEM_TRY(connect(resolved, header, &config, s.get()));
  FARMEM_ASSIGN_OR_RETURN(resolved.far, resolve_huge_pages(o, header, budget_bytes));
  if (use_agent) FARMEM_TRY(open_agent(resolved, config, s.get()));
  graph::FarGraphOptions fo = resolved.far;
  fo.budget_bytes = budget_bytes;
  s->graph_huge_pages = fo.huge_pages;
  s->graph_page_bytes = fo.graph_page_bytes != 0 ? fo.graph_page_bytes : fo.page_bytes;
  fo.graph_source = s->graph_source;
  fo.buffer_source = s->buffer_source;
  FARMEM_ASSIGN_OR_RETURN(graph::FarGraph g, graph::open_far_graph(*s->cluster, o.graph, fo));
  print_load(o, g, use_agent);
  s->manager = std::move(g.manager);
  *out = std::move(s);
  return std::move(g.memory);
}

}  // namespace farmem::bench
