// The hash table's procedures as the node runs them (internal to src/ds/service; wire structs in
// farmem/ds/hash/served.h, contract in farmem/memnode/procedure.h).
//   served_get     finds the key's committed slot and returns its value (kFound), or why not
//   served_update  swings the key's committed slot to the new word by CAS (kReplaced), retrying
//                  a lost CAS up to kMaxServedCasAttempts times; refused on a durable node
//   served_insert  claims a free slot as pending, re-reads, and commits it when no other slot
//                  holds the key (the one-sided insert's protocol, on the node); refused on a
//                  durable node
// Thread safety: any worker thread; region words change only by CAS.
#pragma once

#include <cstddef>

#include "farmem/common/result.h"
#include "farmem/common/status.h"
#include "farmem/memnode/procedure.h"

namespace farmem::ds::hash {

Result<size_t> served_get(const memnode::ProcedureCall& call);
Result<size_t> served_update(const memnode::ProcedureCall& call);
Result<size_t> served_insert(const memnode::ProcedureCall& call);

}  // namespace farmem::ds::hash
