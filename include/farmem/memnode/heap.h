// Heap: the memory node's allocations, each with an owner, so that memory comes back.
//
// An owner is a client session (its id) or a named object (an id with wire::kObjectOwnerBit).
// Session allocations are released when the session ends, however it ends; object allocations
// when the object is destroyed. free() lets a session free its own allocations and those of
// any object (objects are shared), never another session's.
// Wraps the BuddyAllocator; metadata lives in the server's private memory.
// Thread safety: not thread-safe; the server serialises calls (Server::mu_).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/memnode/buddy_allocator.h"

namespace farmem::memnode {

class Heap {
 public:
  Heap(uint64_t capacity_bytes, uint64_t reserved_bytes)
      : allocator_(capacity_bytes, reserved_bytes) {}

  Result<BuddyAllocator::Block> allocate(uint64_t bytes, uint64_t alignment, uint64_t owner);
  // The block at `offset` (recovery; see BuddyAllocator::allocate_at).
  Status allocate_at(uint64_t offset, uint64_t bytes, uint64_t owner);
  // `requester` is the session asking.
  Status free(uint64_t offset, uint64_t requester);
  // Whether `requester` may free the allocation at `offset` (what free() checks first).
  Status check_free(uint64_t offset, uint64_t requester) const;
  // Every session-owned allocation's owner (recovery releases them: no session survives).
  std::vector<uint64_t> session_owners() const;
  // Calls f(offset, bytes, owner) for each allocation.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [offset, owner] : owner_of_) f(offset, allocator_.block_bytes(offset), owner);
  }
  // Frees everything `owner` holds; returns the number of allocations freed.
  size_t release(uint64_t owner);

  uint64_t capacity_bytes() const { return allocator_.capacity_bytes(); }
  uint64_t used_bytes() const { return allocator_.used_bytes(); }
  uint64_t live_allocations() const { return allocator_.live_allocations(); }
  size_t owned_by(uint64_t owner) const;
  // The owner of the allocation starting at `offset`, or 0 if there is none.
  uint64_t owner_of(uint64_t offset) const;

 private:
  BuddyAllocator allocator_;
  std::unordered_map<uint64_t, uint64_t> owner_of_;                   // offset -> owner
  std::unordered_map<uint64_t, std::unordered_set<uint64_t>> owned_;  // owner -> offsets
};

}  // namespace farmem::memnode
