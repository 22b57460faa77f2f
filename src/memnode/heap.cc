#include "farmem/memnode/heap.h"

#include <fmt/format.h>

#include "farmem/common/check.h"
#include "farmem/fabric/wire.h"

namespace farmem::memnode {

Result<BuddyAllocator::Block> Heap::allocate(uint64_t bytes, uint64_t alignment, uint64_t owner) {
  auto b = allocator_.allocate(bytes, alignment);
  FARMEM_TRY(b);
  const bool fresh = owner_of_.emplace(b->offset, owner).second;
  FARMEM_ASSERT(fresh, "the allocator handed out a block the heap holds");
  owned_[owner].insert(b->offset);
  return b;
}

Status Heap::allocate_at(uint64_t offset, uint64_t bytes, uint64_t owner) {
  FARMEM_TRY(allocator_.allocate_at(offset, bytes));
  owner_of_.emplace(offset, owner);
  owned_[owner].insert(offset);
  return OkStatus();
}

Status Heap::check_free(uint64_t offset, uint64_t requester) const {
  auto it = owner_of_.find(offset);
  if (it == owner_of_.end()) {
    return NotFound(fmt::format("offset {:#x} is not the start of a live allocation", offset));
  }
  const uint64_t owner = it->second;
  if ((owner & wire::kObjectOwnerBit) == 0 && owner != requester) {
    return InvalidArgument(
        fmt::format("offset {:#x} belongs to another client session; only it may free it", offset));
  }
  return OkStatus();
}

std::vector<uint64_t> Heap::session_owners() const {
  std::vector<uint64_t> out;
  for (const auto& [owner, offsets] : owned_) {
    if ((owner & wire::kObjectOwnerBit) == 0) out.push_back(owner);
  }
  return out;
}

Status Heap::free(uint64_t offset, uint64_t requester) {
  FARMEM_TRY(check_free(offset, requester));
  auto it = owner_of_.find(offset);
  const uint64_t owner = it->second;
  const Status freed = allocator_.free(offset);
  FARMEM_ASSERT(freed.ok(), "a heap allocation is not live in the allocator");
  owner_of_.erase(it);
  auto o = owned_.find(owner);
  FARMEM_ASSERT(o != owned_.end(), "an allocation's owner holds nothing");
  const size_t erased = o->second.erase(offset);
  FARMEM_ASSERT(erased == 1, "an allocation is missing from its owner's set");
  if (o->second.empty()) owned_.erase(o);
  return OkStatus();
}

size_t Heap::release(uint64_t owner) {
  auto o = owned_.find(owner);
  if (o == owned_.end()) return 0;
  size_t n = 0;
  for (uint64_t offset : o->second) {
    const Status freed = allocator_.free(offset);
    FARMEM_ASSERT(freed.ok(), "a heap allocation is not live in the allocator");
    ++n;
    const size_t erased = owner_of_.erase(offset);
    FARMEM_ASSERT(erased == 1, "an owned allocation has no owner entry");
  }
  owned_.erase(o);
  return n;
}

uint64_t Heap::owner_of(uint64_t offset) const {
  auto it = owner_of_.find(offset);
  return it == owner_of_.end() ? 0 : it->second;
}

size_t Heap::owned_by(uint64_t owner) const {
  auto o = owned_.find(owner);
  return o == owned_.end() ? 0 : o->second.size();
}

}  // namespace farmem::memnode
