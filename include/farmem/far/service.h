// The far service: the memory node's side of far containers' remote compute (far/wire.h,
// docs/formats/far.md), registered through the service door (memnode/service.h) by
// farmem-server. Handlers run on the worker that received the request, never block, and scan
// at most wire::kMaxScanElements elements per request; every request is validated in full
// (ranges in the region and outside its header, counts, sizes, reserved fields) before any
// memory is touched, and a bad one gets kInvalidArgument / kOutOfRange / kProtocolError.
// Thread safety: handlers are pure functions of (region, request); the region is read (and,
// for gather, written) concurrently with clients' one-sided operations, as a one-sided access
// would be.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/common/status.h"
#include "farmem/memnode/service.h"

namespace farmem::far {

std::shared_ptr<memnode::Service> make_far_service();

// One request: `opcode` in wire::kFirstOpcode..kLastOpcode, the payload as received. The reply
// payload goes to *out.
Status handle_far_request(uint8_t* region, uint64_t region_bytes, uint16_t opcode,
                          const uint8_t* payload, size_t bytes, std::string* out);

}  // namespace farmem::far
