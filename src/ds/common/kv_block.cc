#include "farmem/ds/common/kv_block.h"

#include <xxhash.h>

#include <cstring>

namespace farmem::ds {

uint64_t kv_block_checksum(const void* p, size_t bytes) { return XXH3_64bits(p, bytes); }

void encode_kv_block(std::string_view key, std::string_view value, uint64_t owner,
                     std::string* out) {
  out->assign(kv_block_bytes(key.size(), value.size()), '\0');
  KvBlockHeader h{0, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size()), owner};
  std::memcpy(out->data(), &h, sizeof(h));
  std::memcpy(out->data() + sizeof(h), key.data(), key.size());
  if (!value.empty()) std::memcpy(out->data() + sizeof(h) + key.size(), value.data(), value.size());
  h.checksum = kv_block_checksum(out->data() + 8, sizeof(h) - 8 + key.size() + value.size());
  std::memcpy(out->data(), &h.checksum, 8);
}

BlockCheck check_kv_block(const char* data, size_t have, uint32_t max_key_bytes,
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
  if (kv_block_checksum(data + 8, used - 8) != h.checksum) return BlockCheck::kTorn;
  view->key = std::string_view(data + sizeof(h), h.key_bytes);
  view->value = std::string_view(data + sizeof(h) + h.key_bytes, h.value_bytes);
  view->owner = h.owner;
  view->bytes = kv_block_bytes(h.key_bytes, h.value_bytes);
  return BlockCheck::kOk;
}

}  // namespace farmem::ds
