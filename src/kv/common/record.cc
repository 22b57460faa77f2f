#include "farmem/kv/record.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <cstring>
#include <vector>

namespace farmem::kv {

namespace w = wire;

uint64_t record_checksum(uint64_t version, uint32_t key_bytes, uint32_t value_bytes,
                         const void* key, const void* value) {
  // The covered header bytes, as the header lays them out.
  w::KvRecordHeader h{};
  h.version = version;
  h.key_bytes = key_bytes;
  h.value_bytes = value_bytes;
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, reinterpret_cast<const uint8_t*>(&h) + w::kRecordSummedBegin,
                     w::kRecordSummedBytes);
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
  // The covered header bytes || key || value, made contiguous by moving the covered bytes up
  // against the key (over the checksum field): the bytes record_checksum hashes, in one call.
  constexpr size_t kSummedAt = kHeader - w::kRecordSummedBytes;
  static_assert(kSummedAt >= w::kRecordSummedBegin);
  std::memmove(copy + kSummedAt, copy + w::kRecordSummedBegin, w::kRecordSummedBytes);
  if (XXH3_64bits(copy + kSummedAt, bytes - kSummedAt) != h.checksum) return 0;
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
