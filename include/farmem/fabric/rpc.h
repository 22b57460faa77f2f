// Shared validation of RPC messages (format: docs/formats/rpc.md).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstring>

#include "farmem/common/status.h"
#include "farmem/fabric/wire.h"

namespace farmem::fabric {

// Checks an incoming request's AM header and payload size; fills *out when the header has the
// right size (even if a later check fails, so the caller can still reply with the request id).
Status validate_request_header(const void* header, size_t header_bytes, size_t data_bytes,
                               wire::RpcHeader* out);

}  // namespace farmem::fabric
