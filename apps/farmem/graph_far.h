// The far backend of `farmem graph run` (graph_far.cc): the cluster connection and paged
// Manager that a far GraphMemory lives in, kept alive for the run.
//
// With --agent ADDR (which needs --servers or --config: the agent serves those memory nodes,
// listed in the same order) every region is in agent mode (agent::make_agent_source): the
// graph's sections through a source whose reads use the agent's dynamic cache only with
// --cache dynamic; the vertex arrays (every buffer an algorithm allocates: results, state,
// frontiers) through a source that pins each of them whole in the agent's static cache with
// --cache static and never uses the dynamic cache. --cache off: neither.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>

#include "farmem/graph/memory.h"
#include "graph_cmd.h"

namespace farmem::apps {

class FarGraphSession {
 public:
  virtual ~FarGraphSession() = default;
  // Fills the run record's "traffic" (bytes and messages per path since the session opened:
  // "host->memnode" direct and "host->agent" from the paged counters, "agent->memnode" from the
  // agent's stats), "agent_cache_hit_rate" (reads the agent served from a cache / reads it
  // served, null without an agent) and "agent_stats" (the agent's counters over the session). The
  // agent's counters are agent-wide: other hosts' requests in the meantime count too.
  virtual void fill_record(nlohmann::ordered_json* rec) = 0;
};

// Opens f.graph on paged far memory with a local budget of budget_bytes (0: unlimited).
Result<std::unique_ptr<graph::GraphMemory>> open_far_graph(const GraphFlags& f,
                                                           uint64_t budget_bytes,
                                                           std::unique_ptr<FarGraphSession>* s);

}  // namespace farmem::apps
