// Reclaimer: deferred reuse of far-memory blocks a lock-free structure replaced or removed.
//
// A one-sided reader may still hold a pointer it read just before a writer unlinked the block,
// and read the block afterwards. Every remote step of every operation has a deadline, so the
// time for which such a stale pointer can still be acted on is bounded: a block retired now is
// reused only after `grace` has passed (longer than any operation can act on a pointer it
// read). Readers also validate what they fetch (checksums), so a late read of a reused block is
// detected, never trusted.
//
// retire() records the block (16 bytes of local memory) and, when the oldest record is due,
// frees the due ones to the ObjectHeap; beyond max_retired records a retiring coroutine sleeps
// until the oldest is due rather than grow. reclaim(true) waits for and frees everything.
// Blocks still waiting when the Reclaimer is dropped stay allocated to the structure's object
// until it is destroyed.
// Thread safety: the owning thread only (one per handle); coroutines of that thread may
// interleave (records are re-read after every suspension).
#pragma once

#include <cstdint>
#include <deque>

#include "farmem/client/thread_client.h"
#include "farmem/ds/common/object_heap.h"
#include "farmem/runtime/task.h"

namespace farmem::ds {

struct ReclaimerStats {
  uint64_t retired = 0;
  uint64_t reclaimed = 0;
  uint64_t waits = 0;  // retirements that slept because max_retired records were waiting
};

class Reclaimer {
 public:
  // kHeapBlock: handed out by the ObjectHeap (freed back to it); kNodeBlock: allocated from the
  // node directly (allocate_on), freed to the node.
  enum class Kind : uint8_t { kHeapBlock, kNodeBlock };
  Reclaimer(client::ThreadClient* c, ObjectHeap* heap, uint64_t grace_ns, size_t max_retired);

  // bytes < 2^31.
  runtime::Task<Status> retire(GlobalAddress addr, uint64_t bytes, Kind kind = Kind::kHeapBlock);
  // Frees every record whose grace has passed; with wait_for_all, sleeps until all are due.
  runtime::Task<void> reclaim(bool wait_for_all);
  size_t waiting() const { return retired_.size(); }
  uint64_t grace_ns() const { return grace_ns_; }
  const ReclaimerStats& stats() const { return stats_; }
  // The default grace for a client: 2 x op_timeout + 1 s (every remote step of an operation
  // has op_timeout; an operation acts on a pointer it read within about two steps).
  static uint64_t default_grace_ns(uint32_t op_timeout_ms);

 private:
  struct Retired {
    uint64_t addr;     // packed GlobalAddress
    uint32_t bytes;    // bit 31: a node block (Kind::kNodeBlock)
    uint32_t when_ms;  // now_ns() / 1e6, truncated: ages are compared modulo 2^32 ms
  };
  static constexpr uint32_t kNodeBlockBit = 1u << 31;
  static_assert(sizeof(Retired) == 16);
  static uint64_t age_ns(const Retired& r);

  client::ThreadClient* client_;
  ObjectHeap* heap_;
  uint64_t grace_ns_;
  size_t max_retired_;
  std::deque<Retired> retired_;
  ReclaimerStats stats_;
};

}  // namespace farmem::ds
