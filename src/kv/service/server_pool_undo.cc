// ServerPool (server_pool.h): the pool's undo block, where its ADO keeps the old bytes of what an
// invocation changes in place (kv/ado/undo_log.h; docs/formats/ado.md "The undo log").
#include <cstring>
#include <vector>

#include "../ado/undo_log.h"
#include "server_pool.h"

namespace farmem::kv::service {

Result<uint64_t> ServerPool::undo_block() {
  if (undo_ != 0) return undo_;
  FARMEM_ASSIGN_OR_RETURN(const MemorySource::Block b, source_->take(ado::kUndoBlockBytes));
  ado::format_undo_block(region_.at(b.offset), ado::kUndoBlockBytes, object_id_);
  undo_ = b.offset;
  undo_bytes_ = ado::kUndoBlockBytes;
  mark(undo_, undo_bytes_);
  return undo_;
}

bool ServerPool::mark_undo(uint64_t offset, uint64_t bytes) {
  if (undo_ == 0 || offset < undo_ || offset - undo_ > undo_bytes_ ||
      bytes > undo_bytes_ - (offset - undo_)) {
    return false;
  }
  mark(offset, bytes);
  return true;
}

size_t ServerPool::roll_back_undo(uint64_t work_id, const UndoAllowed& allowed) {
  if (undo_ == 0) return 0;
  const std::vector<ado::UndoEntry> entries =
      ado::read_undo(region_.at(undo_), undo_bytes_, work_id, region_.bytes);
  if (entries.empty()) return 0;
  size_t applied = 0;
  // Newest first: where entries overlap, the oldest copy of a byte is written last.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (!allowed(it->offset, it->bytes)) continue;
    std::memmove(region_.at(it->offset), it->old, it->bytes);
    mark(it->offset, it->bytes);
    ++applied;
  }
  ado::clear_undo(region_.at(undo_), undo_bytes_);
  mark(undo_ + ado::kUndoFirstEntry, sizeof(uint64_t));
  return applied;
}

void ServerPool::end_undo(uint64_t work_id) {
  if (undo_ == 0 || ado::undo_work(region_.at(undo_), undo_bytes_) != work_id) return;
  ado::clear_undo(region_.at(undo_), undo_bytes_);
  mark(undo_ + ado::kUndoFirstEntry, sizeof(uint64_t));
}

}  // namespace farmem::kv::service
