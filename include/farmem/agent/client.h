// AgentClient: a host thread's side of the offload agent (agent/wire.h). The agent is reached
// as the one memory node of a client::Cluster of its own (its door address); this wraps the
// calling thread's ThreadClient of that cluster.
//
// read() fetches [addr, addr + bytes) of a memory node through the agent: the reply's data
// lands straight in `dst` (no copy on the host beyond UCX's receive). write() hands data to the
// agent and returns once the agent holds it (asynchronous write-back, unless the agent has it
// off or too much pending); flush() returns once every earlier write of every host is at its
// memory node. pin_static() makes the agent hold a range whole (static caching).
// A queue-full answer (kResourceExhausted) is retried with backoff until the deadline. A dead
// agent gives kPeerFailed (or kTimedOut at the deadline); callers decide what that means (the
// paged module's fault path exits with its documented status).
// Counters: host<->agent messages and bytes of this thread.
// Thread safety: one AgentClient per thread, used on the thread that made it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "farmem/agent/wire.h"
#include "farmem/client/cluster.h"
#include "farmem/client/global_address.h"
#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/runtime/task.h"

namespace farmem::agent {

struct AgentTraffic {
  uint64_t messages = 0;   // requests sent to the agent
  uint64_t bytes_out = 0;  // payload bytes sent
  uint64_t bytes_in = 0;   // payload bytes received
};

class AgentClient {
 public:
  // `agent`: a cluster whose only node is the agent. Uses agent.thread_client() of this thread.
  static Result<std::unique_ptr<AgentClient>> create(client::Cluster& agent);

  // bytes: 1..wire::kMaxReadBytes; flags: wire::kReadFlag* bits (kReadNoDynamic).
  runtime::Task<Status> read(GlobalAddress addr, void* dst, uint32_t bytes, uint32_t flags = 0);
  // Any size: sent in pieces of wire::kMaxWriteBytes, concurrently.
  runtime::Task<Status> write(GlobalAddress addr, const void* src, uint64_t bytes);
  runtime::Task<Status> flush();
  runtime::Task<Status> pin_static(GlobalAddress addr, uint64_t bytes);
  // Drops the agent's cached copies of the range (static or dynamic), for memory that changed
  // without passing through the agent (freed and reused, written directly).
  runtime::Task<Status> invalidate(GlobalAddress addr, uint64_t bytes);
  runtime::Task<Result<wire::StatsResponse>> stats();
  // Reads several ranges concurrently (each <= kMaxReadBytes); one status per range.
  runtime::Task<std::vector<Status>> read_many(std::vector<GlobalAddress> addrs,
                                               std::vector<void*> dsts, uint32_t bytes);

  client::ThreadClient& thread_client() { return *tc_; }
  const AgentTraffic& traffic() const { return traffic_; }

 private:
  AgentClient(client::ThreadClient* tc, uint16_t node) : tc_(tc), node_(node) {}
  // One RPC, retried while the agent's queue is full.
  runtime::Task<Status> call(wire::Op op, std::vector<uint8_t> request, void* reply,
                             uint32_t capacity, uint32_t* reply_bytes);

  client::ThreadClient* tc_;
  uint16_t node_;
  AgentTraffic traffic_;
};

}  // namespace farmem::agent
