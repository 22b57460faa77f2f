// BuddyAllocator: the memory node's allocator over its exported region, in power-of-two blocks
// from 64 bytes up. Blocks are naturally aligned (a block of 2^k bytes starts at a multiple of
// 2^k). Clients take large chunks and carve small objects locally (client/chunk_allocator.h),
// so this allocator sees few requests. free() accepts only offsets it handed out.
// Metadata lives in the server's private memory, never in the exported region.
// Thread safety: not thread-safe; the server serialises calls.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

#include "farmem/common/result.h"

namespace farmem::memnode {

class BuddyAllocator {
 public:
  static constexpr uint32_t kMinOrder = 6;  // 64 B
  static constexpr uint32_t kMaxOrder = 48;

  // Manages [reserved_bytes, capacity_bytes); reserved_bytes is rounded up to 64.
  BuddyAllocator(uint64_t capacity_bytes, uint64_t reserved_bytes);

  struct Block {
    uint64_t offset;
    uint64_t bytes;
  };
  // alignment: power of two, 0 means 64.
  Result<Block> allocate(uint64_t bytes, uint64_t alignment);
  Status free(uint64_t offset);
  // Takes the block of `bytes` (a power of two, at least 64) at `offset`, which must be free:
  // recovery rebuilds the allocator from the blocks a journal recorded.
  Status allocate_at(uint64_t offset, uint64_t bytes);

  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t used_bytes() const { return used_; }  // includes the reserved prefix
  uint64_t live_allocations() const { return allocated_.size(); }
  uint64_t largest_free_bytes() const;
  // The size of the live block at `offset` (0 when there is none).
  uint64_t block_bytes(uint64_t offset) const {
    auto it = allocated_.find(offset);
    return it == allocated_.end() ? 0 : 1ull << it->second;
  }

 private:
  void add_free(uint64_t offset, uint32_t order);
  uint64_t capacity_;
  uint64_t reserved_;
  uint64_t used_;
  std::vector<std::set<uint64_t>> free_;  // per order
  std::unordered_map<uint64_t, uint32_t> allocated_;
};

}  // namespace farmem::memnode
