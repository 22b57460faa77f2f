// PoolHeader: what a durable node keeps of a pool beside its records and index, in a block of
// the region that the pool's node object owns (docs/formats/kv.md "On a durable memory node").
//
// The block (kPoolHeaderBlockBytes) holds the fixed header, the pool's name and its ADO
// settings (encoded in pool_header.cc, any bytes). Recovery finds it among the object's heap blocks
// by its magic, the object id and the checksum; the highest sequence wins if a torn log left two.
// The region is writable by clients, so read_pool_header checks everything it takes from the block.
// Thread safety: pure functions on the caller's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ado_settings.h"
#include "farmem/common/result.h"

namespace farmem::kv::service {

inline constexpr uint64_t kPoolHeaderMagic = 0x4C4F4F5056564B46ull;  // "FKVVPOOL" little-endian
inline constexpr uint32_t kPoolHeaderFormat = 1;
inline constexpr uint64_t kPoolHeaderBlockBytes = 8192;
inline constexpr uint32_t kPoolHeaderIndex = 1;      // the pool has a secondary index
inline constexpr uint32_t kPoolHeaderTemporary = 2;  // deleted at recovery (its session is gone)

struct PoolHeader {
  uint64_t magic;           // kPoolHeaderMagic
  uint32_t format;          // kPoolHeaderFormat
  uint32_t bytes;           // bytes the checksum covers: this header, the name, the ADO bytes
  uint64_t object_id;       // the pool's node object
  uint64_t capacity_bytes;  // the pool's capacity
  uint64_t table_offset;    // region offset of the primary index's bucket array
  uint64_t table_slots;     // its buckets (a power of two)
  uint64_t sequence;        // counts the header's rewrites
  uint32_t flags;           // kPoolHeaderIndex | kPoolHeaderTemporary
  uint32_t name_bytes;      // 1..kMaxPoolNameBytes, the name follows the header
  uint32_t ado_bytes;       // the ADO settings' encoding, after the name
  uint32_t reserved;        // 0
  uint64_t checksum;        // XXH3-64 (seed 0) of bytes [0, bytes) with this field zero
};
static_assert(sizeof(PoolHeader) == 80);
static_assert(offsetof(PoolHeader, object_id) == 16);
static_assert(offsetof(PoolHeader, table_offset) == 32);
static_assert(offsetof(PoolHeader, sequence) == 48);
static_assert(offsetof(PoolHeader, flags) == 56);
static_assert(offsetof(PoolHeader, checksum) == 72);

// A pool's header as values.
struct PoolMeta {
  std::string name;
  uint64_t object_id = 0;
  uint64_t capacity_bytes = 0;
  uint64_t table_offset = 0;
  uint64_t table_slots = 0;
  uint64_t sequence = 0;
  uint32_t flags = 0;
  AdoSettings ado;
};

// Writes `meta` into the block at `block` (kPoolHeaderBlockBytes); returns the bytes written.
// kResourceExhausted if the name and the ADO settings do not fit.
Result<uint64_t> write_pool_header(uint8_t* block, const PoolMeta& meta);
// The header in `block` if it is one for `object_id` (magic, format, sizes, checksum, the ADO
// settings' encoding).
Result<PoolMeta> read_pool_header(const uint8_t* block, uint64_t object_id);

}  // namespace farmem::kv::service
