// Statistics a client reads: a memory node's (NodeStats, from ThreadClient::stats(node), one
// kStats RPC) and the calling thread's own operation counters (ClientCounters, from
// ThreadClient::counters()).
// Thread safety: plain values; ClientCounters belong to the ThreadClient's owning thread.
#pragma once

#include <cstdint>
#include <string>

namespace farmem::client {

struct NodeStats {
  uint16_t node_id = 0;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t rpcs_served = 0;
  uint64_t connections = 0;
  uint64_t roots = 0;
  uint64_t allocations = 0;
  uint16_t worker_count = 0;
  uint64_t uptime_ms = 0;
  uint64_t objects = 0;         // named objects
  uint64_t sessions_total = 0;  // sessions opened since the node started
  uint64_t refused = 0;         // door connections refused
  uint64_t rpcs_dropped = 0;    // requests dropped (session gone, flood)
  // Durable nodes (zeros on a volatile one): the level ("volatile", "process", "power"), what
  // the last recovery replayed and cut, how long it took, the live log and syncs since start.
  std::string durability = "volatile";
  uint64_t recovery_records = 0;
  uint64_t recovery_dropped_records = 0;
  uint64_t recovery_us = 0;
  uint64_t log_bytes = 0;
  uint64_t syncs = 0;
};

// Per-thread counters, readable at any time by the owning thread.
struct ClientCounters {
  uint64_t reads = 0, writes = 0, cas = 0, faa = 0, rpcs = 0;
  uint64_t throttled = 0;  // operations that waited for a throttle credit
};

}  // namespace farmem::client
