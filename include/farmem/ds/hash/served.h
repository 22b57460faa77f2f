// The hash table's served procedures (docs/formats/hash_table/served.md): over transports where
// every one-sided operation is a message the node serves anyway (TCP), a get, update or insert runs
// its dependent steps (read both combined buckets, read the blocks their slots name, compare the
// key, swing the slot by CAS) on the node inside one kCall of the thread's kMemOps message
// (memnode/procedure.h), instead of two or more round trips and, under contention, CAS retries
// across the network. The node runs the same checks a client runs (bucket suffixes, frozen slots,
// checksums, keys); whatever it cannot settle alone it answers with a fall-back outcome and the
// client takes the one-sided path, which handles every case. Shared by the client (ds/hash) and
// the node's library (ds/service.h). Thread safety: constants and plain structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace farmem::ds::hash {

// Procedure ids (the hash table's range is 16..31, docs/formats/memops.md "Calls").
inline constexpr uint16_t kProcHashGet = 16;
inline constexpr uint16_t kProcHashUpdate = 17;
inline constexpr uint16_t kProcHashInsert = 18;

// What a procedure found. kFound / kReplaced / kAbsent are answers; the rest send the client to
// the one-sided path (which refreshes its directory, waits for splits, re-reads torn blocks,
// settles unstable slots and reads large values).
enum class ServedOutcome : uint32_t {
  kAbsent = 0,     // no committed slot holds the key
  kFound = 1,      // get: the value follows the result
  kReplaced = 2,   // update: the slot now holds new_word; the old word and block are returned
  kStale = 3,      // a bucket belongs to another subtable (the client's directory is stale)
  kFrozen = 4,     // a split froze a slot of the buckets
  kTorn = 5,       // a block read mid-write, or a slot still settling (durable node)
  kTooLarge = 6,   // the value does not fit the reply slot (value_bytes says how long it is)
  kContended = 7,  // update: the slot kept changing under its CAS (kMaxServedCasAttempts)
  kRefused = 8,    // a write on a durable node (the client's path persists; this one does not)
  kInserted = 9,   // insert: a slot the node claimed and committed holds new_word
  kExists = 10,    // insert: a committed slot holds the key
  kFull = 11,      // insert: both combined buckets are full (the client splits the subtable)
};
inline constexpr uint32_t kLastServedOutcome = 11;
inline constexpr uint32_t kMaxServedCasAttempts = 4;

// Arguments of every hash procedure; the key follows (key_bytes bytes).
struct ServedLookupArgs {
  uint64_t bucket[2];  // region offsets of the key's two combined buckets (128 bytes each)
  uint64_t h1;         // the key's KeyHash::h1 (suffix bits; fingerprint in the top byte)
  uint64_t new_word;   // update, insert: the committed slot word naming the new block; get: 0
  uint32_t key_bytes;  // 1 .. kMaxKeyBytes, and the whole call within wire::kMaxMemOpBytes
  uint32_t reserved;   // 0
};
static_assert(sizeof(ServedLookupArgs) == 40);
static_assert(offsetof(ServedLookupArgs, new_word) == 24);
static_assert(std::is_trivially_copyable_v<ServedLookupArgs>);

// The result; a get's value follows when the outcome is kFound.
struct ServedLookupResult {
  uint32_t outcome;      // ServedOutcome
  uint32_t value_bytes;  // kFound, kTooLarge: the value's length
  uint64_t slot;         // kFound, kReplaced, kInserted: region offset of the key's slot
  uint64_t word;         // kFound: the slot's word; kReplaced: the word it replaced
  uint64_t block_bytes;  // kFound, kReplaced: size of the block that word names
};
static_assert(sizeof(ServedLookupResult) == 32);
static_assert(offsetof(ServedLookupResult, word) == 16);
static_assert(std::is_trivially_copyable_v<ServedLookupResult>);

}  // namespace farmem::ds::hash
