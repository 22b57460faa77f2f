// RegionView: the exported region as the kv service sees it, with bounds-checked access.
//
// ServerPool memory (index, records) lives in the region, which clients can also write one-sidedly,
// so nothing read from it is trusted: every offset and length taken from region memory is
// checked with ptr() before it is dereferenced.
// Thread safety: a plain view; the memory behind it is shared with other processes.
#pragma once

#include <cstdint>

namespace farmem::kv::service {

struct RegionView {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;

  // The bytes [offset, offset + n) or null if they are not all inside the region.
  uint8_t* ptr(uint64_t offset, uint64_t n) const {
    if (offset > bytes || n > bytes - offset) return nullptr;
    return base + offset;
  }
  // Caller guarantees the range is inside (it allocated it).
  uint8_t* at(uint64_t offset) const { return base + offset; }
};

}  // namespace farmem::kv::service
