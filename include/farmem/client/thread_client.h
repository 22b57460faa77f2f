// ThreadClient: one thread's access to the cluster (SMART's per-thread resources).
//
// It owns a UCX worker, one endpoint per memory node, the thread's throttle, backoff policy and
// small-object allocator, and runs on the thread's Scheduler. Obtain it with
// Cluster::thread_client() on the thread that will use it; never share it between threads.
//
// One-sided operations return awaitables: `Status s = co_await c.read(addr, buf, n);`.
// Before posting, each checks that the node exists and [offset, offset + bytes) lies in its
// region (kNotFound / kOutOfRange), and that atomics are 8-byte aligned (kInvalidArgument).
// Every operation has a deadline: the one given (absolute, now_ns() clock) or else the
// client's op_timeout_ms; past it the result is kTimedOut and the operation may or may not
// have been applied. A timeout fails only that operation, except for an operation UCX itself
// still holds (one-sided through UCX on shared memory with direct access off, or RDMA): UCX
// may still write into its buffer, so that connection is abandoned (later operations on the
// node get kPeerFailed). A dead node gives kPeerFailed, a node shutting down kUnavailable (the
// session's heartbeat notices both, and a stopped node, within op_timeout_ms).
// A completed write is visible at the memory node. Writes and atomics may not touch a node's
// reserved header. The full error model: docs/modules/common.md "Errors".
//
// Paths: shared-memory nodes use direct access (below) or UCX's shared-memory transports; nodes
// reached only over TCP use served operations (client/served_ops.h: the node performs them and
// a Batch costs one round trip); RDMA uses UCX. ClientOptions::one_sided forces a path.
//
// Batch (batch.h) posts several operations and waits for all of them (doorbell batching).
//
// Direct access (shared memory): when the client option direct_access is on and UCX maps a
// node's region into this process (fabric::Endpoint::direct_base()), operations on that node
// are plain CPU instructions on the mapping instead of UCX calls: writes are complete, and
// visible at the node, when they return; CAS/FAA are atomic with other clients' UCX atomics;
// reads (and awaited CAS/FAA) are performed when awaited, after one yield if other coroutines
// are ready, so that their cache misses overlap (op_awaitable.h, batch.h).
// Bounds and alignment checks, counters, throttle credits and errors are unchanged; a failed
// node gives its kPeerFailed status to direct operations too. direct(node) tells which path a
// node uses.
//
// The control plane (allocation, named objects, roots, statistics, raw RPCs) is one RPC to one
// node per call (control_plane.cc; wire formats in docs/formats/control.md).
// Thread safety: the owning thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/batch.h"
#include "farmem/client/chunk_allocator.h"
#include "farmem/client/cluster_config.h"
#include "farmem/client/global_address.h"
#include "farmem/client/node_session.h"
#include "farmem/client/op_awaitable.h"
#include "farmem/client/served_lane.h"
#include "farmem/client/served_ops.h"
#include "farmem/client/stats.h"
#include "farmem/common/result.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/worker.h"
#include "farmem/runtime/backoff.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/task.h"
#include "farmem/runtime/throttle.h"

namespace farmem::client {

class Cluster;
struct NodeInfo;

class ThreadClient {
 public:
  ~ThreadClient();
  ThreadClient(const ThreadClient&) = delete;
  ThreadClient& operator=(const ThreadClient&) = delete;

  // ---- one-sided operations (awaitables) ----
  // deadline_ns (every call): absolute, now_ns() clock; 0 = op_timeout_ms from posting.
  OpAwaitable read(GlobalAddress addr, void* dst, size_t bytes, uint64_t deadline_ns = 0) {
    return OpAwaitable(this, OpKind::kRead, addr, dst, bytes, 0, 0, nullptr, deadline_ns);
  }
  OpAwaitable write(GlobalAddress addr, const void* src, size_t bytes, uint64_t deadline_ns = 0) {
    return OpAwaitable(this, OpKind::kWrite, addr, const_cast<void*>(src), bytes, 0, 0, nullptr,
                       deadline_ns);
  }
  // *old_value receives the value found; the swap happened iff it equals `expected`.
  OpAwaitable cas(GlobalAddress addr, uint64_t expected, uint64_t desired, uint64_t* old_value,
                  uint64_t deadline_ns = 0) {
    return OpAwaitable(this, OpKind::kCas, addr, nullptr, 8, expected, desired, old_value,
                       deadline_ns);
  }
  OpAwaitable faa(GlobalAddress addr, uint64_t add, uint64_t* old_value, uint64_t deadline_ns = 0) {
    return OpAwaitable(this, OpKind::kFaa, addr, nullptr, 8, 0, add, old_value, deadline_ns);
  }
  // An absolute deadline `ms` from now (for the deadline_ns parameters).
  static uint64_t deadline_in_ms(uint64_t ms);
  // Reads the 8-byte word, applies fn, CASes it in; retries with backoff. Returns the new value.
  runtime::Task<Result<uint64_t>> atomic_update(GlobalAddress addr,
                                                std::function<uint64_t(uint64_t)> fn);

