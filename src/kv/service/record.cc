#include "record.h"

#include <cstring>

namespace farmem::kv::service {

uint64_t load_state(const uint8_t* record) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(record), __ATOMIC_ACQUIRE);
}

void store_state(uint8_t* record, uint64_t state) {
  __atomic_store_n(reinterpret_cast<uint64_t*>(record), state, __ATOMIC_RELEASE);
}

void write_record(uint8_t* record, uint64_t version, std::string_view key, const void* value,
                  uint32_t value_bytes) {
  // `writing` first, so that no copy of the old incarnation's bytes mixed with the new can
  // carry a live state of the new version.
  store_state(record, wire::record_state(version, wire::kRecordWriting));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  KvRecordHeader h{};
  h.state = wire::record_state(version, wire::kRecordWriting);
  h.version = version;
  h.key_bytes = static_cast<uint32_t>(key.size());
  h.value_bytes = value_bytes;
  uint8_t* v = record + sizeof(h) + key.size();
  std::memcpy(record + sizeof(h), key.data(), key.size());
  if (value != nullptr) {
    std::memcpy(v, value, value_bytes);
    h.checksum = record_checksum(version, h.key_bytes, value_bytes, key.data(), value);
  } else {
    std::memset(v, 0, value_bytes);
  }
  std::memcpy(record + 8, reinterpret_cast<const uint8_t*>(&h) + 8, sizeof(h) - 8);
}

void seal(uint8_t* record, uint64_t version, uint32_t key_bytes, uint32_t value_bytes) {
  const uint8_t* key = record + sizeof(KvRecordHeader);
  const uint64_t sum = record_checksum(version, key_bytes, value_bytes, key, key + key_bytes);
  std::memcpy(record + offsetof(KvRecordHeader, version), &version, 8);
  std::memcpy(record + offsetof(KvRecordHeader, key_bytes), &key_bytes, 4);
  std::memcpy(record + offsetof(KvRecordHeader, value_bytes), &value_bytes, 4);
  std::memcpy(record + offsetof(KvRecordHeader, checksum), &sum, 8);
}

}  // namespace farmem::kv::service
