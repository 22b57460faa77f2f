#include "graph_far.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <map>

#include "farmem/agent/client.h"
#include "farmem/agent/page_source.h"
#include "farmem/client/cluster.h"
#include "farmem/graph/far_memory.h"
#include "farmem/paged/page_manager.h"

namespace farmem::apps {

namespace {

class Session : public FarGraphSession {
 public:
  void fill_record(nlohmann::ordered_json* rec) override {
    std::map<std::string, paged::PathTraffic> paths;
    paths["host->memnode"].path = "host->memnode";
    for (const paged::PathTraffic& p : manager->stats().traffic) {
      paged::PathTraffic& t = paths[p.path];  // one entry per path (several agent sources)
      t.bytes += p.bytes;
      t.messages += p.messages;
    }
    nlohmann::ordered_json agent_json = nullptr;
    nlohmann::ordered_json hit_rate = nullptr;
    if (agent_client != nullptr) {
      auto now = agent_client->thread_client().run(agent_client->stats());
      if (now.ok()) {
        const agent::wire::StatsResponse& a = *now;
        const agent::wire::StatsResponse& b = agent_before;
        const uint64_t reads = a.host_reads - b.host_reads;
        const uint64_t static_hits = a.static_hits - b.static_hits;
        const uint64_t dynamic_hits = a.dynamic_hits - b.dynamic_hits;
        const uint64_t dynamic_misses = a.dynamic_misses - b.dynamic_misses;
        paths["agent->memnode"] = {
            "agent->memnode",
            a.node_read_bytes - b.node_read_bytes + a.node_write_bytes - b.node_write_bytes,
            a.node_reads - b.node_reads + a.node_writes - b.node_writes};
        if (reads > 0) hit_rate = static_cast<double>(static_hits + dynamic_hits) / reads;
        agent_json = {
            {"address", agent_address},
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
      } else {
        agent_json = {{"address", agent_address}, {"error", now.status().to_string()}};
      }
    }
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    for (const auto& [path, p] : paths) {
      t[path] = {{"bytes", p.bytes}, {"messages", p.messages}};
    }
    (*rec)["agent_cache_hit_rate"] = hit_rate;
    (*rec)["traffic"] = std::move(t);
    (*rec)["agent_stats"] = std::move(agent_json);
  }
  ~Session() override {
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

  std::unique_ptr<LocalNode> local;  // outlives the cluster
  std::unique_ptr<client::Cluster> cluster;
  // Agent mode: the agent's cluster, this thread's client of it (stats), the two page sources.
  std::string agent_address, cache;
  std::unique_ptr<client::Cluster> agent_cluster;
  std::unique_ptr<agent::AgentClient> agent_client;
  agent::wire::StatsResponse agent_before{};
  std::shared_ptr<paged::PageSource> graph_source, buffer_source;
  std::unique_ptr<paged::PageManager> manager;
};

// Connects to the agent (same transport options as the memory nodes) and makes the sources.
Status open_agent(const GraphFlags& f, const client::ClusterConfig& nodes, Session* s) {
  auto cfg = client::ClusterConfig::from_server_list(f.agent);
  if (!cfg.ok()) return cfg.status();
  cfg->options = nodes.options;
  auto c = client::Cluster::connect(*cfg);
  if (!c.ok()) {
    return Status(c.status().code(), fmt::format("--agent {}: {}", f.agent, c.status().message()));
  }
  s->agent_cluster = std::move(*c);
  auto client = agent::AgentClient::create(*s->agent_cluster);
  if (!client.ok()) return client.status();
  s->agent_client = std::move(*client);
  auto before = s->agent_client->thread_client().run(s->agent_client->stats());
  if (!before.ok()) {
    return Status(before.status().code(),
                  fmt::format("--agent {}: stats: {}", f.agent, before.status().message()));
  }
  s->agent_before = *before;
  s->agent_address = f.agent;
  s->cache = f.cache;
  // --cache alone decides what the agent caches: the paged layer's own pinning of vertex
  // arrays (static advice, --far-pin) stays local.
  agent::AgentSourceOptions graph_options;
  graph_options.dynamic_cache = f.cache == "dynamic";
  graph_options.pin_advised = false;
  agent::AgentSourceOptions buffer_options;
  buffer_options.dynamic_cache = false;
  buffer_options.pin_static = f.cache == "static";
  buffer_options.pin_advised = false;
  s->graph_source = agent::make_agent_source(*s->agent_cluster, graph_options);
  s->buffer_source = agent::make_agent_source(*s->agent_cluster, buffer_options);
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<graph::GraphMemory>> open_far_graph(const GraphFlags& f,
                                                           uint64_t budget_bytes,
                                                           std::unique_ptr<FarGraphSession>* out) {
  const bool use_agent = f.agent != "none";
  if (!use_agent && f.cache != "off") return InvalidArgument("--cache needs --agent ADDR");
  if (use_agent && f.cluster.servers.empty() && f.cluster.config.empty()) {
    return InvalidArgument(
        "--agent needs the memory nodes the agent serves (--servers or --config, listed as the "
        "agent lists them)");
  }
  auto header = graph::read_fmg_header(f.graph);
  if (!header.ok()) return header.status();
  auto s = std::make_unique<Session>();
  ClusterFlags cf = f.cluster;
  // A local node (no --servers/--config) must hold the graph (twice with a sparse view: large
  // graph pages) and the vertex arrays.
  const uint64_t copies = f.far_sparse_view && f.graph_page_bytes > f.page_bytes ? 3 : 2;
  // (Power-of-two blocks: a copy takes the file size rounded up to one.)
  cf.local_capacity_bytes =
      std::max<uint64_t>(1ull << 30, copies * std::bit_ceil(header->file_bytes) +
                                         64 * header->vertices + (256ull << 20));
  // The local node sleeps when idle: shared-memory reads need none of its CPU, and its
  // yield-spinning would take a core from the algorithm's threads on a small machine.
  if (cf.local_idle_spin_us < 0) cf.local_idle_spin_us = 0;
  // It may preload the graph from the graph's own directory (the file never passes through
  // this process); nodes given by --servers/--config preload from their configured preload_dir.
  cf.local_preload_dir = std::filesystem::absolute(f.graph).parent_path().string();
  auto config = resolve_cluster(cf, &s->local);
  if (!config.ok()) return config.status();
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) return cluster.status();
  s->cluster = std::move(*cluster);
  if (use_agent) {
    if (Status st = open_agent(f, *config, s.get()); !st.ok()) return st;
  }
  paged::PageManagerOptions mo;
  mo.local_bytes = budget_bytes;
  if (budget_bytes == 0) mo.local_percent = 100;
  mo.install_threads = f.far_install_threads;
  auto manager = paged::PageManager::create(*s->cluster, mo);
  if (!manager.ok()) return manager.status();
  s->manager = std::move(*manager);
  graph::FarOptions fo;
  fo.page_bytes = f.page_bytes;
  fo.graph_page_bytes = f.graph_page_bytes;
  fo.graph_huge_pages = f.far_huge_pages;
  fo.sparse_view = f.far_sparse_view;
  fo.graph_advice =
      f.far_advice == "sequential" ? paged::Advice::kSequential : paged::Advice::kRandom;
  // On huge graph pages the offsets section is nine 2 MiB pages that CLOCK keeps; read ahead
  // with the neighbours (sequential), the sweeps pushed it out (Kronecker 21 BFS: +8% bytes).
  // On small pages it follows --far-advice: PageRank through the agent took 3x longer with
  // random-advice offsets (a round trip per offsets page).
  fo.offsets_advice = f.far_huge_pages ? paged::Advice::kRandom : fo.graph_advice;
  fo.random_array_advice = f.far_pin != "off" ? paged::Advice::kStatic : paged::Advice::kRandom;
  fo.sequential_array_advice =
      f.far_pin == "on" ? paged::Advice::kStatic : paged::Advice::kSequential;
  fo.preload_name = std::filesystem::path(f.graph).filename().string();
  fo.graph_source = s->graph_source;
  fo.buffer_source = s->buffer_source;
  graph::FarLoad load;
  auto memory = graph::open_far(*s->manager, f.graph, fo, &load);
  if (!memory.ok()) return memory.status();
  if (!load.sparse_view.empty()) {
    fmt::print(stderr, "graph: far: sparse rounds over few vertices: {}\n", load.sparse_view);
  }
  if (load.how == "copied") {
    fmt::print(stderr, "graph: far: copied {} into far memory through this process ({})\n", f.graph,
               load.why_copied);
  } else {
    fmt::print(stderr, "graph: far: the memory nodes preloaded {}\n", fo.preload_name);
  }
  fmt::print(stderr, "graph: far: local budget {} bytes, pages of {} bytes, vertex arrays {}{}\n",
             s->manager->budget_bytes(), f.page_bytes,
             f.far_pin == "on"       ? "pinned, random-access then sequential (static advice)"
             : f.far_pin == "random" ? "pinned, random-access ones (static advice)"
                                     : "paged",
             use_agent ? fmt::format(", through the agent at {} (cache {})", f.agent, f.cache)
                       : std::string(", direct"));
  *out = std::move(s);
  return memory;
}

}  // namespace farmem::apps
