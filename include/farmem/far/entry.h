// Entry: the local metadata of one far object (what a far pointer points to), and the header
// in front of each object's bytes in a local segment.
//
// A far pointer (UniquePtr, SharedPtr, a container's chunk) holds an Entry*. The entry says
// where the object's bytes are locally (`local`, null when absent), where its far copy is
// (`remote`), its size and state. Entries live in their ThreadCache's entry table and never
// move, so pointers to them stay valid while referenced.
//
// The deref fast path reads `local` (a UniquePtr reads its own copy, `mirror`), stores the
// cache's epoch into the stamp in the object's slot header, right in front of the bytes it is
// about to read (the stamp both marks the object hot for the CLOCK evacuator and tells it
// whether a live scope may hold a pointer into it; docs/modules/far.md "Pinning by scope epochs")
// and, for deref_mut, sets kDirty in the entry. A const dereference that hits touches no entry.
// Thread safety: the owning ThreadCache's thread only.
#pragma once

#include <cstdint>

#include "farmem/client/global_address.h"
#include "farmem/common/check.h"

namespace farmem::far {

enum EntryFlags : uint8_t {
  kDirty = 1,         // the local copy is newer than the far copy
  kFetching = 2,      // a fetch into a local slot is in flight
  kNonTemporal = 4,   // read-once data: fetched into NT segments, never compacted
  kOwnsRemote = 8,    // the far copy was allocated for this entry (freed with it)
  kZeroFill = 16,     // the far copy was never written: a fetch zero-fills locally
  kWriteback = 32,    // the evacuator is writing the local copy back
  kFreePending = 64,  // released while fetching or writing back: freed when that ends
  kDurable = 128,     // a named container's chunk on a durable node: write-backs are persisted
};

struct Entry {
  uint8_t* local = nullptr;  // the object's bytes in a segment (a live slot), or null when absent
  GlobalAddress remote;      // the far copy
  uint32_t bytes = 0;        // object size
  uint32_t refs = 0;         // far pointers referring to it (0: free)
  uint8_t flags = 0;
  Entry* next_free = nullptr;  // free list of the entry table
  // The owning UniquePtr's copy of `local` (null for shared and container entries): every
  // change of `local` is written there too (set_local), so that a UniquePtr dereference loads
  // the object's address from the pointer itself, as a plain pointer does, not from the entry.
  uint8_t** mirror = nullptr;
};

// Sets where e's bytes are locally (null: absent), in the entry and its owner's mirror.
inline void set_local(Entry* e, uint8_t* p) {
  e->local = p;
  if (e->mirror != nullptr) *e->mirror = p;
}

// In front of every object in a segment (16 bytes; objects are 16-byte aligned). A live or
// filling slot names its entry (whose `bytes` is the slot's size); a dead one keeps only its
// size. The stamp (the cache epoch at the object's last dereference) shares a word with the
// state, so that the fast path stamps a live slot with one store.
enum SlotState : uint32_t { kSlotLive = 1, kSlotFilling = 2, kSlotDead = 3 };
struct SlotHeader {
  uint64_t stamp_state;  // (stamp << 2) | SlotState
  union {
    Entry* entry;         // live and filling slots
    uint64_t dead_bytes;  // dead slots: the object size the slot had
  };
};
static_assert(sizeof(SlotHeader) == 16);

inline SlotHeader* header_of(uint8_t* data) { return reinterpret_cast<SlotHeader*>(data) - 1; }
inline uint32_t state_of(const SlotHeader* h) { return static_cast<uint32_t>(h->stamp_state & 3); }
inline uint64_t stamp_of(const SlotHeader* h) { return h->stamp_state >> 2; }
// Stamps the live slot in front of `data` with `epoch`.
inline void stamp_live(uint8_t* data, uint64_t epoch) {
  header_of(data)->stamp_state = (epoch << 2) | kSlotLive;
}
inline constexpr uint64_t slot_bytes(uint64_t object_bytes) {
  return sizeof(SlotHeader) + ((object_bytes + 15) & ~uint64_t{15});
}
// The bytes the slot at h takes in its segment (header included).
inline uint64_t slot_size(const SlotHeader* h) {
  return slot_bytes(state_of(h) == kSlotDead ? h->dead_bytes : h->entry->bytes);
}
// Marks a live or filling slot dead (its entry may be reused afterwards).
inline void kill_slot(SlotHeader* h) {
  FARMEM_ASSERT(state_of(h) != kSlotDead, "far: a dead slot killed again");
  h->dead_bytes = h->entry->bytes;
  h->stamp_state = kSlotDead;
}

}  // namespace farmem::far
