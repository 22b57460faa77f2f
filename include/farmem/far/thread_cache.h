// ThreadCache: one thread's part of the far-object cache: its entries, its log-structured
// local segments (taken from the ObjectManager's pool), its scopes' epochs, fetches, prefetches and
// its evacuator.
//
// Objects live in segments filled in log order (bump allocation, 16-byte slot header +
// bytes). When the pool's free segments fall below the low threshold, an evacuator coroutine
// runs on this thread, concurrently with the thread's other coroutines: it takes this
// thread's oldest segments, writes back dirty cold objects (batched), copies hot ones into a
// fresh segment (compaction), drops the rest (absent), and returns emptied segments to the
// pool, until the high threshold is free again.
//
// Scope epochs (the pinning protocol; docs/modules/far.md "Pinning by scope epochs"): every
// DerefScope records the cache epoch at its entry; every dereference stores the current epoch into
// the object's stamp. An object may be referenced by a live scope only if its stamp >= the epoch of
// the oldest live scope; the evacuator moves or drops only objects stamped before that, and bumps
// the epoch at the start of each round. Its decisions and moves happen without suspending;
// write-backs suspend, so it re-checks each object after them (a write during the write-back sets
// kDirty again and keeps the object).
//
// Fetches read the far copy with one one-sided read straight into the object's slot. A fetch
// or a scope that finds no local space waits (the evacuator frees some) up to space_wait_ms,
// then fails with kResourceExhausted; a failed read fails the fetch with its Status.
// Thread safety: the owning thread only; destroy it outside this thread's coroutines, after
// they stopped using its objects (it drives the scheduler until its own background
// coroutines finish).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/check.h"
#include "farmem/far/entry.h"
#include "farmem/far/object_manager.h"
#include "farmem/runtime/task.h"

namespace farmem::far {

struct CacheStats {
  uint64_t allocations = 0;
  uint64_t fetches = 0;  // fetches that read the far copy (misses)
  uint64_t fetch_bytes = 0;
  uint64_t zero_fills = 0;  // fetches of never-written objects (no read)
  uint64_t prefetches = 0;  // background fetches started
  uint64_t writebacks = 0;
  uint64_t writeback_bytes = 0;
  uint64_t evicted = 0;    // objects dropped (made absent)
  uint64_t compacted = 0;  // hot objects copied into a fresh segment
  uint64_t evacuation_rounds = 0;
  uint64_t segments_freed = 0;
  uint64_t space_waits = 0;  // allocations, fetches and scopes that waited for space
  uint64_t remote_frees = 0;
  uint64_t rpc_bytes = 0;  // request + reply bytes of remote-compute calls (containers)
};

class ThreadCache {
 public:
  ThreadCache(ObjectManager* manager, client::ThreadClient* client);
  ~ThreadCache();
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  // ---- objects ----
  // A new object of `bytes` (1..max_object_bytes()): far memory allocated now (reused from
  // freed objects), zero bytes, present and dirty locally. One reference.
  runtime::Task<Result<Entry*>> allocate(uint32_t bytes, bool non_temporal = false);
  // An entry for far memory the caller manages (a container's extent): absent; zero_fill means
  // the far copy was never written and reads as zeros. One reference.
  Entry* adopt(GlobalAddress remote, uint32_t bytes, bool zero_fill, bool non_temporal = false);
  void add_ref(Entry* e) { ++e->refs; }
  // Drops a reference; the last one frees the object (local slot now, far memory it owns at the
  // next allocate() or reclaim()).
  void release(Entry* e);
  // Performs the queued far-memory frees.
  runtime::Task<Status> reclaim();
  // Queues far memory from ThreadClient::allocate(bytes) for the next reclaim().
  void queue_free(GlobalAddress addr, uint32_t bytes) { pending_frees_.push_back({addr, bytes}); }

  // Makes e present (the slow path of a dereference): joins a fetch in flight, or waits for
  // space and reads the far copy into a new slot. On success e->local is set and stamped.
  runtime::Task<Status> fetch(Entry* e);
  // Starts a background fetch of e if it is absent, not being fetched, and space allows
  // without evacuating; false if it did not.
  bool prefetch(Entry* e);
  // Writes e back if dirty (it stays present, clean).
  runtime::Task<Status> flush(Entry* e);
  // Writes back every dirty object (remote compute reads far copies).
  runtime::Task<Status> flush_all();
  // Writes back those of `entries` that are present and dirty (batched).
  runtime::Task<Status> flush_entries(std::vector<Entry*> entries);
  // Drops e's local copy (written back first if dirty) unless a live scope may reference it:
  // for containers whose far copy was just rewritten by remote compute.
  runtime::Task<Status> invalidate(Entry* e);
  // Smoothed latency of recent misses (sampled), for prefetch windows.
  uint64_t miss_latency_ns() const { return miss_latency_ns_; }
  // Writes back and drops every object no live scope may reference; returns how many stay.
  runtime::Task<Result<uint64_t>> evict_all();

