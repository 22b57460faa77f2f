// Checking a record read one-sidedly (docs/formats/kv.md "Records"): the rule that makes the
// key-value store's one-sided gets safe against concurrent puts, erases and memory reuse.
//
// A copy of `32 + key + value` bytes of a record is accepted only if its state word is
// (version << 8) | live for the version the caller expects (the one its location cache
// holds), the header's version and sizes agree with that, the checksum (XXH3-64, seed 0, of
// header bytes [8, 24) || key || value) matches, and the key equals the caller's key. Anything
// else (a record being written, locked, dead or reused, a torn copy) is a miss, and the caller
// asks the node instead. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "farmem/kv/wire.h"

namespace farmem::kv {

// The record checksum of kv.md: XXH3-64 of the header's bytes [8, 24) (version, key_bytes,
// value_bytes), then key, then value.
uint64_t record_checksum(const wire::KvRecordHeader& header, std::string_view key,
                         std::string_view value);

// Bytes a record of this key and value occupies before alignment (header + key + value).
inline constexpr uint64_t record_bytes(uint64_t key_bytes, uint64_t value_bytes) {
  return sizeof(wire::KvRecordHeader) + key_bytes + value_bytes;
}

// Checks a copy of a record (`bytes` bytes at `copy`, the whole record) as described above,
// for `key` at `version`. On success returns the offset of the value in `copy` and sets
// *value_bytes; on failure returns 0 (a value never starts at 0). The check computes the
// checksum in place: it overwrites copy[16, 32) (the header's version, sizes and checksum),
// so the copy's header is no longer usable afterwards.
size_t check_record_copy(uint8_t* copy, size_t bytes, std::string_view key, uint64_t version,
                         uint64_t* value_bytes);

}  // namespace farmem::kv
