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
//
// Also the cheap geometry helpers the sources share (suffix masks, slot addresses, a fresh
// subtable's image).
// Thread safety: the handle's thread; each object belongs to one operation (coroutine).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/common/check.h"
#include "farmem/ds/hash/hash_table.h"

namespace farmem::ds::hash {

// The low `depth` bits: a subtable's suffix is kh.h1 & suffix_mask(local_depth).
inline uint64_t suffix_mask(uint32_t depth) { return depth >= 64 ? ~0ull : (1ull << depth) - 1; }

// A subtable with every bucket header set to {depth, suffix} and every slot empty.
std::string subtable_image(uint32_t main_log2, uint32_t depth, uint32_t suffix);

// The slot word naming a KV block of `bytes` at `block` for a key hashed to kh (pending: an
// insert's claim, not yet committed).
inline uint64_t block_slot_word(const KeyHash& kh, GlobalAddress block, uint64_t bytes,
                                bool pending) {
  const uint64_t word = make_slot(kh.fp(), len_units(bytes), block.offset(), pending);
  FARMEM_ASSERT(slot_offset(word) == block.offset() && bytes % kBlockUnit == 0 &&
                    slot_len_units(word) == len_units(bytes) && !slot_frozen(word),
                "a slot word names its 64-byte aligned block and encodes its length");
  return word;
}

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
};

struct HashTable::Wait {
  explicit Wait(client::ThreadClient& c) : backoff(c.backoff_policy(), c.scheduler()) {}
  runtime::Backoff backoff;
  uint64_t since_ns = 0;    // when the pass began waiting (0: it has not)
  uint64_t checked_ns = 0;  // when it last checked the holders of what it waits on
};

inline GlobalAddress HashTable::slot_addr(const Buckets& b, const Match& m) {
  FARMEM_ASSERT(
      m.bucket >= 0 && m.bucket < 4 && m.slot >= 0 && m.slot < static_cast<int>(kSlotsPerBucket),
      "a slot index within the two combined buckets");
  return b.addr[m.bucket] + offsetof(Bucket, slots) + 8 * static_cast<uint64_t>(m.slot);
}

}  // namespace farmem::ds::hash
