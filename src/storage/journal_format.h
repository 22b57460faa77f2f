// The journal's bytes on disk (docs/formats/storage.md, "Journal"): record prefixes inside log
// payloads, the CHECKPOINT file's two slots and the meta file's header.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "farmem/storage/journal.h"

namespace farmem::storage::journal_format {

inline constexpr uint8_t kRangeRecord = 1;   // region bytes to copy back at recovery
inline constexpr uint8_t kOwnerRecord = 2;   // a change to the owner's metadata
inline constexpr uint8_t kRangesRecord = 3;  // several ranges of region bytes (data-dir format 2)
inline constexpr uint32_t kCheckpointMagic = 0x50434d46;  // "FMCP" little-endian
inline constexpr uint64_t kSlotBytes = 512;  // CHECKPOINT holds slot 0 at 0 and slot 1 at 512

// Every log payload starts with 8 bytes: the kind, then zeros.
struct RecordPrefix {
  uint8_t kind;
  uint8_t reserved[7];
};
static_assert(sizeof(RecordPrefix) == 8);

// A range record: the prefix, the region offset, then the bytes.
struct RangePrefix {
  uint8_t kind;
  uint8_t reserved[7];
  uint64_t offset;
};
static_assert(sizeof(RangePrefix) == 16);
static_assert(offsetof(RangePrefix, offset) == 8);

// A ranges record: the prefix (kind 3), then for each range this entry, its bytes and zeros to
// the next multiple of 8; the entries fill the payload exactly.
struct RangeEntry {
  uint64_t offset;
  uint32_t bytes;
  uint32_t reserved;  // 0
};
static_assert(sizeof(RangeEntry) == 16);
static_assert(offsetof(RangeEntry, bytes) == 8);
inline uint64_t range_entry_bytes(uint64_t bytes) {
  return sizeof(RangeEntry) + ((bytes + 7) & ~uint64_t{7});
}

// Generation g is written to slot g % 2; the valid slot with the larger generation wins.
struct CheckpointSlot {
  uint32_t magic;
  uint32_t version;
  uint64_t generation;     // 1, 2, ...
  uint64_t start_lsn;      // the first LSN the checkpoint does not hold (log.<g % 2> starts there)
  uint64_t region_bytes;   // the region's size, checked at recovery
  uint64_t meta_bytes;     // meta.<g % 2>'s size
  uint64_t meta_checksum;  // XXH3-64 of meta.<g % 2>
  uint64_t checksum;       // XXH3-64 of the 48 bytes before it
};
static_assert(sizeof(CheckpointSlot) == 56);
static_assert(offsetof(CheckpointSlot, generation) == 8);
static_assert(offsetof(CheckpointSlot, start_lsn) == 16);
static_assert(offsetof(CheckpointSlot, region_bytes) == 24);
static_assert(offsetof(CheckpointSlot, meta_bytes) == 32);
static_assert(offsetof(CheckpointSlot, meta_checksum) == 40);
static_assert(offsetof(CheckpointSlot, checksum) == 48);

inline uint64_t hash(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// Words of a bitmap with one bit per `chunk_bytes` chunk of a region.
inline uint64_t words_for(uint64_t region_bytes, uint64_t chunk_bytes = 64 * 1024) {
  const uint64_t chunks = (region_bytes + chunk_bytes - 1) / chunk_bytes;
  return (chunks + 63) / 64;
}

inline uint64_t slot_checksum(const CheckpointSlot& s) {
  return XXH3_64bits(&s, offsetof(CheckpointSlot, checksum));
}

// meta.<n>: this header, `chunk_words` 64-bit words of the bitmap of region.img's chunks that
// hold data (bit c of word c / 64 for chunk c), then the owner's snapshot.
struct MetaHeader {
  uint64_t chunk_bytes;  // 65536
  uint64_t chunk_words;
};
static_assert(sizeof(MetaHeader) == 16);

}  // namespace farmem::storage::journal_format

namespace farmem::storage {

// The journal's open files.
struct Journal::Files {
  std::unique_ptr<Log> logs[2];  // log.0 and log.1
  std::unique_ptr<File> meta[2];
  std::unique_ptr<File> image;       // region.img
  std::unique_ptr<File> checkpoint;  // CHECKPOINT
  int live = 0;                      // index of the live log
};

}  // namespace farmem::storage
