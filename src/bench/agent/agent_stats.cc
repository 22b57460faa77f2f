// `farmem agent-stats` (farmem/bench/agent.h): an agent's counters, a line each or one JSON
// object.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "agent_connect.h"
#include "farmem/agent/client.h"
#include "farmem/bench/agent.h"

namespace farmem::bench {
namespace {

nlohmann::ordered_json stats_json(const agent::wire::StatsResponse& s) {
  nlohmann::ordered_json j;
  j["host_messages_in"] = s.host_messages_in;
  j["host_bytes_in"] = s.host_bytes_in;
  j["host_messages_out"] = s.host_messages_out;
  j["host_bytes_out"] = s.host_bytes_out;
  j["node_reads"] = s.node_reads;
  j["node_read_bytes"] = s.node_read_bytes;
  j["node_writes"] = s.node_writes;
  j["node_write_bytes"] = s.node_write_bytes;
  j["node_batches"] = s.node_batches;
  j["rounds"] = s.rounds;
  j["host_reads"] = s.host_reads;
  j["aggregated_reads"] = s.aggregated_reads;
  j["static_hits"] = s.static_hits;
  j["dynamic_hits"] = s.dynamic_hits;
  j["dynamic_misses"] = s.dynamic_misses;
  j["staged_entries"] = s.staged_entries;
  j["staged_bytes"] = s.staged_bytes;
  j["evictions"] = s.evictions;
  j["cache_bytes"] = s.cache_bytes;
  j["static_bytes"] = s.static_bytes;
  j["dynamic_enabled"] = s.dynamic_enabled;
  j["dynamic_switches"] = s.dynamic_switches;
  j["writes_pending"] = s.writes_pending;
  j["host_bw_bytes_per_s"] = s.host_bw_bytes_per_s;
  j["node_bw_bytes_per_s"] = s.node_bw_bytes_per_s;
  return j;
}

}  // namespace

int run_agent_stats(const AgentStatsOptions& f) {
  auto cluster = connect_agent(f.agent, f.tls);
  if (!cluster.ok()) return fail("agent", cluster.status());
  auto ac = agent::AgentClient::create(**cluster);
  if (!ac.ok()) return fail("agent", ac.status());
  auto s = (*ac)->thread_client().run((*ac)->stats());
  if (!s.ok()) return fail("agent stats", s.status());
  const nlohmann::ordered_json j = stats_json(*s);
  if (f.json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (const auto& [k, v] : j.items()) std::printf("%-22s %s\n", k.c_str(), v.dump().c_str());
  }
  ac->reset();
  return 0;
}

}  // namespace farmem::bench
