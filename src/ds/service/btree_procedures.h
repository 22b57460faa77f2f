// The B+tree's served procedure as the node runs it (internal to src/ds/service; wire structs in
// farmem/ds/btree/served.h, contract in farmem/memnode/procedure.h).
//   served_scan  walks from the page it is given down to the leaf covering `from` and along the
//                leaves, copying records in key order into the reply, until `to`, the limit, the
//                end of the tree, the reply slot, the page budget or a pointer to another node
//                stops it; it writes nothing, so it runs on durable nodes too
// Thread safety: any worker thread; pages are copied word by word and validated like any
// reader's image (other clients write them meanwhile).
#pragma once

#include <cstddef>

#include "farmem/common/result.h"
#include "farmem/memnode/procedure.h"

namespace farmem::ds::btree {

Result<size_t> served_scan(const memnode::ProcedureCall& call);

}  // namespace farmem::ds::btree
