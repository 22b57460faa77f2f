// Served procedures: small, bounded functions that node-side libraries register so that a client
// can run several dependent steps on the node's region inside one served message (a kCall
// operation of kMemOps, docs/formats/memops.md "Calls"): Storm's one-two-sided lesson for
// transports where every one-sided operation is a round trip anyway (TCP). The memory node knows
// no data structure: a structure's library registers its procedures through its Service
// (Service::procedures), each with an id from the range docs/formats/memops.md assigns it.
//
// Contract for a procedure:
//  - it runs on a worker thread, in the middle of a kMemOps message (after the operations before
//    it, before those after it), and must be short and bounded: no blocking, no allocation of
//    node memory, no unbounded loops; it touches nothing but region bytes it checked to lie
//    inside the region, and never writes below wire::kRegionHeaderBytes;
//  - it validates its arguments before changing anything: a call that fails changed nothing
//    (other than by atomic operations whose effect it reports as a result);
//  - region words other clients may change concurrently (shared memory, other workers) are
//    changed only by CPU atomics, as served CAS and FAA are;
//  - on a durable node (ProcedureCall::durable) a procedure that writes must either refuse or
//    make its writes durable itself; the ones registered today refuse (clients fall back).
// Thread safety: a ProcedureTable is built before the server starts and only read afterwards,
// from every worker thread; procedures may run concurrently on several workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/common/status.h"

namespace farmem::memnode {

// One call as a procedure sees it.
struct ProcedureCall {
  uint8_t* region = nullptr;  // this process's mapping of the exported region
  uint64_t region_bytes = 0;
  bool durable = false;           // the node is durable (its region's writes need persisting)
  const uint8_t* args = nullptr;  // the call's argument bytes (not aligned)
  size_t args_bytes = 0;
  uint8_t* out = nullptr;  // where the result goes (8-byte aligned), out_capacity bytes
  size_t out_capacity = 0;
};

// Returns how many bytes of `out` hold the result, or the error the client receives.
using ProcedureFn = Result<size_t> (*)(const ProcedureCall& call);

struct Procedure {
  uint16_t id = 0;  // 1..65535, unique on the node
  std::string_view name;
  ProcedureFn fn = nullptr;
};

class ProcedureTable {
 public:
  // kInvalidArgument for id 0, a null function or an id already taken.
  Status add(const Procedure& p);
  // The procedure with this id, or null.
  const Procedure* find(uint64_t id) const;
  size_t size() const { return procedures_.size(); }

 private:
  std::vector<Procedure> procedures_;  // sorted by id
};

}  // namespace farmem::memnode
