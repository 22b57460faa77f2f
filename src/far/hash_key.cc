#include <xxhash.h>

#include "farmem/far/cached_hash_table.h"

namespace farmem::far {

uint64_t hash_key(const void* key, size_t bytes) { return XXH3_64bits(key, bytes); }

}  // namespace farmem::far
