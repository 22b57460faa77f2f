// The undo log of an ADO invocation: the old bytes of what a plugin is about to change in place
// (tx_add in kv/ado_plugin.h), kept in its pool's undo block, a heap block of the pool's object
// in the exported region (docs/formats/ado.md "The undo log").
//
// The ADO process appends entries (UndoWriter) through its mapping of the region; the memory node
// reads them (read_undo) to put the old bytes back when the invocation does not end (the ADO
// process died, or the node did: recovery), and ends an invocation's log by clearing its first
// entry. Each entry carries its invocation's work id, its number in the invocation and a checksum
// over both and its bytes, so an entry torn by a crash, or left by an earlier invocation, ends
// the list. The region is writable by any shared-memory client: readers check everything.
// Thread safety: pure functions on the caller's memory; an UndoWriter belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "farmem/common/result.h"

namespace farmem::kv::ado {

inline constexpr uint64_t kUndoMagic = 0x474F4C4F444E5546ull;  // "FUNDOLOG" little-endian
inline constexpr uint64_t kUndoBlockBytes = 256 * 1024;
inline constexpr uint64_t kUndoAlign = 8;

// At offset 0 of the block, written once by the node when it makes the block.
struct UndoBlockHeader {
  uint64_t magic;        // kUndoMagic
  uint64_t object_id;    // the pool's node object
  uint64_t block_bytes;  // the whole block, this header included
  uint64_t reserved[4];  // 0
  uint64_t checksum;     // XXH3-64 (seed 0) of bytes [0, 56)
};
static_assert(sizeof(UndoBlockHeader) == 64);
static_assert(offsetof(UndoBlockHeader, checksum) == 56);

// The first entry at offset 64, each next one right after the previous one's bytes (padded to 8).
struct UndoEntryHeader {
  uint64_t work_id;   // the invocation's (never 0)
  uint64_t offset;    // region offset of the first byte the entry restores
  uint32_t bytes;     // how many (1 or more), which follow this header
  uint32_t sequence;  // 0 for the invocation's first entry, then 1, 2, ...
  uint64_t checksum;  // XXH3-64 with seed work_id of bytes [0, 24) and then the entry's bytes
};
static_assert(sizeof(UndoEntryHeader) == 32);
static_assert(offsetof(UndoEntryHeader, checksum) == 24);
inline constexpr uint64_t kUndoFirstEntry = sizeof(UndoBlockHeader);

// The block-relative bytes an entry of `bytes` old bytes takes.
inline uint64_t undo_entry_bytes(uint64_t bytes) {
  return sizeof(UndoEntryHeader) + ((bytes + kUndoAlign - 1) & ~(kUndoAlign - 1));
}

// Makes `block` an empty undo block of pool object `object_id` (header, the rest zero).
void format_undo_block(uint8_t* block, uint64_t block_bytes, uint64_t object_id);
// The size the header of `block` gives, if it is the header format_undo_block wrote for
// `object_id` and the block (of `available` bytes) holds that much; else 0.
uint64_t undo_block_bytes(const uint8_t* block, uint64_t available, uint64_t object_id);

// One entry as read back.
struct UndoEntry {
  uint64_t offset = 0;           // region offset of the bytes it restores
  uint32_t bytes = 0;            // how many
  const uint8_t* old = nullptr;  // their old contents, inside the block
  uint64_t at = 0;               // block-relative offset of the entry
};
// The entries of one invocation, in the order they were written: of `work_id`, or of whichever
// invocation wrote the first entry when work_id is 0. Empty when the first entry is absent,
// torn or another invocation's. Entries whose range leaves the region are dropped with the rest.
std::vector<UndoEntry> read_undo(const uint8_t* block, uint64_t block_bytes, uint64_t work_id,
                                 uint64_t region_bytes);
// The work id of the first entry, if it holds (0: no invocation's log is open).
uint64_t undo_work(const uint8_t* block, uint64_t block_bytes);
// Ends the open log: clears the first entry (the bytes to log: [kUndoFirstEntry, + 8)).
void clear_undo(uint8_t* block, uint64_t block_bytes);

// The ADO process's side: appends the entries of the current invocation.
class UndoWriter {
 public:
  // The block (mapped), its size; null / 0: this pool has none.
  void attach(uint8_t* block, uint64_t block_bytes) {
    block_ = block;
    block_bytes_ = block_bytes;
  }
  bool attached() const { return block_ != nullptr; }
  const uint8_t* block() const { return block_; }
  uint64_t block_bytes() const { return block_bytes_; }
  // A new invocation: its entries start at the first entry.
  void begin(uint64_t work_id) {
    work_id_ = work_id;
    next_ = kUndoFirstEntry;
    sequence_ = 0;
  }
  // Appends an entry with the `bytes` bytes now at `old` (region offset `offset`). Returns the
  // block-relative range it took (to log), kResourceExhausted when the block is full.
  Result<std::pair<uint64_t, uint64_t>> append(uint64_t offset, const uint8_t* old, uint32_t bytes);
  uint32_t entries() const { return sequence_; }

 private:
  uint8_t* block_ = nullptr;
  uint64_t block_bytes_ = 0;
  uint64_t work_id_ = 0;
  uint64_t next_ = kUndoFirstEntry;
  uint32_t sequence_ = 0;
};

}  // namespace farmem::kv::ado
