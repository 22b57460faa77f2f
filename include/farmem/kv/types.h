// Values the key-value client API (farmem::kv, kv/store.h and kv/pool.h) returns: pool
// listings, locks, find matches, ADO results, and the client's own counters.
// Thread safety: value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/kv/wire.h"

namespace farmem::kv {

// One pool of a node, as `Store::list_pools` reports it.
struct PoolListing {
  uint16_t node = 0;
  std::string name;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t count = 0;
  uint32_t open_handles = 0;
};

// A key locked with Pool::lock: its value's bytes [0, length) are at `address` (far memory),
// readable (read lock) or writable in place (write lock) with one-sided operations until
// Pool::unlock(lock). `token` names the lock on the node.
struct KeyLock {
  uint64_t token = 0;
  GlobalAddress address;
  uint64_t length = 0;
  uint64_t value_bytes = 0;
};

enum class LockMode : uint8_t { kRead = 1, kWrite = 2 };

// A match of Pool::find: the key and its position (rank in key order).
struct FindMatch {
  std::string key;
  uint64_t position = 0;
};

// What an Active Data Object invocation returned: the plugin's status and its responses.
struct AdoResponse {
  uint32_t layer = 0;  // plugin-defined tag
  std::string data;
};
struct AdoResult {
  int32_t plugin_status = 0;
  std::vector<AdoResponse> responses;
};

// Counters of one Store (one thread), cumulative.
struct StoreStats {
  uint64_t gets = 0, puts = 0, erases = 0;
  uint64_t get_round_trips = 0;   // one-sided reads, RPCs and locate steps taken by gets
  uint64_t one_sided_hits = 0;    // gets answered by one validated one-sided read
  uint64_t one_sided_misses = 0;  // gets that tried one-sidedly (or had no entry) and fell back
  uint64_t locates = 0;           // locate/release transfers (large values, ranges, locks)
  uint64_t ops_messages = 0;      // kOps messages sent
  uint64_t coalesced_ops = 0;     // operations in them
  uint64_t refetches = 0;         // gets re-asked alone after kReplyNeedsLocate
};

}  // namespace farmem::kv
