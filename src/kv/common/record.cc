#include "farmem/kv/record.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <cstring>
#include <vector>

namespace farmem::kv {

namespace w = wire;

uint64_t record_checksum(uint64_t version, uint32_t key_bytes, uint32_t value_bytes,
                         const void* key, const void* value) {
  uint8_t fixed[16];
  std::memcpy(fixed, &version, 8);
  std::memcpy(fixed + 8, &key_bytes, 4);
  std::memcpy(fixed + 12, &value_bytes, 4);
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, fixed, sizeof(fixed));
  XXH3_64bits_update(&st, key, key_bytes);
  XXH3_64bits_update(&st, value, value_bytes);
  return XXH3_64bits_digest(&st);
}

size_t check_record_copy(uint8_t* copy, size_t bytes, std::string_view key, uint64_t version,
                         uint64_t* value_bytes) {
  constexpr size_t kHeader = sizeof(w::KvRecordHeader);
  if (bytes < kHeader + key.size()) return 0;
  w::KvRecordHeader h;
  std::memcpy(&h, copy, kHeader);
  if (h.state != w::record_state(version, w::kRecordLive) || h.version != version ||
      h.key_bytes != key.size() || record_bytes(h.key_bytes, h.value_bytes) != bytes) {
    return 0;
  }
  // [8, 24) || key || value, made contiguous by moving the 16 bytes over the checksum field:
  // the same bytes record_checksum hashes, in one call.
  std::memmove(copy + 16, copy + 8, 16);
  if (XXH3_64bits(copy + 16, bytes - 16) != h.checksum) return 0;
  if (std::memcmp(copy + kHeader, key.data(), key.size()) != 0) return 0;
  *value_bytes = h.value_bytes;
  return kHeader + key.size();
}

bool record_valid(const uint8_t* record, uint64_t bytes, std::string_view key) {
  w::KvRecordHeader h;
  if (bytes < sizeof(h)) return false;
  std::memcpy(&h, record, sizeof(h));
  const uint64_t need = record_bytes(h.key_bytes, h.value_bytes);
  if (need > bytes) return false;
  std::vector<uint8_t> copy(record, record + need);
  uint64_t value_bytes = 0;
  return check_record_copy(copy.data(), copy.size(), key, h.version, &value_bytes) != 0;
}

}  // namespace farmem::kv
