// Records: how a stored value lives in the exported region (docs/formats/kv.md "Records"), and
// the rule that accepts a copy of one. Shared by the memory node's kv service (which writes
// records: src/kv/service/record.h) and the client library (which reads them one-sidedly), so
// that both compute the checksum and apply the rule the same way. Library farmem_kv_common
// (depends on common and xxhash only).
//
//   [KvRecordHeader 32 B][key][value], 64-byte aligned, state = (version << 8) | KvRecordState,
//   checksum = XXH3-64 (seed 0) of header bytes [8, 24) (version, key_bytes, value_bytes) ||
//   key || value.
//
// A copy of `32 + key + value` bytes is accepted only if its state word is (version << 8) |
// live for the version the caller expects (the one its location cache holds), the header's
// version and lengths agree with that and with the copy, the checksum matches, and the key
// equals the caller's key. Anything else (a record being written, locked, dead or reused, a
// torn copy) is a miss, and the caller asks the node instead. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "farmem/kv/wire.h"

namespace farmem::kv {

// Bytes of a record of this key and value: header + key + value (KvOpReply.record_bytes).
inline constexpr uint64_t record_bytes(uint64_t key_bytes, uint64_t value_bytes) {
  return sizeof(wire::KvRecordHeader) + key_bytes + value_bytes;
}
// The memory a record takes: record_bytes rounded up to wire::kRecordAlign (64 B).
inline constexpr uint64_t record_alloc_bytes(uint64_t key_bytes, uint64_t value_bytes) {
  return (record_bytes(key_bytes, value_bytes) + wire::kRecordAlign - 1) &
         ~(wire::kRecordAlign - 1);
}

// The record checksum: XXH3-64 (seed 0) of (version, key_bytes, value_bytes) as the header
// stores them, then `key_bytes` of key, then `value_bytes` of value.
uint64_t record_checksum(uint64_t version, uint32_t key_bytes, uint32_t value_bytes,
                         const void* key, const void* value);

// Checks a copy of a record (`bytes` bytes at `copy`, exactly record_bytes of it) by the rule
// above, for `key` at `version`. On success returns the offset of the value in `copy` and sets
// *value_bytes; on failure returns 0 (a value never starts at 0). The check computes the
// checksum in place (one hash over contiguous bytes): it overwrites copy[16, 32) (the header's
// version, lengths and checksum), so the copy's header is no longer usable afterwards.
size_t check_record_copy(uint8_t* copy, size_t bytes, std::string_view key, uint64_t version,
                         uint64_t* value_bytes);

// The same rule for a record whose version the caller does not know (the one its header
// names), on `bytes` >= record_bytes bytes at `record`, which stay untouched (it checks a
// private copy). For tests and dumps; readers that cache locations use check_record_copy.
bool record_valid(const uint8_t* record, uint64_t bytes, std::string_view key);

}  // namespace farmem::kv
