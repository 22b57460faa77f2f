// Records: how a stored value lives in the region (docs/formats/kv.md "Records").
//
//   [KvRecordHeader 32 B][key][value], 64-byte aligned, state = (version << 8) | KvRecordState.
//
// The pool's worker is the only writer of headers. These helpers write a record in the order
// the format requires and check one (the server's own check, and the one-sided reader's rule
// applied to a copy). They take raw pointers into the region and do no locking: the caller is
// the pool's worker thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "farmem/kv/wire.h"

namespace farmem::kv::service {

using wire::KvRecordHeader;
using wire::KvRecordState;

// Bytes a record of this key and value takes (64-byte units).
inline uint64_t record_bytes(uint64_t key_bytes, uint64_t value_bytes) {
  const uint64_t n = sizeof(KvRecordHeader) + key_bytes + value_bytes;
  return (n + wire::kRecordAlign - 1) & ~(wire::kRecordAlign - 1);
}

// XXH3-64 (seed 0) of header bytes [8, 24) (version, key_bytes, value_bytes), key and value.
uint64_t record_checksum(uint64_t version, uint32_t key_bytes, uint32_t value_bytes,
                         const void* key, const void* value);

// Atomic accesses to the state word (shared with one-sided readers in other processes).
uint64_t load_state(const uint8_t* record);
void store_state(uint8_t* record, uint64_t state);  // release: earlier writes land first
inline KvRecordState state_kind(uint64_t state) { return static_cast<KvRecordState>(state & 0xFF); }

// Step 1 of a new record: state `writing` (version v), then header, key and (if `value` is not
// null) value and checksum. A null value leaves the value bytes zeroed for a writer to fill
// (kPutNew); seal() then computes the checksum.
void write_record(uint8_t* record, uint64_t version, std::string_view key, const void* value,
                  uint32_t value_bytes);
// Recomputes the checksum of a record whose value was written in place (or by a kPutNew
// writer), under `version`, and leaves the state as it was (the caller publishes with
// store_state). The lengths are the server's own (the header in the region may have been
// overwritten by a client) and are written back with the version and checksum; the caller
// guarantees the record's extent is inside the region.
void seal(uint8_t* record, uint64_t version, uint32_t key_bytes, uint32_t value_bytes);

// The one-sided reader's rule on a copy of `bytes` bytes: state == (version << 8) | live,
// lengths fit the copy, the checksum matches and the key equals `key`.
bool record_valid(const uint8_t* copy, uint64_t bytes, std::string_view key);

}  // namespace farmem::kv::service
