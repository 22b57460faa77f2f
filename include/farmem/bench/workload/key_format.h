// Key formatting: the fixed-length byte key of YCSB key index i.
//
// Format (key_bytes >= 8): bytes [0, 8) are the little-endian encoding of scramble_index(i), a
// bijective 64-bit mix (murmur3's fmix64 of i + 0x9E3779B97F4A7C15), so keys of consecutive
// indices are unrelated and distinct indices give distinct keys; bytes [8, key_bytes) are zero.
// No index below 2^62 gets an all-zero key (some hash tables reserve key 0 for empty slots). Keys
// are binary (they may contain any byte, including 0); compare them with memcmp over key_bytes.
// key_index() inverts the format, so a scan's returned keys can be mapped back to indices.
//
// Precondition: key_bytes >= kMinKeyBytes (8), and `out` holds key_bytes bytes. Shorter keys
// cannot be unique over 2^64 indices: debug builds assert, release builds write the first
// key_bytes bytes of the format (validate_key_bytes() lets a driver reject such sizes up
// front). Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "farmem/common/status.h"

namespace farmem::bench::workload {

inline constexpr size_t kMinKeyBytes = 8;

// Bijective 64-bit mix of a key index, and its inverse.
uint64_t scramble_index(uint64_t index);
uint64_t unscramble_index(uint64_t scrambled);

// Writes the key_bytes-byte key of `index` to out.
void format_key(uint64_t index, size_t key_bytes, char* out);
// The same key as a string (allocates; for tests and set-up paths).
std::string make_key(uint64_t index, size_t key_bytes);
// The index whose key starts with these 8 bytes. Precondition: key holds >= 8 bytes.
uint64_t key_index(const char* key);
// kInvalidArgument when key_bytes < kMinKeyBytes.
Status validate_key_bytes(size_t key_bytes);

}  // namespace farmem::bench::workload
