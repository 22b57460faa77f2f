#include "farmem/client/call_result.h"

#include <fmt/format.h>

#include <cstring>

#include "farmem/fabric/wire.h"

namespace farmem::client {

Result<std::string_view> call_result(const void* slot, size_t slot_bytes) {
  wire::CallReplyHeader h;
  if (slot_bytes < sizeof(h)) return ProtocolError("call reply slot shorter than its header");
  std::memcpy(&h, slot, sizeof(h));
  if (h.reserved != 0 || h.code > static_cast<uint16_t>(kLastStatusCode) ||
      h.bytes > slot_bytes - sizeof(h)) {
    return ProtocolError(fmt::format("malformed call reply (code {}, {} bytes in a {}-byte slot)",
                                     h.code, h.bytes, slot_bytes));
  }
  const std::string_view body(static_cast<const char*>(slot) + sizeof(h), h.bytes);
  if (h.code != 0) return Status(static_cast<StatusCode>(h.code), body);
  return body;
}

}  // namespace farmem::client
