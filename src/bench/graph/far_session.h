// The far backend of `farmem graph run` (farmem/bench/graph.h): the cluster connection (a local
// memory node when none is given), the agent when there is one, and the paged Manager that the
// far GraphMemory lives in, kept alive for the run.
//
// With agent ADDR (which needs --servers or --config: the agent serves those memory nodes, listed
// in the same order) every region is in agent mode (agent::make_agent_source): the graph's
// sections through a source whose reads use the agent's dynamic cache only with cache dynamic;
// the vertex arrays (every buffer an algorithm allocates: results, state, frontiers) through a
// source that pins each of them whole in the agent's static cache with cache static and never
// uses the dynamic cache. cache off: neither.
// Thread safety: the main thread of the run.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "farmem/agent/client.h"
#include "farmem/bench/graph.h"
#include "farmem/bench/harness/local_node.h"
#include "farmem/client/cluster.h"
#include "farmem/graph/memory.h"
#include "farmem/paged/page_manager.h"

namespace farmem::bench {

struct FarSession {
  ~FarSession();

  // Fills the run record's "traffic" (bytes and messages per path since the session opened:
  // "host->memnode" direct and "host->agent" from the paged counters, "agent->memnode" from the
  // agent's stats), "agent_cache_hit_rate" (reads the agent served from a cache / reads it
  // served, null without an agent) and "agent_stats" (the agent's counters over the session).
  // The agent's counters are agent-wide: other hosts' requests in the meantime count too.
  void fill_record(nlohmann::ordered_json* rec);
  // The agent's counters since the session opened (and its path's traffic, its hit rate).
  nlohmann::ordered_json agent_json(std::map<std::string, paged::PathTraffic>* paths,
                                    nlohmann::ordered_json* hit_rate);

  std::unique_ptr<LocalNode> local;  // outlives the cluster
  std::unique_ptr<client::Cluster> cluster;
  // Agent mode: the agent's cluster, this thread's client of it (stats), the two page sources.
  std::string agent_address, cache;
  std::unique_ptr<client::Cluster> agent_cluster;
  std::unique_ptr<agent::AgentClient> agent_client;
  agent::wire::StatsResponse agent_before{};
  std::shared_ptr<paged::PageSource> graph_source, buffer_source;
  std::unique_ptr<paged::PageManager> manager;
  bool graph_huge_pages = false;  // as --far-huge-pages decided ("far_huge_pages" in the record)
  uint64_t graph_page_bytes = 0;  // the graph region's page size ("far_graph_page_bytes")
};

// Opens o.graph on paged far memory with a local budget of budget_bytes (0: unlimited); *out
// keeps what it lives in (destroy the memory first).
Result<std::unique_ptr<graph::GraphMemory>> open_far_backend(const GraphRunOptions& o,
                                                             uint64_t budget_bytes,
                                                             std::unique_ptr<FarSession>* out);

}  // namespace farmem::bench
