#include "farmem/kv/record_view.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <cstring>

namespace farmem::kv {

uint64_t record_checksum(const wire::KvRecordHeader& header, std::string_view key,
                         std::string_view value) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, reinterpret_cast<const uint8_t*>(&header) + 8, 16);
  XXH3_64bits_update(&state, key.data(), key.size());
  XXH3_64bits_update(&state, value.data(), value.size());
  return XXH3_64bits_digest(&state);
}

size_t check_record_copy(uint8_t* copy, size_t bytes, std::string_view key, uint64_t version,
                         uint64_t* value_bytes) {
  constexpr size_t kHeader = sizeof(wire::KvRecordHeader);
  if (bytes < kHeader + key.size()) return 0;
  wire::KvRecordHeader h;
  std::memcpy(&h, copy, kHeader);
  if (h.state != wire::record_state(version, wire::kRecordLive) || h.version != version ||
      h.key_bytes != key.size() || uint64_t{kHeader} + h.key_bytes + h.value_bytes != bytes) {
    return 0;
  }
  // [8, 24) || key || value, made contiguous by moving the 16 bytes over the checksum field.
  std::memmove(copy + 16, copy + 8, 16);
  if (XXH3_64bits(copy + 16, bytes - 16) != h.checksum) return 0;
  if (std::memcmp(copy + kHeader, key.data(), key.size()) != 0) return 0;
  *value_bytes = h.value_bytes;
  return kHeader + key.size();
}

}  // namespace farmem::kv
