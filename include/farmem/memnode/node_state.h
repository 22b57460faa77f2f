// NodeState: what every worker thread and service of one memory node shares.
//
// The exported region, the heap (allocations with owners), named objects, named roots and the
// set of open sessions, all guarded by `mu` (control path only: the data path never takes it),
// plus counters. Ending a session releases everything it owned. On a durable node every change
// to heap, objects and roots is logged (log_locked) under `mu`, so that a checkpoint's snapshot,
// taken under `mu`, sits exactly between two records.
// Thread safety: fields marked (mu) under `mu`; counters are atomics; the rest is immutable
// after start-up.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "farmem/memnode/config.h"
#include "farmem/memnode/heap.h"
#include "farmem/memnode/node_record.h"
#include "farmem/memnode/object_table.h"
#include "farmem/memnode/procedure.h"
#include "farmem/memnode/root_table.h"

namespace farmem::storage {
class Journal;
}

namespace farmem::memnode {

struct NodeState {
  NodeState(const ServerConfig& c, uint64_t reserved_bytes)
      : config(c), heap(c.capacity_bytes, reserved_bytes) {}

  const ServerConfig config;
  uint8_t* region_base = nullptr;  // this process's mapping of the exported region
  uint64_t region_bytes = 0;
  std::string packed_rkey;  // what clients need to reach the region (door welcome)
  uint32_t worker_count = 0;
  uint64_t start_ns = 0;
  std::atomic<uint16_t> door_port{0};   // the door's bound port, once it listens (helper processes)
  storage::Journal* journal = nullptr;  // set before serving on a durable node, else null
  ProcedureTable procedures;            // the services' procedures; filled before serving
  uint64_t recovery_records = 0;        // what the last recovery replayed (stats)
  uint64_t recovery_dropped_records = 0;
  uint64_t recovery_us = 0;

  std::mutex mu;
  Heap heap;                              // (mu)
  ObjectTable objects;                    // (mu)
  RootTable roots;                        // (mu)
  std::unordered_set<uint64_t> sessions;  // (mu) open sessions

  std::atomic<bool> stopping{false};
  // Session ids: (boot << kBootShift) + n, so that a durable node's restarts never reuse an id
  // (lease locks in far memory hold them). boot is 0 on a volatile node.
  static constexpr int kBootShift = 32;
  uint64_t boot = 0;  // (mu)
  std::atomic<uint64_t> next_session{1};
  std::atomic<uint64_t> sessions_total{0};
  std::atomic<uint64_t> rpcs_served{0};
  std::atomic<uint64_t> rpcs_dropped{0};
  std::atomic<uint64_t> refused{0};

  // Destroys an object: frees its allocations and removes its roots. Requires mu held.
  Status destroy_object_locked(uint64_t id);
  // Logs a change (node_record.h: encode_record's fields) on a durable node and returns the LSN
  // its answer must wait for (journal.h: stable_lsn); 0 on a volatile node, which encodes
  // nothing. Requires mu held.
  Result<uint64_t> log_locked(NodeRecordKind kind, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                              std::string_view name = {}, uint8_t flags = 0);
  // Applies one change to the tables: what recovery replays and what handlers run after
  // logging. Requires mu held.
  Status apply_locked(const NodeRecord& r, std::string_view name);
  // log_locked, then apply_locked of the same record, which the caller has checked applies; the
  // LSN to wait for. Nothing changes when logging fails. Requires mu held.
  Result<uint64_t> commit_locked(NodeRecordKind kind, uint64_t a, uint64_t b = 0,
                                 std::string_view name = {}, uint8_t flags = 0);
  // Releases what `session` owned: its allocations and the ephemeral objects bound to it (a
  // kReleaseOwner record's change); returns how many of each. Requires mu held.
  std::pair<size_t, size_t> release_session_locked(uint64_t session);
  // Forgets a session and releases what it owned (allocations, ephemeral objects). Takes mu.
  void end_session(uint64_t session);
  bool session_open(uint64_t session);  // takes mu
};

}  // namespace farmem::memnode
