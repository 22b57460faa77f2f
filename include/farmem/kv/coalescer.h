// Coalescer: request coalescing for one thread's key-value operations.
//
// Operations that the coroutines of a thread submit for the same pool handle (a Lane; a kOps
// message is for one pool, and a pool lives on one shard of one node) during one scheduler
// round go out in ONE kOps message at the end of that round (runtime::Scheduler::at_round_end),
// and the node answers them in one reply. A message holds at most wire::kMaxOpsPerMessage
// operations and 64 KiB each way (a further operation starts the next message; gets whose
// replies would pass 64 KiB by the sizes the caller expects, too). At most max_in_flight
// messages per node are in flight; the others wait in their lane (and keep taking operations
// while there is room) until a reply frees the window. With coalesce off every operation is
// its own message, posted at once (for measuring what coalescing buys).
//
// Every message has a deadline (timeout_ns from its first operation): a message that times
// out or fails (dead node: kPeerFailed) fails each of its operations with that status, and a
// malformed reply fails them with kProtocolError. Replies are decoded in the completion
// callback, which fills each operation's OpSlot (reply, and a get's value) and posts its
// coroutine.
//
// Preconditions: a Lane outlives the operations submitted to it; the Coalescer outlives its
// lanes. Thread safety: the owning thread (the ThreadClient's) only.
#pragma once

#include <coroutine>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/status.h"
#include "farmem/fabric/completion.h"
#include "farmem/kv/codec.h"
#include "farmem/kv/wire.h"

namespace farmem::kv {

class Coalescer;
struct OpsMessage;
struct NodeWindow;

// One operation waiting for its reply, kept in the awaiting coroutine's frame.
struct OpSlot {
  wire::KvOp op = wire::KvOp::kGet;
  Status status;                 // the whole message failed (then `reply` is not set)
  wire::KvOpReply reply{};       // the operation's reply; reply.status is its own status
  std::string* value = nullptr;  // get: receives the value the reply carries
  std::coroutine_handle<> handle;
};

struct CoalescerOptions {
  bool coalesce = true;
  uint32_t max_in_flight = 8;              // kOps messages in flight per node, >= 1
  uint32_t max_ops = 64;                   // operations per message, 1..kMaxOpsPerMessage
  uint64_t timeout_ns = 5'000'000'000ull;  // deadline of a message, from its first operation
};

// The queue of one pool handle.
class Lane {
 public:
  // ep: the endpoint of the pool's node (null: every operation fails with kNotFound).
  Lane(Coalescer* owner, uint64_t pool, uint16_t node, fabric::Endpoint* ep);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  uint64_t pool() const { return pool_; }
  uint16_t node() const { return node_; }

 private:
  friend class Coalescer;
  Coalescer* owner_;
  uint64_t pool_;
  uint16_t node_;
  fabric::Endpoint* ep_;
  NodeWindow* window_;
  std::deque<OpsMessage*> queue_;  // not yet posted, oldest first; back() may take more
  bool listed_ = false;            // flushed at the end of this round
  bool blocked_ = false;           // waits for its node's window
};

class Coalescer {
 public:
  Coalescer(client::ThreadClient* client, const CoalescerOptions& options);
  ~Coalescer();
  Coalescer(const Coalescer&) = delete;
  Coalescer& operator=(const Coalescer&) = delete;

  class [[nodiscard]] Submit {
   public:
    bool await_ready() const { return false; }
    void await_suspend(std::coroutine_handle<> h);
    void await_resume() const {}

   private:
    friend class Coalescer;
    Coalescer* c;
    Lane* lane;
    OpSlot* slot;
    uint8_t flags;
    std::string_view key, value;
    size_t reply_value_hint;
  };
  // `co_await submit(...)` queues the operation slot->op (flags, key, value: a put's) on
  // `lane` and resumes when slot is filled. reply_value_hint: the value size a get expects
  // (for the 64 KiB reply budget; 0 if unknown). Key and value are copied when queued.
  Submit submit(Lane* lane, OpSlot* slot, uint8_t flags, std::string_view key,
                std::string_view value, size_t reply_value_hint = 0) {
    Submit s;
    s.c = this;
    s.lane = lane;
    s.slot = slot;
    s.flags = flags;
    s.key = key;
    s.value = value;
    s.reply_value_hint = reply_value_hint;
    return s;
  }

  const CoalescerOptions& options() const { return options_; }
  uint64_t messages() const { return messages_; }  // kOps messages posted
  uint64_t ops() const { return ops_; }            // operations in them
  size_t in_flight(uint16_t node) const;

 private:
  friend class Lane;
  void enqueue(Lane* lane, OpSlot* slot, uint8_t flags, std::string_view key,
               std::string_view value, size_t reply_value_hint);
  // Posts the lane's queued messages while its node's window has room.
  void pump(Lane* lane);
  void post(Lane* lane, OpsMessage* m);
  // Completes every operation of m with `why` and recycles m.
  void fail(OpsMessage* m, const Status& why);
  void finish(OpsMessage* m);
  void wake(OpsMessage* m);
  static void on_round_end(void* self);
  static void on_done(fabric::Completion* c);
  static void on_window(void* self);
  OpsMessage* take_message(Lane* lane);
  void recycle(OpsMessage* m);
  NodeWindow* window_for(uint16_t node);
  void forget(Lane* lane);

  client::ThreadClient* client_;
  CoalescerOptions options_;
  std::vector<std::unique_ptr<OpsMessage>> spare_;  // recycled messages
  std::vector<Lane*> flush_;                        // lanes with operations this round
  bool round_end_pending_ = false;
  bool window_pending_ = false;  // on_window deferred to the worker
  std::deque<NodeWindow> windows_;
  uint64_t messages_ = 0;
  uint64_t ops_ = 0;
};

}  // namespace farmem::kv
