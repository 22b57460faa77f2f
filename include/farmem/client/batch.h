// Batch: several one-sided operations of one ThreadClient posted together and completed
// together (doorbell batching).
//
// Each operation is checked (as ThreadClient::resolve does) and posted when added (persist:
// see below); wait() is
// awaited once and completes when every operation is complete at its memory node. A posting
// error is returned by the call that added the operation and reported again by wait(). At most
// kMaxOps operations; none may be added after wait().
// Paths, per node: on direct access the batch's writes and atomics are performed at once, in
// posting order, and its reads are deferred to wait() (or to the next write, CAS, FAA or fence
// of this batch, which performs them first, keeping program order); on served nodes (TCP) the
// batch sends one kMemOps message set per node from wait(); otherwise it posts to UCX and
// flushes its writes from wait(). fence() orders the operations after it after those before it.
// A Batch destroyed without wait() (or still in flight) counts its operations and waits for UCX
// to let go of it. A direct batch that was waited on allocates and releases nothing.
// Obtain the ThreadClient from farmem/client/thread_client.h.
// Thread safety: the owning ThreadClient's thread only.
#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/client/served_ops.h"
#include "farmem/common/status.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/endpoint.h"

namespace farmem::client {

class ThreadClient;

class Batch {
 public:
  static constexpr size_t kMaxOps = 64;
  // deadline_ns: absolute (now_ns() clock) for every operation of the batch; 0 = the client's
  // op_timeout_ms from when each is posted.
  explicit Batch(ThreadClient& client, uint64_t deadline_ns = 0)
      : client_(&client), deadline_ns_(deadline_ns) {
    completion_.notify = &Batch::on_complete;
    completion_.owner = this;
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  // (Inline, with the rare work out of line: a Batch is built for every round trip, and a
  // direct one that was waited on has nothing to release.)
  ~Batch() {
    if (!waited_ || completion_.remaining > 0) settle();
  }

  // Each posts at once. A posting error is returned and also reported by wait().
  Status read(GlobalAddress addr, void* dst, size_t bytes);
  Status write(GlobalAddress addr, const void* src, size_t bytes);
  Status cas(GlobalAddress addr, uint64_t expected, uint64_t desired, uint64_t* old_value);
  Status faa(GlobalAddress addr, uint64_t add, uint64_t* old_value);
  // Operations posted after the fence are ordered after those before it (write-then-unlock).
  Status fence();
  // Makes [addr, addr + bytes) durable on its node (ThreadClient::persist inside the batch):
  // wait() returns once the range, with every write of this batch before the persist, is stable
  // (it may also hold later writes to it). Served nodes (TCP) do it within the batch's message;
  // elsewhere one message per node follows once the batch's other operations completed. Nothing
  // on a volatile node.
  Status persist(GlobalAddress addr, uint64_t bytes);
  // Runs procedure `procedure` on `node` at this point of the batch (a kCall operation,
  // docs/formats/memops.md "Calls"; memnode/procedure.h); only on a served node (ThreadClient::
  // served), else kInvalidArgument. args (1..wire::kMaxMemOpBytes) are copied now; the reply
  // slot (reply_bytes: a multiple of 8, wire::kMinCallReplyBytes..kMaxCallReplyBytes) is
  // copied into `reply` (8-byte aligned) by wait(); read it with client::call_result.
  Status call(uint16_t node, uint16_t procedure, const void* args, size_t bytes, void* reply,
              size_t reply_bytes);
  size_t size() const { return ops_; }
  // Direct reads wait here until wait() (or until a later write, CAS, FAA or fence of this batch
  // performs them first, keeping program order); beyond this many, the oldest are performed.
  static constexpr size_t kMaxDeferredReads = 16;

  struct WaitAwaitable {
    Batch* b;
    bool await_ready();
    void await_suspend(std::coroutine_handle<> h);
    Status await_resume();
  };
  // Completes when every posted operation is complete at its memory node.
  WaitAwaitable wait() { return WaitAwaitable{this}; }

 private:
  friend struct WaitAwaitable;
  Status admit(GlobalAddress addr, size_t bytes, bool atomic, bool mutating, fabric::Endpoint** ep,
               uint64_t* raddr);
  static void on_complete(fabric::Completion* c);
  // Keeps the first error of the batch (for wait()).
  void note(const Status& s) {
    if (!s.ok() && first_error_.ok()) first_error_ = s;
  }
  // The result of posting an operation to UCX, noted (and the batch marked as using UCX).
  Status note_ucx_post(Status s);
  // The operand slot of the operation just admitted (CAS/FAA through UCX).
  uint64_t* operand_slot();
  // The local address of `addr` when this batch may access its node directly, else null.
  uint8_t* direct_target(fabric::Endpoint* ep, GlobalAddress addr) const;
  // Performs the deferred reads in posting order (a failed node fails them instead).
  void perform_deferred_reads();
  // The served operations of ep's node in this batch (created on first use), or null when the
  // node does not use served operations.
  ServedOps* served_for(fabric::Endpoint* ep, uint16_t node);
  // The destructor's work for a batch not waited on or still in flight: counts its operations
  // (ThreadClient::pace), flushes its UCX writes and waits for UCX to let go of it.
  void settle();
  // Whether persists wait for the rest of the batch; posting them (false when none went out).
  bool persists_held() const;
  bool post_persists();
  static void post_persists_then_resume(void* self);

  struct DeferredRead {
    void* dst;
    const uint8_t* src;
    size_t bytes;
    fabric::Endpoint* ep;
  };
  ThreadClient* client_;
  uint64_t deadline_ns_;
  fabric::Completion completion_;
  std::coroutine_handle<> handle_;
  Status first_error_;
  // What only operations off the direct path need, created on first use: a direct batch
  // allocates nothing and releases nothing.
  struct OffDirect {
    OffDirect();
    ~OffDirect();  // out of line: a ServedOps is large
    // Per served node, in first-use order (a ServedOps never moves).
    std::vector<std::unique_ptr<ServedOps>> served;
    std::vector<fabric::Endpoint*> written;  // endpoints needing a flush
    // Per non-served node: its persists, posted once the rest of the batch completed.
    std::vector<std::unique_ptr<ServedOps>> after;
  };
  OffDirect& off_direct();
  std::unique_ptr<OffDirect> off_;
  size_t ops_ = 0;
  // CAS/FAA operands UCX reads until completion; each is written before it is posted, so the
  // array is left uninitialised (a Batch is built for every round trip).
  std::array<uint64_t, kMaxOps> operands_;
  std::array<DeferredRead, kMaxDeferredReads> deferred_;
  uint32_t deferred_count_ = 0;
  bool posted_through_ucx_ = false;  // some operation of this batch went through UCX
  // A fence followed UCX-posted operations: later operations go through UCX as well, because
  // only UCX orders them after the ones in flight (ucp_worker_fence).
  bool ucx_fenced_ = false;
  bool waited_ = false;
  bool persists_posted_ = false;
};

}  // namespace farmem::client
