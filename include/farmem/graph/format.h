// The .fmg graph file (docs/formats/graph.md): a 4 KiB header, then page-aligned sections
// (offsets: u64 x (V+1); neighbours: u32 x E; weights: f32 x E when weighted), each starting at
// a multiple of kFmgSectionAlign so that a memory node can preload each section into a region.
//
// This is a wire format (memory nodes preload it): every field is native little-endian and
// pinned by the static_asserts below. Thread safety: plain values and free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "farmem/common/result.h"

namespace farmem::graph {

inline constexpr uint64_t kFmgMagic = 0x3130474d474d4646ull;  // "FFMGMG01" little-endian
inline constexpr uint32_t kFmgVersion = 1;
inline constexpr uint64_t kFmgSectionAlign = 1ull << 20;  // 1 MiB
inline constexpr uint64_t kFmgHeaderBytes = 4096;
inline constexpr uint64_t kFmgMaxVertices = (1ull << 32) - 1;  // ids are u32, < V

// Header flags.
inline constexpr uint32_t kFmgWeighted = 1u << 0;   // a weights section follows neighbours
inline constexpr uint32_t kFmgSymmetric = 1u << 1;  // (u,v) present iff (v,u) present
inline constexpr uint32_t kFmgKnownFlags = kFmgWeighted | kFmgSymmetric;

// Sections, in file order.
enum class FmgSection : uint32_t { kOffsets = 0, kNeighbours = 1, kWeights = 2 };
inline constexpr uint32_t kFmgSections = 3;

struct FmgSectionEntry {
  uint64_t offset;  // bytes from the file's start; a multiple of kFmgSectionAlign (0 if absent)
  uint64_t bytes;   // the section's payload length (without padding)
};
static_assert(sizeof(FmgSectionEntry) == 16);
static_assert(offsetof(FmgSectionEntry, bytes) == 8);

struct FmgHeader {
  uint64_t magic;                          // kFmgMagic
  uint32_t version;                        // kFmgVersion
  uint32_t flags;                          // kFmgWeighted | kFmgSymmetric
  uint64_t vertices;                       // V
  uint64_t edges;                          // E (directed entries: a symmetric edge counts twice)
  uint32_t header_bytes;                   // kFmgHeaderBytes
  uint32_t section_align;                  // kFmgSectionAlign
  uint64_t file_bytes;                     // total length, a multiple of kFmgSectionAlign
  FmgSectionEntry sections[kFmgSections];  // indexed by FmgSection
  uint8_t reserved[4096 - 96];             // zero
};
static_assert(sizeof(FmgHeader) == kFmgHeaderBytes);
static_assert(offsetof(FmgHeader, magic) == 0);
static_assert(offsetof(FmgHeader, version) == 8);
static_assert(offsetof(FmgHeader, flags) == 12);
static_assert(offsetof(FmgHeader, vertices) == 16);
static_assert(offsetof(FmgHeader, edges) == 24);
static_assert(offsetof(FmgHeader, header_bytes) == 32);
static_assert(offsetof(FmgHeader, section_align) == 36);
static_assert(offsetof(FmgHeader, file_bytes) == 40);
static_assert(offsetof(FmgHeader, sections) == 48);
static_assert(offsetof(FmgHeader, reserved) == 96);
static_assert(kFmgSectionAlign % 65536 == 0, "sections must start on 64 KiB page boundaries");

inline uint64_t fmg_align_up(uint64_t bytes) {
  return (bytes + kFmgSectionAlign - 1) / kFmgSectionAlign * kFmgSectionAlign;
}

// A header for V vertices and E edges with every field (sections, file_bytes) filled.
FmgHeader make_fmg_header(uint64_t vertices, uint64_t edges, uint32_t flags);

// Checks a header read from a file of file_bytes bytes: magic, version, flags, sizes, section
// offsets, alignment and bounds. kInvalidArgument (kVersionMismatch for a version) naming the
// first field that is wrong.
Status validate_fmg_header(const FmgHeader& h, uint64_t file_bytes);

// Reads and validates the header of `path`.
Result<FmgHeader> read_fmg_header(const std::string& path);

}  // namespace farmem::graph
