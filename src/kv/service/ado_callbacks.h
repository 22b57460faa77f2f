// The store callbacks of an ADO (ado::CallbackOp, docs/formats/ado.md "Callbacks"): what a
// plugin asks of its pool while it runs (create, open, erase, resize and unlock keys, allocate
// and free pool memory, find, iterate, pool info), answered at once on the pool's worker.
//
// Everything in a callback comes from the ADO process and is checked here: a bad request is an
// error for the plugin (a Status), never an assertion. Keys a callback locks inside an
// invocation are kept by that invocation's job (released when it ends); outside one (job null)
// no lock is kept. Thread safety: the pool's worker thread.
#pragma once

#include <cstdint>
#include <string>

#include "../ado/channel.h"
#include "ado_pool.h"
#include "farmem/common/result.h"
#include "server_pool.h"

namespace farmem::kv::service {

// Answers callback `c` of the ADO of `ado` on `pool`, made by the running job `job` (null:
// outside an invocation): the reply's payload, or the error the plugin gets.
Result<std::string> answer_callback(ServerPool& pool, PoolAdo& ado, AdoJob* job,
                                    const ado::Callback& c, uint64_t now_ns);

}  // namespace farmem::kv::service
