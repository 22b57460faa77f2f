// MemopsRequest: a kMemOps request built operation by operation, for the memops unit tests
// (docs/formats/memops.md): each operation's MemOp, then its data padded to 8 bytes, the header's
// count kept current.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "farmem/fabric/wire.h"

namespace farmem::memnode {

struct MemopsRequest {
  std::string bytes = std::string(sizeof(wire::MemOpsHeader), '\0');
  uint32_t count = 0;

  // Appends `o`, then `data` (a write's or call's bytes) padded to a multiple of 8.
  MemopsRequest& add(const wire::MemOp& o, std::string_view data = {}) {
    bytes.append(reinterpret_cast<const char*>(&o), sizeof(o));
    bytes.append(data);
    bytes.append(wire::pad8(static_cast<uint32_t>(data.size())) - data.size(), '\0');
    const wire::MemOpsHeader h{++count, 0};
    std::memcpy(bytes.data(), &h, sizeof(h));
    return *this;
  }
  // An operation without operands.
  MemopsRequest& op(wire::MemOpKind kind, uint64_t offset, uint32_t n, std::string_view data = {}) {
    return add({static_cast<uint8_t>(kind), 0, 0, n, offset, 0, 0}, data);
  }
};

}  // namespace farmem::memnode
