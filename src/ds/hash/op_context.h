// The state the steps of one HashTable operation share, passed by reference instead of being
// threaded through every call piece by piece (internal to src/ds/hash).
//
//   OpContext  one operation on one key: the key, its hash and shard, the KV block it
//              publishes if it writes one (NewBlock), and the round trips it waited on (get
//              reports them in HashStats::get_round_trips; the other operations do not). A
//              shard-level task (opening the table, recovering a split) uses one without a key.
//   Wait       one pass of retries (a lookup, or an insert's claim and settle): its backoff, and
//              since when it has waited on splits or pending rivals (kTimedOut past
//              split_wait_ms). A new pass starts a new Wait: an update whose CAS lost waits
//              afresh on its next lookup.
// Thread safety: the handle's thread; each object belongs to one operation (coroutine).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/ds/hash/hash_table.h"

namespace farmem::ds::hash {

// A KV block an insert, update or put publishes: encoded here, allocated on the key's shard.
struct HashTable::NewBlock {
  GlobalAddress addr;
  std::string bytes;
  bool written = false;    // in far memory (until then the next bucket read writes it along)
  bool published = false;  // a slot may have named it: retire it, never free it, if unused
};

struct HashTable::OpContext {
  OpContext(std::string_view k, const KeyHash& h, Shard& s) : key(k), kh(h), shard(s) {}
  // A shard-level task: no key.
  explicit OpContext(Shard& s) : kh{0, 0}, shard(s) {}
  OpContext(const OpContext&) = delete;
  OpContext& operator=(const OpContext&) = delete;

  std::string_view key;
  KeyHash kh;
  Shard& shard;
  NewBlock* block = nullptr;  // the block this operation publishes, if any
  uint32_t round_trips = 0;   // batches this operation waited on
  // An update, put or erase: its own persist makes what it replaces durable, so it may act on
  // an unsettled word of its key without settling it first (an erasing one it settles).
  bool overwrites = false;
};

struct HashTable::Wait {
  explicit Wait(client::ThreadClient& c) : backoff(c.backoff_policy(), c.scheduler()) {}
  runtime::Backoff backoff;
  uint64_t since_ns = 0;    // when the pass began waiting (0: it has not)
  uint64_t checked_ns = 0;  // when it last checked the holders of what it waits on
};

}  // namespace farmem::ds::hash
