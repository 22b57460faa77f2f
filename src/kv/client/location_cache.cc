#include "farmem/kv/location_cache.h"

#include <xxhash.h>

namespace farmem::kv {

uint64_t LocationCache::key_hash(uint32_t pool_id, std::string_view key) {
  return XXH3_64bits_withSeed(key.data(), key.size(), pool_id);
}

}  // namespace farmem::kv
