// Served one-sided operations (docs/formats/memops.md): the memory node performs a client's
// reads, writes, CAS, FAA, persists and calls of registered procedures (memnode/procedure.h) on
// its own region and returns the results in one reply. Used
// over transports where UCX would emulate one-sided operations with messages anyway (TCP), so that
// a batch costs one round trip, a late reply is simply dropped, and UCX's software RMA path on
// the node is never exercised.
//
// execute_memops validates the whole request (sizes, kinds, reserved fields, bounds, the
// reserved region header, alignment) before performing anything: a malformed request changes
// nothing. Atomics are CPU atomics on the region, atomic with respect to direct (shared-memory)
// clients and UCX's own atomics. Thread safety: pure except for the region bytes it touches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "farmem/common/status.h"
#include "farmem/memnode/procedure.h"

namespace farmem::memnode {

// A persist operation's range as it was when the message reached it.
struct PersistCopy {
  uint64_t offset;
  std::string bytes;
};

// Where a request runs: the region (this process's mapping) and the procedures kCall operations
// may run (null: none; a call then answers kNotFound).
struct MemopsTarget {
  uint8_t* region = nullptr;
  uint64_t region_bytes = 0;
  const ProcedureTable* procedures = nullptr;
};

// A call runs its procedure at its place in the message (memnode/procedure.h); the procedure's
// failure is the call's result, in its reply slot, and does not fail the message. `persists`
// given means a durable node (see below), which procedures are told.
Status execute_memops(const MemopsTarget& target, const uint8_t* request, size_t request_bytes,
                      std::string* reply, std::vector<PersistCopy>* persists = nullptr);

// The same without procedures. `region` is this process's mapping of the exported region
// (region_bytes long). With `persists` (a durable node), each persist operation appends a copy of
// its range, taken at its place in the message; without, persists are checked and do nothing.
Status execute_memops(uint8_t* region, uint64_t region_bytes, const uint8_t* request,
                      size_t request_bytes, std::string* reply,
                      std::vector<PersistCopy>* persists = nullptr);

}  // namespace farmem::memnode
