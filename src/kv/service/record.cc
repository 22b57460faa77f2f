#include "record.h"

#include <cstring>

#include "farmem/common/check.h"

namespace farmem::kv::service {

namespace {

// The state word is the header's first field, written on its own (atomically).
static_assert(offsetof(KvRecordHeader, state) == 0);
constexpr size_t kAfterState = sizeof(KvRecordHeader::state);
static_assert(kAfterState == offsetof(KvRecordHeader, version));

// Versions fit the state word's upper bits (wire::record_state), and 0 is never one.
bool valid_version(uint64_t version) { return version != 0 && version <= wire::kMaxRecordVersion; }

}  // namespace

uint64_t load_state(const uint8_t* record) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(record), __ATOMIC_ACQUIRE);
}

void store_state(uint8_t* record, uint64_t state) {
  __atomic_store_n(reinterpret_cast<uint64_t*>(record), state, __ATOMIC_RELEASE);
}

void write_record(uint8_t* record, uint64_t version, std::string_view key, const void* value,
                  uint32_t value_bytes) {
  FARMEM_ASSERT(valid_version(version), "record versions are 1..kMaxRecordVersion");
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
  std::memcpy(record + kAfterState, reinterpret_cast<const uint8_t*>(&h) + kAfterState,
              sizeof(h) - kAfterState);
}

void seal(uint8_t* record, uint64_t version, uint32_t key_bytes, uint32_t value_bytes) {
  FARMEM_ASSERT(valid_version(version), "record versions are 1..kMaxRecordVersion");
  const uint8_t* key = record + sizeof(KvRecordHeader);
  const uint64_t sum = record_checksum(version, key_bytes, value_bytes, key, key + key_bytes);
  std::memcpy(record + offsetof(KvRecordHeader, version), &version, sizeof(version));
  std::memcpy(record + offsetof(KvRecordHeader, key_bytes), &key_bytes, sizeof(key_bytes));
  std::memcpy(record + offsetof(KvRecordHeader, value_bytes), &value_bytes, sizeof(value_bytes));
  std::memcpy(record + offsetof(KvRecordHeader, checksum), &sum, sizeof(sum));
}

}  // namespace farmem::kv::service
