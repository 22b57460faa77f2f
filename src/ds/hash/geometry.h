// Geometry helpers the hash table's sources share (internal to src/ds/hash): the slot word naming
// a new block, a slot's address, a fresh subtable's image. Layouts themselves (and suffix masks)
// are in farmem/ds/hash/layout.h.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/common/check.h"
#include "farmem/ds/hash/hash_table.h"

namespace farmem::ds::hash {

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

inline GlobalAddress HashTable::slot_addr(const Buckets& b, const Match& m) {
  FARMEM_ASSERT(
      m.bucket >= 0 && m.bucket < 4 && m.slot >= 0 && m.slot < static_cast<int>(kSlotsPerBucket),
      "a slot index within the two combined buckets");
  return b.addr[m.bucket] + offsetof(Bucket, slots) + 8 * static_cast<uint64_t>(m.slot);
}

}  // namespace farmem::ds::hash
