#include "undo_log.h"

#include <fmt/format.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <cstring>

namespace farmem::kv::ado {

namespace {

uint64_t header_checksum(const UndoBlockHeader& h) {
  return XXH3_64bits(&h, offsetof(UndoBlockHeader, checksum));
}

uint64_t entry_checksum(const UndoEntryHeader& h, const uint8_t* old) {
  XXH3_state_t st;
  XXH3_64bits_reset_withSeed(&st, h.work_id);
  XXH3_64bits_update(&st, &h, offsetof(UndoEntryHeader, checksum));
  XXH3_64bits_update(&st, old, h.bytes);
  return XXH3_64bits_digest(&st);
}

}  // namespace

void format_undo_block(uint8_t* block, uint64_t block_bytes, uint64_t object_id) {
  std::memset(block, 0, block_bytes);
  UndoBlockHeader h{kUndoMagic, object_id, block_bytes, {}, 0};
  h.checksum = header_checksum(h);
  std::memcpy(block, &h, sizeof(h));
}

uint64_t undo_block_bytes(const uint8_t* block, uint64_t available, uint64_t object_id) {
  if (available < kUndoFirstEntry) return 0;
  UndoBlockHeader h;
  std::memcpy(&h, block, sizeof(h));
  const bool ok = h.magic == kUndoMagic && h.object_id == object_id &&
                  h.block_bytes >= kUndoFirstEntry && h.block_bytes <= available &&
                  h.checksum == header_checksum(h);
  return ok ? h.block_bytes : 0;
}

std::vector<UndoEntry> read_undo(const uint8_t* block, uint64_t block_bytes, uint64_t work_id,
                                 uint64_t region_bytes) {
  std::vector<UndoEntry> out;
  uint64_t at = kUndoFirstEntry;
  for (uint32_t sequence = 0; at + sizeof(UndoEntryHeader) <= block_bytes; ++sequence) {
    UndoEntryHeader h;
    std::memcpy(&h, block + at, sizeof(h));
    if (h.work_id == 0 || h.sequence != sequence || h.bytes == 0) break;
    if (work_id == 0) work_id = h.work_id;
    if (h.work_id != work_id || undo_entry_bytes(h.bytes) > block_bytes - at) break;
    if (h.offset > region_bytes || h.bytes > region_bytes - h.offset) break;
    const uint8_t* old = block + at + sizeof(h);
    if (entry_checksum(h, old) != h.checksum) break;
    out.push_back({h.offset, h.bytes, old, at});
    at += undo_entry_bytes(h.bytes);
  }
  return out;
}

uint64_t undo_work(const uint8_t* block, uint64_t block_bytes) {
  const std::vector<UndoEntry> first = read_undo(block, block_bytes, 0, UINT64_MAX);
  if (first.empty()) return 0;
  uint64_t work_id;
  std::memcpy(&work_id, block + kUndoFirstEntry, sizeof(work_id));
  return work_id;
}

void clear_undo(uint8_t* block, uint64_t block_bytes) {
  if (block_bytes < kUndoFirstEntry + sizeof(uint64_t)) return;
  std::memset(block + kUndoFirstEntry, 0, sizeof(uint64_t));
}

Result<std::pair<uint64_t, uint64_t>> UndoWriter::append(uint64_t offset, const uint8_t* old,
                                                         uint32_t bytes) {
  if (block_ == nullptr) return Unavailable("this pool has no undo log");
  const uint64_t need = undo_entry_bytes(bytes);
  if (bytes == 0 || need > block_bytes_ - next_) {
    return ResourceExhausted(fmt::format(
        "the undo log holds {} bytes of entries; this invocation's tx_add ranges need more",
        block_bytes_ - kUndoFirstEntry));
  }
  uint8_t* e = block_ + next_;
  std::memcpy(e + sizeof(UndoEntryHeader), old, bytes);
  std::memset(e + sizeof(UndoEntryHeader) + bytes, 0, need - sizeof(UndoEntryHeader) - bytes);
  UndoEntryHeader h{work_id_, offset, bytes, sequence_, 0};
  h.checksum = entry_checksum(h, e + sizeof(h));
  std::memcpy(e, &h, sizeof(h));
  const std::pair<uint64_t, uint64_t> range{next_, need};
  next_ += need;
  ++sequence_;
  return range;
}

}  // namespace farmem::kv::ado
