#include "farmem/memnode/node_record.h"

#include <fmt/format.h>

#include <cstring>

namespace farmem::memnode {

std::string encode_record(NodeRecordKind kind, uint64_t a, uint64_t b, uint64_t c,
                          std::string_view name, uint8_t flags) {
  const NodeRecord r = make_record(kind, a, b, c, name.size(), flags);
  std::string out(sizeof(r) + name.size(), '\0');
  std::memcpy(out.data(), &r, sizeof(r));
  if (!name.empty()) std::memcpy(out.data() + sizeof(r), name.data(), name.size());
  return out;
}

Result<NodeRecord> decode_record(std::string_view bytes, std::string_view* name, size_t* used) {
  NodeRecord r{};
  if (bytes.size() < sizeof(r)) {
    return Internal(
        fmt::format("a node record of {} bytes is shorter than its header", bytes.size()));
  }
  std::memcpy(&r, bytes.data(), sizeof(r));
  if (r.name_bytes > kMaxNodeRecordNameBytes || bytes.size() - sizeof(r) < r.name_bytes ||
      r.reserved != 0) {
    return Internal(
        fmt::format("a node record (kind {}) has a bad name length {}", r.kind, r.name_bytes));
  }
  *name = bytes.substr(sizeof(r), r.name_bytes);
  *used = sizeof(r) + r.name_bytes;
  return r;
}

}  // namespace farmem::memnode
