// ServedOps: a set of one-sided operations to one memory node that the node performs (kMemOps,
// docs/formats/memops.md), posted together and awaited through one Completion. Used where UCX
// would emulate one-sided operations with messages anyway (TCP), and for persists.
//
// Usage: add operations, then post() them: they go, in program order, into
// the thread's ServedLane for the node, which packs the operations of every set posted in one
// scheduler round into as few messages as the limits allow and posts them at the end of the round
// (served_lane.h: window, deadlines, failures). When the Completion completes, read results and
// CAS/FAA old values are in their destinations. Buffers passed in (read destinations, CAS/FAA
// results) must stay valid until then; write sources are copied at once. A set is posted once.
// Thread safety: the owning client thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/served_lane.h"
#include "farmem/common/status.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/wire.h"

namespace farmem::client {

class ServedOps {
 public:
  explicit ServedOps(ServedLane* lane) : lane_(lane) {}
  ServedOps(const ServedOps&) = delete;
  ServedOps& operator=(const ServedOps&) = delete;

  fabric::Endpoint* endpoint() const { return lane_->endpoint(); }
  bool empty() const { return ops_.empty(); }
  // Offsets are region offsets, already checked by ThreadClient::resolve.
  void read(uint64_t offset, void* dst, size_t bytes);
  void write(uint64_t offset, const void* src, size_t bytes);
  void cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value);
  void faa(uint64_t offset, uint64_t add, uint64_t* old_value);
  // Makes the range durable as it is at this point of the set; the reply of the message that
  // carries it waits until it is stable.
  void persist(uint64_t offset, uint64_t bytes);
  // Runs a node procedure (ServedLane::call); args are copied at once.
  void call(uint16_t procedure, const void* args, size_t bytes, void* reply, size_t reply_bytes);
  // Hands every operation to the lane, counted into `c` (deadline_ns: absolute, 0 = the
  // endpoint's default). Errors reach `c`.
  void post(fabric::Completion* c, uint64_t deadline_ns);

 private:
  // One recorded call, replayed into the lane (which splits large ones) by post().
  struct Op {
    wire::MemOpKind kind;
    uint64_t offset;
    uint64_t bytes;
    uint64_t operand0;  // CAS: expected; FAA: addend; call: procedure
    uint64_t operand1;  // CAS: desired; call: reply slot bytes
    void* dst;          // read destination, old value or call reply
    size_t data_at;     // a write's or call's bytes in data_
  };

  ServedLane* lane_;
  std::vector<Op> ops_;
  std::string data_;  // write data, copied when added
};

}  // namespace farmem::client
