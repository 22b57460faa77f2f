// Endpoint: one UCX endpoint from a worker to a peer, with the peer's exported region.
//
// create() opens an endpoint to a peer worker's UCX address (exchanged through the door,
// fabric/door.h) with peer-failure error handling; when both sides create one to the other,
// UCX pairs them into one connection. attach_region() unpacks the peer's remote key for
// one-sided operations.
//
// post_*(): each posts one operation. If it completed at once it returns OK and leaves
// `completion` untouched; if it is in flight it adds 1 to completion->remaining and returns OK
// (the worker later calls completion->complete_one); on failure to post it returns the error
// and adds nothing. Buffers passed in must stay valid until the completion fires.
// deadline_ns is absolute (now_ns() clock); 0 means the worker's default timeout from the
// moment the operation is found to be in flight (so immediate completions never read the clock).
// An endpoint whose peer failed, or whose UCX one-sided operation timed out, is closed: every
// later post returns kPeerFailed with the reason. A timed-out RPC only fails its waiter: its
// payload is copied at post time and a late reply is dropped, so nothing can touch the
// caller's buffers afterwards.
//
// Direct access: when UCX maps the peer's region into this process (shared memory, checked
// with ucp_rkey_ptr at attach_region), direct_base() is a local pointer to its first byte and
// the region maps linearly (region_base() + i is direct_base() + i), so the caller may use
// plain loads, stores and CPU atomics instead of posting. It is null when the region is not
// reachable that way (TCP, RDMA) and becomes null as soon as the endpoint fails or closes; the
// mapping belongs to the remote key and lives exactly as long as direct_base() is non-null.
//
// Thread safety: all methods on the owning worker's thread only.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/common/result.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/worker.h"

namespace farmem::fabric {

class Endpoint {
 public:
  // Starts connecting to the worker whose UCX address is given; operations posted before the
  // connection is up are queued by UCX. `peer` names the peer in messages.
  static Result<std::unique_ptr<Endpoint>> create(Worker& worker, const void* address,
                                                  size_t address_bytes, std::string peer);
  // Force-closes the endpoint if still open. Never progresses the worker, so it may run from
  // the owning thread's loop at any time (not from inside a UCX callback).
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  Status attach_region(uint64_t base, uint64_t bytes, const void* packed_rkey, size_t rkey_bytes);
  uint64_t region_base() const { return region_base_; }
  uint64_t region_bytes() const { return region_bytes_; }
  // Local address of the region's first byte, or null (see "Direct access" above). Check it
  // before every direct access: it is cleared when the peer fails.
  uint8_t* direct_base() const { return direct_base_; }

  Status post_get(void* dst, uint64_t remote_addr, size_t bytes, Completion* c,
                  uint64_t deadline_ns);
  Status post_put(const void* src, uint64_t remote_addr, size_t bytes, Completion* c,
                  uint64_t deadline_ns);
  // *inout holds the desired value; on completion it holds the value found remotely
  // (the swap happened iff *inout == *expected). Operands are read by UCX until completion.
  Status post_cas(uint64_t remote_addr, const uint64_t* expected, uint64_t* inout, Completion* c,
                  uint64_t deadline_ns);
  Status post_faa(uint64_t remote_addr, const uint64_t* add, uint64_t* old_out, Completion* c,
                  uint64_t deadline_ns);
  // Completes when every operation posted earlier on this endpoint is complete at the peer.
  Status post_flush(Completion* c, uint64_t deadline_ns);
  // Sends a request; the reply payload lands in reply (at most reply_capacity bytes) and its
  // length in *reply_bytes. The completion counts both the send and the reply; an error status
  // sent by the peer becomes the completion's status (with the peer's message).
  Status post_rpc(uint16_t opcode, const void* payload, size_t payload_bytes, void* reply,
                  uint32_t reply_capacity, uint32_t* reply_bytes, Completion* c,
                  uint64_t deadline_ns);
  // Sends a reply (server side). The payload is copied; the send is fire-and-forget.
  // Messages longer than wire::kMaxErrorMessageBytes are cut for error replies.
  Status send_reply(const wire::RpcHeader& request, StatusCode code, const void* payload,
                    size_t payload_bytes);
  // Test hook: sends an arbitrary header + payload as an RPC request, unvalidated.
  // The reply is awaited like post_rpc's (header.request_id is replaced by a fresh id).
  Status post_raw_request(const wire::RpcHeader& header, const void* payload, size_t payload_bytes,
                          void* reply, uint32_t reply_capacity, uint32_t* reply_bytes,
                          Completion* c, uint64_t deadline_ns);

  bool failed() const { return failed_; }
  bool closed() const { return closed_; }
  const Status& failure() const { return failure_; }
  // Marks the endpoint failed with `why` and force-closes it (idempotent).
  void fail(Status why);
  // The UCX transports this endpoint uses, e.g. "posix/memory,cma/memory" or "tcp/eth0".
  std::string transports() const;
  // Whether UCX reaches the peer's memory with a native one-sided transport (shared memory,
  // RDMA), rather than emulating reads, writes and atomics with messages the peer's worker
  // must serve (TCP). Read from UCX's endpoint configuration.
  bool native_rma() const;
  const std::string& peer() const { return peer_; }
  ucp_ep_h handle() const { return ep_; }
  Worker& worker() const { return *worker_; }

  // Force-closes now (idempotent): outstanding UCX requests complete with this endpoint's
  // failure. Called by the worker for failed endpoints, outside UCX callbacks.
  void close_now();

 private:
  Endpoint(Worker& worker, std::string peer) : worker_(&worker), peer_(std::move(peer)) {}
  static void on_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  Status check_usable() const;
  Status check_rma() const;
  Status finish_rma(ucs_status_ptr_t r, Completion* c, uint64_t deadline_ns, const char* what);
  Status finish_post(ucs_status_ptr_t r, PendingOp* op, Completion* c, uint64_t deadline_ns,
                     const char* what);

  Worker* worker_;
  std::string peer_;
  ucp_ep_h ep_ = nullptr;
  ucp_rkey_h rkey_ = nullptr;
  uint64_t region_base_ = 0;
  uint64_t region_bytes_ = 0;
  uint8_t* direct_base_ = nullptr;  // non-null only while rkey_ is alive and the peer is usable
  bool failed_ = false;
  bool closed_ = false;
  Status failure_;
};

}  // namespace farmem::fabric
