#include "farmem/graph/format.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace farmem::graph {

FmgHeader make_fmg_header(uint64_t vertices, uint64_t edges, uint32_t flags) {
  FmgHeader h;
  std::memset(&h, 0, sizeof(h));
  h.magic = kFmgMagic;
  h.version = kFmgVersion;
  h.flags = flags;
  h.vertices = vertices;
  h.edges = edges;
  h.header_bytes = kFmgHeaderBytes;
  h.section_align = kFmgSectionAlign;
  uint64_t at = fmg_align_up(kFmgHeaderBytes);
  auto place = [&](FmgSection s, uint64_t bytes) {
    h.sections[static_cast<uint32_t>(s)] = {at, bytes};
    at += fmg_align_up(bytes);
  };
  place(FmgSection::kOffsets, (vertices + 1) * sizeof(uint64_t));
  place(FmgSection::kNeighbours, edges * sizeof(uint32_t));
  if (flags & kFmgWeighted) place(FmgSection::kWeights, edges * sizeof(float));
  h.file_bytes = at;
  return h;
}

Status validate_fmg_header(const FmgHeader& h, uint64_t file_bytes) {
  if (h.magic != kFmgMagic) return InvalidArgument("not a .fmg file (bad magic)");
  if (h.version != kFmgVersion) {
    return VersionMismatch(
        fmt::format(".fmg version {} (this build reads {})", h.version, kFmgVersion));
  }
  if (h.flags & ~kFmgKnownFlags) {
    return InvalidArgument(fmt::format(".fmg flags {:#x} has unknown bits", h.flags));
  }
  if (h.header_bytes != kFmgHeaderBytes || h.section_align != kFmgSectionAlign) {
    return InvalidArgument(".fmg header_bytes or section_align is not this version's");
  }
  if (h.vertices > kFmgMaxVertices || h.edges > (1ull << 40)) {
    return InvalidArgument(
        fmt::format(".fmg counts out of range: {} vertices, {} edges", h.vertices, h.edges));
  }
  for (uint8_t b : h.reserved) {
    if (b != 0) return InvalidArgument(".fmg reserved header bytes are not zero");
  }
  const FmgHeader want = make_fmg_header(h.vertices, h.edges, h.flags);
  for (uint32_t s = 0; s < kFmgSections; ++s) {
    if (h.sections[s].offset != want.sections[s].offset ||
        h.sections[s].bytes != want.sections[s].bytes) {
      return InvalidArgument(
          fmt::format(".fmg section {} at {} ({} bytes) does not match the "
                      "counts (expected {} at {})",
                      s, h.sections[s].offset, h.sections[s].bytes, want.sections[s].bytes,
                      want.sections[s].offset));
    }
  }
  if (h.file_bytes != want.file_bytes || file_bytes < h.file_bytes) {
    return InvalidArgument(fmt::format(".fmg file is {} bytes, its header says {} (expected {})",
                                       file_bytes, h.file_bytes, want.file_bytes));
  }
  return OkStatus();
}

Result<FmgHeader> read_fmg_header(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  FmgHeader h;
  struct stat st;
  const ssize_t n = ::pread(fd, &h, sizeof(h), 0);
  const int fs = ::fstat(fd, &st);
  ::close(fd);
  if (fs != 0 || n != static_cast<ssize_t>(sizeof(h))) {
    return InvalidArgument(fmt::format("{}: shorter than a .fmg header", path));
  }
  Status s = validate_fmg_header(h, static_cast<uint64_t>(st.st_size));
  if (!s.ok()) return Status(s.code(), fmt::format("{}: {}", path, s.message()));
  return h;
}

}  // namespace farmem::graph
