#include "farmem/ds/common/object_heap.h"

#include <fmt/format.h>

#include "farmem/client/cluster.h"

namespace farmem::ds {

using client::ChunkAllocator;
using runtime::Task;

ObjectHeap::ObjectHeap(client::ThreadClient* c, const FarObject* object, uint64_t chunk_bytes)
    : client_(c), object_(object), chunk_bytes_(chunk_bytes) {
  uint16_t max_id = 0;
  for (const auto& n : c->cluster().nodes()) max_id = std::max(max_id, n.node_id);
  per_node_.resize(size_t{max_id} + 1);
}

Task<Result<GlobalAddress>> ObjectHeap::allocate(uint16_t node, uint64_t bytes,
                                                 uint64_t alignment) {
  if (bytes == 0) co_return InvalidArgument("cannot allocate 0 bytes");
  if (node >= per_node_.size() || client_->endpoint(node) == nullptr) {
    co_return NotFound(fmt::format("no memory node with id {}", node));
  }
  const uint64_t owner = object_->owner(node);
  const int cls = ChunkAllocator::class_of(bytes);
  if (cls < 0 || alignment > ChunkAllocator::class_bytes(cls)) {
    auto r = co_await client_->allocate_on(node, bytes, alignment, owner);
    co_return r;
  }
  // per_node_ is sized once; index it again after every co_await.
  for (;;) {
    GlobalAddress a = per_node_[node].chunks.take(cls);
    if (!a.is_null()) co_return a;
    if (!per_node_[node].refilling) break;
    // One refill per node at a time: a chunk for each coroutine that ran out at once would
    // mostly stay unused, and what a handle holds outlives it (a durable node keeps it across
    // restarts). The refill has a deadline, so this wait ends.
    co_await client_->scheduler().yield();
  }
  per_node_[node].refilling = true;
  auto chunk = co_await client_->allocate_on(node, chunk_bytes_, 4096, owner);
  per_node_[node].refilling = false;
  FARMEM_CO_TRY(chunk);
  co_return per_node_[node].chunks.take_after_refill(cls, *chunk, chunk_bytes_);
}

Task<Status> ObjectHeap::free(GlobalAddress addr, uint64_t bytes) {
  const int cls = ChunkAllocator::class_of(bytes);
  if (cls >= 0 && addr.node() < per_node_.size()) {
    per_node_[addr.node()].chunks.give_back(cls, addr);
    co_return OkStatus();
  }
  Status s = co_await client_->free_on(addr);
  co_return s;
}

uint64_t ObjectHeap::chunks() const {
  uint64_t n = 0;
  for (const auto& a : per_node_) n += a.chunks.chunks();
  return n;
}

}  // namespace farmem::ds
