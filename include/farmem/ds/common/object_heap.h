// ObjectHeap: a data-structure handle's allocator for the far memory of one FarObject.
//
// Everything it hands out is owned by the object (it comes back when the object is
// destroyed). Small sizes are carved from chunks the handle takes from each node (one RPC per
// chunk, client::ChunkAllocator's size classes), larger ones come from the node directly; both
// are object-owned, and one chunk per node is on its way at a time. free() of a small block
// returns it to this handle's free lists for reuse.
// What a handle still holds when it is dropped (free lists, the rest of its chunks) stays
// allocated to the object until the object is destroyed: at most about one chunk per node per
// handle plus the handle's free lists.
// Thread safety: the owning thread only (one per handle).
#pragma once

#include <cstdint>
#include <vector>

#include "farmem/client/chunk_allocator.h"
#include "farmem/client/thread_client.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/runtime/task.h"

namespace farmem::ds {

class ObjectHeap {
 public:
  ObjectHeap(client::ThreadClient* c, const FarObject* object, uint64_t chunk_bytes);

  // `alignment` applies to direct node allocations (power of two <= 4096); small blocks are
  // aligned to their size class (>= 64).
  runtime::Task<Result<GlobalAddress>> allocate(uint16_t node, uint64_t bytes,
                                                uint64_t alignment = 64);
  // bytes must be what was passed to allocate().
  runtime::Task<Status> free(GlobalAddress addr, uint64_t bytes);
  uint64_t chunks() const;

 private:
  client::ThreadClient* client_;
  const FarObject* object_;
  uint64_t chunk_bytes_;
  struct PerNode {
    client::ChunkAllocator chunks;
    bool refilling = false;  // a chunk is on its way: other coroutines wait for it
  };
  std::vector<PerNode> per_node_;  // indexed by node id
};

}  // namespace farmem::ds
