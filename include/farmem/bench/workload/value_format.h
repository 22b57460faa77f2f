// Value formatting: deterministic value bytes for (key index, version), verifiable after a read.
//
// Format: for value_bytes >= kValueHeaderBytes (16), bytes [0, 8) hold the key index and [8, 16)
// the version, both little-endian, followed by filler; shorter values are filler only. The
// filler is the splitmix64 stream seeded from (index, version), written as little-endian 64-bit
// words and truncated to the value length. So every byte depends on both index and version, a
// reader can recover which version it saw (read_value_header), and check_value detects torn,
// stale or misdirected values. Values shorter than 8 bytes carry too few bits to tell all
// (index, version) pairs apart; the tests use >= 8.
//
// Preconditions: `out` / `value` hold value_bytes bytes (value_bytes may be 0). Thread safety:
// pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace farmem::bench::workload {

inline constexpr size_t kValueHeaderBytes = 16;

// Writes the value of (index, version) to out[0, value_bytes).
void fill_value(uint64_t index, uint64_t version, size_t value_bytes, char* out);
// Whether value[0, value_bytes) is exactly what fill_value(index, version, value_bytes) writes.
bool check_value(uint64_t index, uint64_t version, size_t value_bytes, const char* value);
// Decodes the header of a value of value_bytes >= kValueHeaderBytes; false (outputs untouched)
// when the value is shorter. Does not verify the filler: use check_value with the result.
bool read_value_header(const char* value, size_t value_bytes, uint64_t* index, uint64_t* version);

}  // namespace farmem::bench::workload
