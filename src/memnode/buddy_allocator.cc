#include "farmem/memnode/buddy_allocator.h"

#include <fmt/format.h>

#include <bit>

#include "farmem/common/check.h"

namespace farmem::memnode {
namespace {

uint32_t order_for(uint64_t bytes) {
  if (bytes <= (1ull << BuddyAllocator::kMinOrder)) return BuddyAllocator::kMinOrder;
  return static_cast<uint32_t>(64 - std::countl_zero(bytes - 1));
}

}  // namespace

BuddyAllocator::BuddyAllocator(uint64_t capacity_bytes, uint64_t reserved_bytes)
    : capacity_(capacity_bytes & ~63ull),
      reserved_((reserved_bytes + 63) & ~63ull),
      used_(reserved_),
      free_(kMaxOrder + 1) {
  // Cover [reserved, capacity) with maximal naturally aligned power-of-two blocks.
  uint64_t off = reserved_;
  while (off < capacity_) {
    uint32_t order = kMaxOrder;
    while (order > kMinOrder &&
           ((off & ((1ull << order) - 1)) != 0 || off + (1ull << order) > capacity_)) {
      --order;
    }
    if (off + (1ull << order) > capacity_) break;
    add_free(off, order);
    off += 1ull << order;
  }
}

void BuddyAllocator::add_free(uint64_t offset, uint32_t order) {
  FARMEM_ASSERT(order >= kMinOrder && order <= kMaxOrder, "block order out of range");
  FARMEM_ASSERT(offset >= reserved_ && offset + (1ull << order) <= capacity_,
                "free block outside the managed range");
  FARMEM_ASSERT((offset & ((1ull << order) - 1)) == 0, "free block not naturally aligned");
  const bool added = free_[order].insert(offset).second;
  FARMEM_ASSERT(added, "block already on its free list");
}

Result<BuddyAllocator::Block> BuddyAllocator::allocate(uint64_t bytes, uint64_t alignment) {
  if (bytes == 0) return InvalidArgument("cannot allocate 0 bytes");
  if (alignment != 0 && !std::has_single_bit(alignment)) {
    return InvalidArgument(fmt::format("alignment {} is not a power of two", alignment));
  }
  if (bytes > capacity_) {
    return ResourceExhausted(
        fmt::format("{} bytes requested but the node exports only {} bytes", bytes, capacity_));
  }
  uint32_t want = std::max(order_for(bytes), alignment ? order_for(alignment) : kMinOrder);
  if (want > kMaxOrder) return ResourceExhausted("allocation too large");
  uint32_t order = want;
  while (order <= kMaxOrder && free_[order].empty()) ++order;
  if (order > kMaxOrder) {
    return ResourceExhausted(fmt::format(
        "out of remote memory: {} bytes requested, {} of {} bytes in use, largest free block {}",
        bytes, used_, capacity_, largest_free_bytes()));
  }
  uint64_t off = *free_[order].begin();
  free_[order].erase(free_[order].begin());
  while (order > want) {
    --order;
    add_free(off + (1ull << order), order);  // upper half stays free
  }
  const bool fresh = allocated_.emplace(off, want).second;
  FARMEM_ASSERT(fresh, "a free block was also live");
  used_ += 1ull << want;
  FARMEM_ASSERT(used_ <= capacity_, "more bytes in use than the region holds");
  return Block{off, 1ull << want};
}

Status BuddyAllocator::allocate_at(uint64_t offset, uint64_t bytes) {
  const uint32_t want = order_for(bytes);
  if (bytes != (1ull << want) || (offset & (bytes - 1)) != 0) {
    return InvalidArgument(fmt::format("{} bytes at {:#x} is not a block", bytes, offset));
  }
  // The free block that contains the wanted one, split down to it.
  for (uint32_t order = want; order <= kMaxOrder; ++order) {
    const uint64_t base = offset & ~((1ull << order) - 1);
    auto it = free_[order].find(base);
    if (it == free_[order].end()) continue;
    free_[order].erase(it);
    uint64_t off = base;
    while (order > want) {
      --order;
      const uint64_t half = 1ull << order;
      if (offset >= off + half) {
        add_free(off, order);  // the lower half stays free
        off += half;
      } else {
        add_free(off + half, order);
      }
    }
    allocated_.emplace(offset, want);
    used_ += bytes;
    return OkStatus();
  }
  return AlreadyExists(fmt::format("block {:#x} (+{}) is not free", offset, bytes));
}

Status BuddyAllocator::free(uint64_t offset) {
  auto it = allocated_.find(offset);
  if (it == allocated_.end()) {
    return NotFound(fmt::format("offset {} is not the start of a live allocation", offset));
  }
  uint32_t order = it->second;
  allocated_.erase(it);
  FARMEM_ASSERT(used_ >= reserved_ + (1ull << order), "freeing more bytes than are in use");
  used_ -= 1ull << order;
  uint64_t off = offset;
  while (order < kMaxOrder) {
    uint64_t buddy = off ^ (1ull << order);
    auto b = free_[order].find(buddy);
    if (b == free_[order].end()) break;
    free_[order].erase(b);
    off = std::min(off, buddy);
    ++order;
  }
  add_free(off, order);
  return OkStatus();
}

uint64_t BuddyAllocator::largest_free_bytes() const {
  for (int o = kMaxOrder; o >= static_cast<int>(kMinOrder); --o) {
    if (!free_[o].empty()) return 1ull << o;
  }
  return 0;
}

}  // namespace farmem::memnode
