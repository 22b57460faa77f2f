// The paged service's messages: memory nodes load files into memory clients allocated
// (paged regions' allocate_from_file; docs/formats/paged.md). Opcodes 384..399 (the far
// service owns 320..383).
//
// A file is named relative to the node's preload_dir (ServerConfig::preload_dir); the node
// refuses (kPermissionDenied) when it has none, for absolute names, names with a ".."
// component, names that resolve outside the directory (symlinks included: openat2
// RESOLVE_BENEATH) and anything that is not a regular file. A load copies at most
// kMaxLoadBytes, so a handler's work is bounded (clients loop). Native little-endian structs
// pinned by static_asserts; every reserved field is 0.
// Thread safety: plain data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace farmem::paged::wire {

inline constexpr uint16_t kFirstOpcode = 384;
inline constexpr uint16_t kLastOpcode = 399;

enum class Op : uint16_t {
  kStat = 384,  // the file's size and modification time
  kLoad = 385,  // copy pages of the file into the node's region
};

inline constexpr uint32_t kMaxNameBytes = 1024;
inline constexpr uint64_t kMaxLoadBytes = 8ull << 20;
inline constexpr uint32_t kMinPageBytes = 4096;

// kStat request: StatRequest, then name_bytes of the name. Reply: StatReply.
struct StatRequest {
  uint32_t name_bytes;  // 1..kMaxNameBytes
  uint32_t reserved;
};
static_assert(sizeof(StatRequest) == 8);
static_assert(offsetof(StatRequest, reserved) == 4);

struct StatReply {
  uint64_t file_bytes;
  uint64_t mtime_ns;
};
static_assert(sizeof(StatReply) == 16);
static_assert(offsetof(StatReply, mtime_ns) == 8);

// kLoad request: LoadRequest, then name_bytes of the name. Destination page k (0 <= k <
// page_count) at dst_offset + k * page_bytes receives file page first_page + k * page_stride
// (bytes past the end of the file read as zero). Reply: LoadReply.
struct LoadRequest {
  uint64_t dst_offset;         // in the node's region, >= kRegionHeaderBytes, range inside it
  uint64_t first_page;         // file page for destination page 0
  uint64_t expect_file_bytes;  // the file must still have this size and mtime (else kAborted)
  uint64_t expect_mtime_ns;
  uint32_t page_stride;  // >= 1 (the node count when pages are striped)
  uint32_t page_count;   // >= 1, page_count * page_bytes <= kMaxLoadBytes
  uint32_t page_bytes;   // power of two >= kMinPageBytes
  uint32_t name_bytes;   // 1..kMaxNameBytes
};
static_assert(sizeof(LoadRequest) == 48);
static_assert(offsetof(LoadRequest, first_page) == 8);
static_assert(offsetof(LoadRequest, expect_file_bytes) == 16);
static_assert(offsetof(LoadRequest, expect_mtime_ns) == 24);
static_assert(offsetof(LoadRequest, page_stride) == 32);
static_assert(offsetof(LoadRequest, page_count) == 36);
static_assert(offsetof(LoadRequest, page_bytes) == 40);
static_assert(offsetof(LoadRequest, name_bytes) == 44);

struct LoadReply {
  uint64_t bytes_read;  // file bytes copied (the rest of the pages zero-filled)
};
static_assert(sizeof(LoadReply) == 8);

}  // namespace farmem::paged::wire
