// KV blocks: checksummed, out-of-place key-value records in far memory (docs/formats/kv_block.md).
//
// A structure publishes a record by writing a block first and then swinging one 8-byte word
// (a slot, a leaf entry) to it with a CAS; it replaces a record by writing a new block and
// swinging the word again, and retires the old block (Reclaimer). Readers fetch the block the
// word points to without any lock and validate it: the checksum covers everything after it, so
// a block read while it was being written or after it was reused reads as torn and the reader
// retries.
//
//   offset 0   u64 checksum     XXH3-64 of bytes [8, 24 + key_bytes + value_bytes)
//   offset 8   u32 key_bytes
//   offset 12  u32 value_bytes
//   offset 16  u64 owner        the writer's session id on the block's node (for leases on
//                               records a writer may leave half-inserted when it dies)
//   offset 24  key, then value, then zero padding to a multiple of kKvBlockUnit
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace farmem::ds {

inline constexpr uint32_t kKvBlockUnit = 64;

struct KvBlockHeader {
  uint64_t checksum;
  uint32_t key_bytes;
  uint32_t value_bytes;
  uint64_t owner;
};
static_assert(sizeof(KvBlockHeader) == 24);
static_assert(offsetof(KvBlockHeader, owner) == 16);
static_assert(std::is_trivially_copyable_v<KvBlockHeader>);
// The checksum covers everything after itself: bytes [kKvChecksumFrom, 24 + key + value).
inline constexpr size_t kKvChecksumFrom = offsetof(KvBlockHeader, key_bytes);
static_assert(kKvChecksumFrom == sizeof(KvBlockHeader::checksum));

inline constexpr uint64_t kv_block_bytes(uint64_t key_bytes, uint64_t value_bytes) {
  return (sizeof(KvBlockHeader) + key_bytes + value_bytes + kKvBlockUnit - 1) / kKvBlockUnit *
         kKvBlockUnit;
}
static_assert(kv_block_bytes(8, 8) == 64 && kv_block_bytes(20, 20) == 64);
static_assert(kv_block_bytes(21, 20) == 128);

uint64_t kv_block_checksum(const void* after_checksum, size_t bytes);

// Fills *out with the block for key/value (resized to kv_block_bytes).
void encode_kv_block(std::string_view key, std::string_view value, uint64_t owner,
                     std::string* out);

struct KvBlockView {
  std::string_view key;
  std::string_view value;
  uint64_t owner = 0;
  uint64_t bytes = 0;  // the block's size (kv_block_bytes)
};

enum class BlockCheck {
  kOk,     // *view filled
  kShort,  // the header is sane but the block is longer than what was read: read *need bytes
  kTorn,   // checksum or sizes do not hold: read again later
};
// Validates `have` bytes read from a block's start. Sizes beyond the given limits are torn.
// (Inline: every one-sided read of a record runs it, and the limits are usually constants.)
inline BlockCheck check_kv_block(const char* data, size_t have, uint32_t max_key_bytes,
                                 uint32_t max_value_bytes, KvBlockView* view, size_t* need) {
  if (have < sizeof(KvBlockHeader)) return BlockCheck::kTorn;
  KvBlockHeader h;
  std::memcpy(&h, data, sizeof(h));
  if (h.key_bytes == 0 || h.key_bytes > max_key_bytes || h.value_bytes > max_value_bytes) {
    return BlockCheck::kTorn;
  }
  const uint64_t used = sizeof(h) + uint64_t{h.key_bytes} + h.value_bytes;
  if (used > have) {
    *need = kv_block_bytes(h.key_bytes, h.value_bytes);
    return BlockCheck::kShort;
  }
  if (kv_block_checksum(data + kKvChecksumFrom, used - kKvChecksumFrom) != h.checksum) {
    return BlockCheck::kTorn;
  }
  view->key = std::string_view(data + sizeof(h), h.key_bytes);
  view->value = std::string_view(data + sizeof(h) + h.key_bytes, h.value_bytes);
  view->owner = h.owner;
  view->bytes = kv_block_bytes(h.key_bytes, h.value_bytes);
  return BlockCheck::kOk;
}

// Whether a checked block holds `key` (a length check, then one memcmp).
inline bool kv_block_key_is(const KvBlockView& view, std::string_view key) {
  return view.key.size() == key.size() && std::memcmp(view.key.data(), key.data(), key.size()) == 0;
}

}  // namespace farmem::ds