  // ---- scopes (DerefScope) ----
  uint64_t epoch() const { return epoch_; }
  // Each scope gets an epoch of its own (up to kMaxLiveEpochs outstanding, then new scopes
  // share the newest), so an object dereferenced before a scope began is never pinned by it.
  uint64_t scope_enter() {
    if (pool_.free_segments() < low_) kick_evacuator();
    if (live_.size() < kMaxLiveEpochs) {
      ++epoch_;
      live_.push_back(0);
    }
    ++live_.back();
    ++live_scopes_;
    return epoch_;
  }
  void scope_exit(uint64_t epoch) {
    FARMEM_ASSERT(epoch >= live_base_ && live_[epoch - live_base_] > 0 && live_scopes_ > 0,
                  "far: a scope exits that did not enter");
    --live_[epoch - live_base_];
    --live_scopes_;
    while (live_.size() > 1 && live_.front() == 0) {
      live_.pop_front();
      ++live_base_;
    }
  }
  static constexpr size_t kMaxLiveEpochs = 1 << 16;
  // Whether a new scope may enter now (enough free space, or no scope of this thread live).
  bool admits() const { return live_scopes_ == 0 || pool_.free_segments() >= admit_; }
  // Waits until admits() (kResourceExhausted after space_wait_ms).
  runtime::Task<Status> wait_admission();
  uint32_t live_scopes() const { return live_scopes_; }
  // The epoch of the oldest live scope (UINT64_MAX when none).
  uint64_t oldest_live_epoch() const;

  // ---- plumbing ----
  client::ThreadClient* client() const { return client_; }
  ObjectManager& manager() const { return *manager_; }
  uint64_t max_object_bytes() const { return max_object_; }
  const CacheStats& stats() const { return stats_; }
  CacheStats& mutable_stats() { return stats_; }
  // Segments this thread holds (being filled, sealed, compaction target).
  uint64_t segments_held() const;
  // Entries referenced by far pointers.
  uint64_t live_entries() const { return live_entries_; }
  // Starts an evacuation round unless one runs or enough is free.
  void kick_evacuator();
  // For a thread that stops using far objects for a while but keeps running its scheduler:
  // call it from the thread's loop so its cache gives memory back when another tenant of a
  // shared budget is short (or free space is low): drops the pool's warm segments and starts
  // the evacuator. Never suspends; the evacuation runs as a coroutine of this thread. Returns
  // whether an evacuation runs.
  bool relieve_pressure();
  bool evacuating() const { return evacuating_; }
  // The first write-back error the evacuator met (it keeps such objects).
  const Status& evacuation_error() const { return evacuation_error_; }

 private:
  struct Segment {
    uint8_t* base = nullptr;
    uint64_t used = 0;
    bool nt = false;
  };
  enum class SegmentOutcome { kFreed, kBusy };

  Entry* new_entry();
  void recycle(Entry* e);
  void finish_free(Entry* e);
  // Whether a live scope may hold a pointer into the local object (stamped at or after the
  // oldest live scope's epoch); absent objects are never pinned.
  static bool pinned(const Entry* e, uint64_t oldest_live) {
    return e->local != nullptr && stamp_of(header_of(e->local)) >= oldest_live;
  }
  // A slot for `bytes` in the current (or NT) segment; null when no segment is free.
  uint8_t* try_slot(Entry* e, uint32_t bytes, bool nt, uint32_t state);
  // Waits for a slot (kicking the evacuator).
  runtime::Task<Result<uint8_t*>> slot(Entry* e, uint32_t bytes, bool nt, uint32_t state);
  uint8_t* compact_slot(Entry* e, uint32_t bytes);
  void seal(Segment* s);
  uint64_t wait_deadline() const;
  runtime::Task<void> evacuator();
  runtime::Task<SegmentOutcome> evacuate_segment(Segment seg, uint64_t hot_since);
  runtime::Task<Status> write_back(std::vector<Entry*>* entries);
  runtime::Task<void> prefetch_task(Entry* e);

  ObjectManager* manager_;
  SegmentPool& pool_;
  client::ThreadClient* client_;
  uint32_t low_, high_, admit_;
  uint64_t max_object_;
  uint64_t space_wait_ns_;

  uint64_t epoch_ = 1;
  std::deque<uint32_t> live_;  // live scopes by epoch, from live_base_
  uint64_t live_base_ = 1;
  uint32_t live_scopes_ = 0;

  Segment current_, current_nt_, compact_;
  std::deque<Segment> sealed_;  // oldest first
  bool evacuating_ = false;
  uint64_t last_round_epoch_ = 0;
  Status evacuation_error_;
  uint32_t prefetch_inflight_ = 0;
  uint64_t miss_latency_ns_ = 0;
  uint64_t pressure_seen_ = 0;  // the shared budget's others_pressure() last acted on

  std::vector<std::unique_ptr<Entry[], void (*)(Entry*)>> entry_chunks_;
  Entry* free_entries_ = nullptr;
  uint64_t live_entries_ = 0;
  struct PendingFree {
    GlobalAddress addr;
    uint32_t bytes;
  };
  std::vector<PendingFree> pending_frees_;
  CacheStats stats_;
};

}  // namespace farmem::far
