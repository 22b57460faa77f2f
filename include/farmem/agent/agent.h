// Agent: farmem-agent's engine (the SODA DPU agent's role). Host processes send it
// page reads and writes (agent/wire.h) instead of reaching memory nodes themselves; it serves
// them from its caches or forwards them to the memory nodes over its own client::Cluster.
//
// Structure (docs/formats/agent.md has the messages, docs/modules/agent.md the picture):
//  - The agent is a memnode::Server (door, sessions, heartbeats, bad input) whose "agent
//    service" (service()) takes host requests. Its handlers never block: they queue a job to
//    the forwarding thread and keep the Responder; the answer comes back through a per-worker
//    outbox whose eventfd wakes the worker, which replies from poll() (asynchronous forwarding).
//  - The forwarding thread works in rounds: it takes every queued job, applies writes to the
//    caches and writes them back, serves reads from the static or dynamic cache, and reads the
//    misses from the memory nodes grouped per node into Batches of up to Batch::kMaxOps (task
//    aggregation); the data lands in the buffer the reply is sent from.
//  - Writes are acked as soon as they are queued (asynchronous write-back) while the bytes
//    acked but not yet written stay under max_pending_write_bytes; beyond that a write is acked
//    once written. A flush answers once every earlier write is at its node (or with the first
//    write-back error since the last flush) and the staging queued before it is done.
//  - Background staging workers (own threads and ThreadClients) load dynamic cache entries;
//    AgentCache holds the table, the recent-access ring and the adaptive model.
// Thread safety: create/stop on one thread; the service runs on the server's workers.
#pragma once

#include <memory>

#include "farmem/agent/options.h"
#include "farmem/agent/wire.h"
#include "farmem/client/cluster_config.h"
#include "farmem/common/result.h"
#include "farmem/memnode/service.h"

namespace farmem::agent {

class AgentCore;

class Agent {
 public:
  // Connects to the memory nodes of `memnodes` and starts the forwarding and staging threads.
  static Result<std::unique_ptr<Agent>> create(const AgentOptions& options,
                                               const client::ClusterConfig& memnodes);
  ~Agent();  // stops the threads (stop the server first)
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // The agent service (opcodes wire::kFirstOpcode..kLastOpcode) to register with the server.
  std::shared_ptr<memnode::Service> service();
  wire::StatsResponse stats() const;

 private:
  Agent() = default;
  std::shared_ptr<AgentCore> core_;
};

}  // namespace farmem::agent
