#include "node_heap_source.h"

#include "farmem/common/check.h"
#include "farmem/common/log.h"

namespace farmem::kv::service {

using memnode::NodeRecordKind;

Result<MemorySource::Block> NodeHeapSource::take(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(node_.mu);
  auto b = node_.heap.allocate(bytes, 64, owner_);
  FARMEM_TRY(b);
  auto logged = node_.log_locked(NodeRecordKind::kAlloc, b->offset, b->bytes, owner_);
  if (!logged.ok()) {
    const Status undone = node_.heap.free(b->offset, owner_);
    FARMEM_ASSERT(undone.ok(), "an allocation just made cannot be freed");
    return logged.status();
  }
  return Block{b->offset, b->bytes};
}

void NodeHeapSource::give_back(uint64_t offset) {
  if (before_free_) before_free_();
  std::lock_guard<std::mutex> lock(node_.mu);
  if (node_.heap.owner_of(offset) != owner_) return;
  // If the record cannot be logged, the block stays the object's (here and after a restart,
  // where the pool's recovery finds it unused and gives it back).
  if (auto logged = node_.commit_locked(NodeRecordKind::kFree, offset); !logged.ok()) {
    log::warn("kv: freeing pool block {:#x} not logged: {}", offset, logged.status().to_string());
  }
}

}  // namespace farmem::kv::service
