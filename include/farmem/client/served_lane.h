// ServedLane: one thread's coalescing queue of served one-sided operations to one memory node.
//
// Every read, write, CAS, FAA and persist that the coroutines of a thread post to a served node
// (ServedOps: single operations and whole Batches) during one scheduler round is appended to the
// lane's open kMemOps message; at the end of the round (runtime::Scheduler::at_round_end, through
// ThreadClient) the lane posts its messages, so the operations of a round cost one round trip
// and the node answers them in one reply (docs/formats/memops.md). A message holds at most
// wire::kMaxMemOpsPerMessage operations, 64 KiB each way and kMaxMemOpsPersistBytes of persists;
// a further operation opens the next message. At most `window` messages are in flight; the
// others wait in the lane (the last one still taking operations) until a reply frees a slot,
// and are posted at the end of the round that reply arrives in.
//
// Each operation set (the operations one Completion waits for) is added back to back; a run of
// one set's operations within one message is a part, and the set's Completion counts one per
// part. When a reply arrives, each part's results are copied into its destinations (read
// buffers, CAS/FAA old values) and the part completes; a failed or timed-out message completes
// each of its parts with that status and copies nothing (a late reply is dropped by the fabric).
// After a failure, the messages still waiting in the lane fail with the same status (they are
// not sent: program order says a later operation of a set must not run after an earlier one
// failed). A message's deadline is its first part's; a part whose deadline is earlier, or more
// than kDeadlineSlackNs later, opens a new message, so no operation waits past its deadline or
// fails much before it.
//
// Program order: messages are posted in the order they were opened and the node performs the
// messages of a session in order, each in order, so a thread's operations to a node are performed
// in the order they were added. Preconditions: destinations stay valid until their Completion
// completes; write data is copied when added. Thread safety: the owning thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "farmem/common/status.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/wire.h"

namespace farmem::client {

class ServedLane {
 public:
  static constexpr uint64_t kDeadlineSlackNs = 1'000'000;  // 1 ms
  // on_ready(arg, lane): the lane has messages to post at the end of this round; called once
  // until flush() ran.
  using ReadyFn = void (*)(void* arg, ServedLane* lane);
  ServedLane(fabric::Endpoint* ep, uint32_t window, ReadyFn on_ready, void* arg);
  ~ServedLane();
  ServedLane(const ServedLane&) = delete;
  ServedLane& operator=(const ServedLane&) = delete;

  fabric::Endpoint* endpoint() const { return ep_; }
  // The set an operation belongs to: `outer` counts one per message the set has operations in;
  // deadline_ns: absolute, 0 = the endpoint's default from posting.
  struct Set {
    fabric::Completion* outer;
    uint64_t deadline_ns;
  };
  // Each appends an operation of `set` (offsets already checked by ThreadClient::resolve); reads
  // and writes larger than wire::kMaxMemOpBytes, and persists larger than kMaxMemOpPersistBytes,
  // become several. Read destinations and CAS/FAA results must stay valid until the set
  // completes; write data is copied now.
  void read(uint64_t offset, void* dst, size_t bytes, const Set& set);
  void write(uint64_t offset, const void* src, size_t bytes, const Set& set);
  void cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value,
           const Set& set);
  void faa(uint64_t offset, uint64_t add, uint64_t* old_value, const Set& set);
  void persist(uint64_t offset, uint64_t bytes, const Set& set);
  // Runs the node's procedure `procedure` on `args` (1..kMaxMemOpBytes bytes, copied now); its
  // reply slot (reply_bytes: a multiple of 8, kMinCallReplyBytes..kMaxCallReplyBytes:
  // wire::CallReplyHeader and result) is copied into `reply` (8-byte aligned).
  void call(uint16_t procedure, const void* args, size_t bytes, void* reply, size_t reply_bytes,
            const Set& set);
  // Posts waiting messages while fewer than `window` are in flight (ThreadClient calls it at the
  // end of the round). A posting error completes that message's parts with it.
  void flush();
  size_t in_flight() const { return in_flight_; }
  size_t waiting() const { return queue_.size(); }
  uint64_t messages_posted() const { return messages_posted_; }
  uint64_t ops_posted() const { return ops_posted_; }

 private:
  struct Dest {
    uint8_t* dst;
    uint32_t bytes;
    uint32_t reply_at;
  };
  struct Message {
    std::string request;  // MemOpsHeader + operations
    uint32_t count = 0;
    uint32_t reply_expected = 0;
    uint32_t persist_bytes = 0;
    uint64_t deadline_ns = 0;
    std::vector<uint8_t> reply;
    uint32_t reply_bytes = UINT32_MAX;  // set by the fabric when the reply arrives
    std::vector<Dest> dests;
    std::vector<fabric::Completion*> parts;  // of the sets with operations here, in order
    fabric::Completion done;
    ServedLane* owner = nullptr;
  };
  // Appends one operation. data: a write's or call's bytes; dst: where a read's bytes or an old
  // value go.
  void add(const wire::MemOp& op, const void* data, uint8_t* dst, const Set& set);
  // The waiting message the operation goes into (a new one when it would not fit).
  Message& room_for(uint32_t request_bytes, uint32_t reply_bytes, uint32_t persist_bytes,
                    uint64_t deadline_ns);
  bool fits(const Message& m, uint32_t request_bytes, uint32_t reply_bytes, uint32_t persist_bytes,
            uint64_t deadline_ns) const;
  Message* take_message();
  void post(Message* m);
  // Completes every part of m (copying results when the reply arrived whole) and recycles m.
  void finish(Message* m, const Status& s);
  static void on_message_done(fabric::Completion* c);
  void mark_ready();

  fabric::Endpoint* ep_;
  uint32_t window_;
  ReadyFn on_ready_;
  void* arg_;
  bool ready_ = false;  // on_ready_ called, flush() not yet
  size_t in_flight_ = 0;
  Status failed_;                              // fails the waiting messages at the next flush
  std::deque<Message*> queue_;                 // waiting, oldest first; back() takes more
  std::vector<std::unique_ptr<Message>> all_;  // owns every message
  std::vector<Message*> free_;                 // recycled
  uint64_t messages_posted_ = 0;
  uint64_t ops_posted_ = 0;
};

}  // namespace farmem::client
