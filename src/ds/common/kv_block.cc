#include "farmem/ds/common/kv_block.h"

// XXH3 compiled into this file (xxhash's header-only mode): a block's checksum covers a few
// dozen bytes, and the call into the shared library costs about as much as the hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>
#include <limits>

#include "farmem/common/check.h"

namespace farmem::ds {

uint64_t kv_block_checksum(const void* p, size_t bytes) { return XXH3_64bits(p, bytes); }

void encode_kv_block(std::string_view key, std::string_view value, uint64_t owner,
                     std::string* out) {
  // A block with no key reads as torn forever; sizes are u32 fields.
  FARMEM_ASSERT(!key.empty() && key.size() <= std::numeric_limits<uint32_t>::max() &&
                    value.size() <= std::numeric_limits<uint32_t>::max(),
                "a KV block holds a key, and its sizes fit their fields");
  out->assign(kv_block_bytes(key.size(), value.size()), '\0');
  KvBlockHeader h{0, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size()), owner};
  std::memcpy(out->data(), &h, sizeof(h));
  std::memcpy(out->data() + sizeof(h), key.data(), key.size());
  if (!value.empty()) std::memcpy(out->data() + sizeof(h) + key.size(), value.data(), value.size());
  h.checksum = kv_block_checksum(out->data() + kKvChecksumFrom,
                                 sizeof(h) - kKvChecksumFrom + key.size() + value.size());
  std::memcpy(out->data() + offsetof(KvBlockHeader, checksum), &h.checksum, sizeof(h.checksum));
}

}  // namespace farmem::ds