  // ---- control plane (RPC) ----
  // Memory allocated here belongs to this thread's session with the node: it is returned when
  // the session ends (this ThreadClient is destroyed, or the process dies). Memory that must
  // outlive the session belongs to a named object (object_create; ds/common/object.h).
  // Small sizes come from locally carved chunks; large ones from a node's allocator directly.
  // Without a node, nodes are used round-robin.
  runtime::Task<Result<GlobalAddress>> allocate(uint64_t bytes);
  runtime::Task<Result<GlobalAddress>> allocate(uint64_t bytes, uint16_t node);
  // bytes must be the size passed to allocate().
  runtime::Task<Status> free(GlobalAddress addr, uint64_t bytes);
  // Allocation straight from one node's allocator (alignment: power of two <= 4096), owned by
  // `owner`: wire::kOwnerSession (this session) or an object id from object_create/open.
  runtime::Task<Result<GlobalAddress>> allocate_on(uint16_t node, uint64_t bytes,
                                                   uint64_t alignment = 64,
                                                   uint64_t owner = wire::kOwnerSession);
  runtime::Task<Status> free_on(GlobalAddress addr);
  // Makes [addr, addr + bytes) durable on its node (like RDMA FLUSH): returns once the bytes the
  // range held when the node read it survive at the node's durability level (control.md
  // "Persist"); at once on a volatile node. Issue it after the writes it covers completed.
  runtime::Task<Status> persist(GlobalAddress addr, uint64_t bytes);
  // Several ranges of one node in one round trip (1..wire::kMaxPersistRanges), logged in this
  // order. `ordered`: return once they are in the node's log, without waiting for its sync
  // (wire::kPersistOrdered): enough when a later waiting persist to the same node (or the next
  // sync) will cover them, since the log keeps its order.
  runtime::Task<Status> persist(uint16_t node, std::vector<wire::PersistRange> ranges,
                                bool ordered = false);
  // Named objects on one node (control.md "Objects"): create (ephemeral: destroyed with this
  // session unless persisted), open by name, persist, destroy (frees all its memory and roots).
  runtime::Task<Result<uint64_t>> object_create(uint16_t node, std::string name, bool ephemeral);
  runtime::Task<Result<uint64_t>> object_open(uint16_t node, std::string name);
  runtime::Task<Status> object_persist(uint16_t node, uint64_t id);
  runtime::Task<Status> object_destroy(uint16_t node, uint64_t id);
  // Whether each session id is open on `node` (for leases held by sessions; at most
  // wire::kMaxSessionsPerQuery ids).
  runtime::Task<Result<std::vector<bool>>> sessions_alive(uint16_t node, std::vector<uint64_t> ids);
  // This thread's session id with `node` (0 for an unknown node).
  uint64_t session_id(uint16_t node) const;
  // owner: 0, or an object id on the root's node (root_node(name)) whose destruction removes it.
  runtime::Task<Status> publish_root(std::string name, GlobalAddress addr, bool replace = false,
                                     uint64_t owner = 0);
  runtime::Task<Result<GlobalAddress>> lookup_root(std::string name);
  runtime::Task<Status> remove_root(std::string name);
  runtime::Task<Result<NodeStats>> stats(uint16_t node);
  // A raw RPC to one node (for extensions and tests).
  runtime::Task<Status> rpc(uint16_t node, uint16_t opcode, const void* request,
                            size_t request_bytes, void* reply, uint32_t reply_capacity,
                            uint32_t* reply_bytes);

  // Runs a coroutine to completion on this thread (runtime::sync_wait on the client's scheduler,
  // which is the thread's installed one). Never from inside a coroutine (runtime.md rule 5).
  template <typename T>
  T run(runtime::Task<T> task) {
    return scheduler_->block_on(std::move(task));
  }

