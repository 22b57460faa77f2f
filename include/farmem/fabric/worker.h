// Worker: one UCX worker (ucp_worker_h), owned by exactly one thread (UCS_THREAD_MODE_SINGLE).
//
// This is SMART's thread-aware resource allocation in UCX terms: every thread that talks to
// memory nodes has its own worker and its own endpoints, so the data path takes no locks.
// The worker also keeps the bookkeeping of operations in flight: a fixed pool of PendingOp
// records (the bound on in-flight operations per thread), a deadline-ordered list of them, and
// the table of RPCs awaiting replies.
//
// Thread safety: every method must be called from the owning thread, except event_fd().
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/context.h"
#include "farmem/fabric/wire.h"

namespace farmem::fabric {

class Endpoint;
class Worker;

// Book-keeping of one operation that did not complete at once. For one-sided operations it is
// built inside the UCX request's reserved space (no allocation on the data path); RPC records
// come from the worker's pool. Either way it lives until UCX calls back, even when the waiter
// gave up (deadline), so UCX never sees freed memory.
struct PendingOp {
  enum class Kind : uint8_t { kFree, kRma, kRpcSend, kRpcReply };
  Kind kind = Kind::kFree;
  bool linked = false;               // in the deadline list
  bool in_request = false;           // lives in a UCX request, not in the pool
  Completion* completion = nullptr;  // null once the waiter was released (expired)
  Worker* owner = nullptr;
  Endpoint* endpoint = nullptr;
  PendingOp* partner = nullptr;  // kRpcSend: its kRpcReply record (null once released)
  uint64_t deadline_ns = 0;
  uint64_t request_id = 0;  // kRpcReply
  PendingOp* prev = nullptr;
  PendingOp* next = nullptr;
  // kRpcSend: the header and a copy of the payload UCX reads until the send completes
  // (outlive the poster's frame; the copy is freed when the record is released).
  wire::RpcHeader header{};
  uint8_t* owned_payload = nullptr;
  // kRpcReply: where the reply goes.
  void* reply_buffer = nullptr;
  uint32_t reply_capacity = 0;
  uint32_t* reply_bytes = nullptr;
};

struct WorkerOptions {
  uint32_t max_pending_ops = 16384;  // bound on operations in flight on this worker
  uint64_t default_timeout_ns = 5'000'000'000ull;
  bool register_rpc_client = true;  // install the RPC reply handler
  bool collect_closed = false;      // keep failed-and-closed endpoints for take_closed()
};

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> create(Context& context, const WorkerOptions& options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  // Drives UCX; returns the number of events processed. Also closes endpoints that failed.
  unsigned progress();
  // Fails every operation whose deadline is before now_ns with kTimedOut. A UCX one-sided
  // operation that timed out poisons its endpoint (force-closed; later ops get kPeerFailed),
  // because UCX could otherwise still write into the caller's buffer. An RPC only fails its
  // waiter: its send record lives on (untracked) until UCX completes it, and a late reply is
  // dropped.
  void expire(uint64_t now_ns);
  uint64_t next_deadline_ns() const { return head_ ? head_->deadline_ns : UINT64_MAX; }
  size_t in_flight() const { return in_flight_; }

  // This worker's UCX address (for the door handshake); empty on failure.
  std::string address() const;

  // Sleep support: event_fd() is readable when arm() returned true and something arrived.
  int event_fd() const { return event_fd_; }
  bool arm();  // false: events are pending, progress again before sleeping

  // Runs fn(arg) at the end of the next progress(), after UCX's callbacks have returned: how a
  // completion callback (which may not post) gets follow-up work posted on this thread.
  void defer(void (*fn)(void*), void* arg) { deferred_.push_back({fn, arg}); }

  // Orders every operation posted after the fence after those posted before it.
  Status fence();

  uint64_t default_timeout_ns() const { return options_.default_timeout_ns; }
  void set_default_timeout_ns(uint64_t ns) { options_.default_timeout_ns = ns; }
  uint64_t deadline_after_default() const;

  // --- used by Endpoint and by servers ---
  PendingOp* acquire_op();  // null when the pool is exhausted
  // Builds a record inside the reserved space of UCX request `request` (see Context).
  PendingOp* adopt_request(void* request);
  bool can_post() const { return in_flight_ < options_.max_pending_ops; }
  void release_op(PendingOp* op);
  void track(PendingOp* op);    // insert into the deadline list
  void untrack(PendingOp* op);  // remove from the deadline list
  uint64_t next_request_id() { return ++request_seq_; }
  void register_reply(PendingOp* op);
  void unregister_reply(PendingOp* op);
  // Fails every operation in flight on `ep` with `why` and makes its record forget `ep` (its
  // connection is gone): awaited replies are dropped, UCX-owned records are released when
  // UCX calls back.
  void detach_ops_of(Endpoint* ep, const Status& why);
  void schedule_close(Endpoint* ep);
  // Endpoints that failed and were closed by progress() since the last call (only with
  // WorkerOptions::collect_closed). The pointers are still valid: their owners delete them.
  std::vector<Endpoint*> take_closed() { return std::exchange(closed_, {}); }
  void forget_endpoint(Endpoint* ep);
  Status set_am_handler(uint16_t id, ucp_am_recv_callback_t cb, void* arg);

 private:
  Worker(ucp_worker_h w, const WorkerOptions& options);
  static ucs_status_t on_rpc_reply(void* arg, const void* header, size_t header_length, void* data,
                                   size_t length, const ucp_am_recv_param_t* param);
  void close_failed_endpoints();

  ucp_worker_h worker_;
  WorkerOptions options_;
  int event_fd_ = -1;
  std::vector<PendingOp> ops_;
  std::vector<PendingOp*> free_ops_;
  PendingOp* head_ = nullptr;
  PendingOp* tail_ = nullptr;
  size_t in_flight_ = 0;
  uint64_t request_seq_ = 0;
  std::unordered_map<uint64_t, PendingOp*> replies_;
  std::vector<Endpoint*> to_close_;
  std::vector<Endpoint*> closed_;
  struct Deferred {
    void (*fn)(void*);
    void* arg;
  };
  std::vector<Deferred> deferred_;
};

}  // namespace farmem::fabric
