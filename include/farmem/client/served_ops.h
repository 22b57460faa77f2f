// ServedOps: one-sided operations to one memory node carried as kMemOps RPCs, which the node
// performs on its region (docs/formats/memops.md). Used where UCX would emulate one-sided
// operations with messages anyway (TCP): a whole Batch to a node then costs one round trip,
// and an operation whose deadline passes simply stops waiting (a late reply is dropped), so a
// timeout never needs to close the connection.
//
// Usage: add operations (large reads and writes are split into wire::kMaxMemOpBytes pieces and
// the operations packed into messages within the RPC limits, in program order), post() them
// with one Completion, and after it completes call finish() to copy the replies into the
// destinations. At most kWindow messages are in flight at once (the node bounds what one
// session may queue); the next ones are posted as earlier ones complete, from the worker's
// deferred work (never inside a UCX callback). After a failed message the rest are not sent. The
// node performs each message's operations in order, and the messages of one session in the order
// they were sent, so program order holds for the whole set. Buffers passed in (read destinations,
// CAS/FAA results) must stay valid until finish(); write sources are copied at once. Thread safety:
// the owning client thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "farmem/common/status.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/wire.h"

namespace farmem::client {

class ServedOps {
 public:
  explicit ServedOps(fabric::Endpoint* ep) : ep_(ep) {}
  ServedOps(const ServedOps&) = delete;
  ServedOps& operator=(const ServedOps&) = delete;
  ServedOps(ServedOps&&) = delete;  // messages point back at it while in flight
  ServedOps& operator=(ServedOps&&) = delete;
  static constexpr size_t kWindow = 16;

  fabric::Endpoint* endpoint() const { return ep_; }
  bool empty() const { return messages_.empty(); }
  // Offsets are region offsets, already checked by ThreadClient::resolve.
  void read(uint64_t offset, void* dst, size_t bytes);
  void write(uint64_t offset, const void* src, size_t bytes);
  void cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value);
  void faa(uint64_t offset, uint64_t add, uint64_t* old_value);
  // Makes the range durable as it is at this point of the set (split into pieces of at most
  // wire::kMaxMemOpPersistBytes); the message's reply waits until it is stable.
  void persist(uint64_t offset, uint64_t bytes);
  // Counts every message into `c` and posts the first kWindow; the rest follow as those
  // complete. A posting error is reported through `c` (and returned when it happens now).
  Status post(fabric::Completion* c, uint64_t deadline_ns);
  // After `c` completed: copies the results of every message whose reply arrived whole.
  void finish();

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
    uint32_t persist_bytes = 0;  // of its persists (wire::kMaxMemOpsPersistBytes)
    std::vector<uint8_t> reply;
    uint32_t reply_bytes = UINT32_MAX;  // set by the fabric when the reply arrives
    std::vector<Dest> dests;
    bool posted = false;
    fabric::Completion done;  // this message's send + reply
    ServedOps* owner = nullptr;
  };
  static void on_message_done(fabric::Completion* c);
  static void pump(void* self);
  // Posts messages while fewer than kWindow are in flight; fails the rest after an error.
  Status post_more();
  // The message the next operation goes into (a new one when it would not fit).
  Message& room_for(uint32_t request_bytes, uint32_t reply_bytes, uint32_t persist_bytes);
  void add(const wire::MemOp& op, const void* data, uint8_t* dst, uint32_t reply_bytes);

  fabric::Endpoint* ep_;
  fabric::Completion* outer_ = nullptr;
  uint64_t deadline_ns_ = 0;
  size_t next_ = 0;  // first message not yet posted
  size_t in_flight_ = 0;
  bool pump_scheduled_ = false;
  Status failed_;                 // first failure: stop posting
  std::deque<Message> messages_;  // stable addresses: the fabric writes reply_bytes
};

}  // namespace farmem::client
