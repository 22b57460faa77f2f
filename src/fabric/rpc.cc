// The RPC client half lives in Endpoint::post_rpc and Worker::on_rpc_reply; the server half in
// memnode/server.cc. This file holds the validation shared by both ends.
#include "farmem/fabric/rpc.h"

#include <fmt/format.h>

#include <algorithm>

namespace farmem::fabric {

Status validate_request_header(const void* header, size_t header_bytes, size_t data_bytes,
                               wire::RpcHeader* out) {
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out, header, std::min(header_bytes, sizeof(*out)));
  if (header_bytes != sizeof(wire::RpcHeader)) {
    return ProtocolError(
        fmt::format("RPC header is {} bytes, expected {}", header_bytes, sizeof(wire::RpcHeader)));
  }
  if (out->magic != wire::kRpcMagic) {
    return ProtocolError(fmt::format("bad RPC magic 0x{:08x}", out->magic));
  }
  if (out->version != wire::kProtocolVersion) {
    return VersionMismatch(fmt::format(
        "client speaks farmem protocol v{}, this memory node speaks v{}; upgrade the older side",
        out->version, wire::kProtocolVersion));
  }
  if (out->status != 0 || out->reserved != 0) {
    return ProtocolError("RPC request with non-zero status or reserved header fields");
  }
  if (out->payload_bytes != data_bytes) {
    return ProtocolError(fmt::format("RPC header announces {} payload bytes but {} arrived",
                                     out->payload_bytes, data_bytes));
  }
  if (data_bytes > wire::kMaxRpcPayloadBytes) {
    return InvalidArgument(fmt::format("RPC payload of {} bytes exceeds the {}-byte maximum",
                                       data_bytes, wire::kMaxRpcPayloadBytes));
  }
  return OkStatus();
}

}  // namespace farmem::fabric
