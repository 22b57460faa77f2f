// Writing records (docs/formats/kv.md "Records"; the layout, the checksum and the reader's rule
// are farmem/kv/record.h, shared with the client library).
//
// The pool's worker is the only writer of headers. These helpers write a record in the order
// the format requires. They take raw pointers into the region and do no locking: the caller is
// the pool's worker thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "farmem/kv/record.h"
#include "farmem/kv/wire.h"

namespace farmem::kv::service {

using wire::KvRecordHeader;
using wire::KvRecordState;

// Atomic accesses to the state word (shared with one-sided readers in other processes).
uint64_t load_state(const uint8_t* record);
void store_state(uint8_t* record, uint64_t state);  // release: earlier writes land first
inline KvRecordState state_kind(uint64_t state) {
  return static_cast<KvRecordState>(state & wire::kRecordStateMask);
}

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

}  // namespace farmem::kv::service