  // ---- plumbing ----
  runtime::Scheduler& scheduler() { return *scheduler_; }
  fabric::Worker& worker() { return *worker_; }
  runtime::Throttle& throttle() { return throttle_; }
  runtime::BackoffPolicy& backoff_policy() { return backoff_; }
  const ClientCounters& counters() const { return counters_; }
  ClientCounters& mutable_counters() { return counters_; }
  Cluster& cluster() { return *cluster_; }
  // Endpoint for a node id, or null.
  fabric::Endpoint* endpoint(uint16_t node) const {
    return node < by_node_.size() ? by_node_[node] : nullptr;
  }
  // Bounds/alignment check and translation to a remote virtual address. Writes and atomics
  // (mutating) may not touch the node's reserved region header.
  Status resolve(GlobalAddress addr, size_t bytes, bool atomic, bool mutating,
                 fabric::Endpoint** ep, uint64_t* raddr) const;
  // Deadline passed to the fabric: 0 = the worker's default (op_timeout_ms), computed lazily.
  uint64_t deadline() const { return 0; }
  // Whether one-sided operations on `node` use direct access now (direct_access is on and UCX
  // maps the node's region here); false for unknown, remote (TCP/RDMA) and failed nodes.
  bool direct(uint16_t node) const {
    fabric::Endpoint* ep = endpoint(node);
    return direct_access_ && ep != nullptr && ep->direct_base() != nullptr;
  }
  // OK while this thread's session with `node` is usable; otherwise why not (kPeerFailed: the
  // node died, was stopped longer than op_timeout_ms, or cut off; kUnavailable: it shut down;
  // kNotFound: no such node; kUnavailable: named down). An idle client learns of a lost node
  // here.
  Status node_status(uint16_t node) const;
  // Whether one-sided operations on `node` are served by the node (RPC) rather than UCX.
  bool served(uint16_t node) const { return node < served_.size() && served_[node]; }
  // This thread's coalescing lane of served operations to `node` (served_lane.h), created on
  // first use. Precondition: endpoint(node) is not null.
  ServedLane* served_lane(uint16_t node);
  // Posts what the served lanes hold now (they are flushed at the end of every round anyway);
  // for code that waits by progressing the worker alone.
  void flush_served();
  // Served messages posted and operations in them, over every node (for reports).
  uint64_t served_messages() const;
  uint64_t served_ops() const;
  // Checks every node session (heartbeats, closed connections) now if due. Cheap when not.
  void check_liveness(uint64_t now_ns) {
    for (auto& s : sessions_) s->check(now_ns);
  }
  // Transports of the first node's endpoint, prefixed "direct+" when it uses direct access,
  // e.g. "direct+sysv/memory,posix/memory,tcp/lo".
  std::string transports() const;
  uint32_t index() const { return index_; }

  // ---- the data path's view (OpAwaitable, Batch, and operations built like them) ----
  // Whether operations take throttle credits (ClientOptions::throttle is not off).
  bool throttling() const { return throttle_on_; }
  // The local mapping of ep's region if operations may use the direct path, else null.
  uint8_t* direct_base(fabric::Endpoint* ep) const {
    return direct_access_ ? ep->direct_base() : nullptr;
  }
  // Counts n operations: every kOpsPerProgress operations it progresses the worker and checks
  // the node sessions. Operations that complete when posted (direct access, and UCX's
  // shared-memory transports with direct access off) never suspend, so a coroutine issuing only
  // those would otherwise keep the scheduler from noticing that a node died. An OpAwaitable
  // calls it before it posts; a Batch once for all of its operations, when it is waited on (or
  // dropped), before its deferred reads are performed.
  void pace(uint64_t n = 1) {
    const uint64_t before = posted_ops_;
    posted_ops_ += n;
    // A multiple of kOpsPerProgress was reached: the bits above its power of two changed.
    if ((before ^ posted_ops_) >= kOpsPerProgress) [[unlikely]]
      progress_and_check();
  }

 private:
  friend class Cluster;  // creates and connects clients
  ThreadClient(Cluster& cluster, uint32_t index);
  // Connects to every node not named down; the first client of the cluster fills in `nodes`
  // (ids, region sizes, worker counts), later ones check them. Called under Cluster's lock.
  Status connect_all(std::vector<NodeInfo>& nodes);
  // Opens the session with one node and checks the UCX connection with an echo RPC.
  Status connect_node(NodeInfo& node);
  void progress_and_check();
  static void on_lane_ready(void* self, ServedLane* lane);
  static void on_round_end(void* self);
  static constexpr uint64_t kOpsPerProgress = 1024;  // a power of two (pace)
  static_assert((kOpsPerProgress & (kOpsPerProgress - 1)) == 0);

  Cluster* cluster_;
  uint32_t index_;
  std::thread::id owner_thread_;
  uint64_t op_timeout_ns_;
  std::unique_ptr<fabric::Worker> worker_;
  // The scheduler clients created for this thread (shared by every ThreadClient of the thread
  // that found none installed, so it lives until the last of them goes); null when the thread's
  // code installed its own, which must then outlive the clients.
  std::shared_ptr<runtime::Scheduler> own_scheduler_;
  runtime::Scheduler* scheduler_ = nullptr;
  std::vector<std::unique_ptr<NodeSession>> sessions_;  // in cluster config order
  std::vector<fabric::Endpoint*> by_node_;
  std::vector<bool> served_;  // by node id: one-sided operations go as RPCs (served_ops.h)
  std::vector<std::unique_ptr<ServedLane>> lanes_;  // by node id, created on first use
  std::vector<ServedLane*> ready_lanes_;            // to flush at the end of this round
  std::vector<ServedLane*> flushing_;               // flush_served's (kept for its capacity)
  bool round_end_pending_ = false;
  runtime::Throttle throttle_;
  bool throttle_on_;
  bool direct_access_;         // ClientOptions::direct_access
  uint32_t served_in_flight_;  // ClientOptions::served_in_flight
  uint64_t posted_ops_ = 0;    // operations counted by pace(), for the periodic progress
  size_t ticker_id_ = SIZE_MAX;
  size_t liveness_ticker_id_ = SIZE_MAX;
  runtime::BackoffPolicy backoff_;
  std::vector<ChunkAllocator> allocators_;  // per node id
  uint32_t next_node_ = 0;                  // round-robin for allocate(bytes)
  ClientCounters counters_;
};

}  // namespace farmem::client
