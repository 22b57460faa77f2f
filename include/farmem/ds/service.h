// The data structures' library on the memory node: the served procedures of the one-sided
// structures (today the hash table's, ds/hash/served.h), registered through the service door
// (memnode/service.h) as a service without RPCs of its own. farmem-server registers it; a node
// without it answers the structures' calls kNotFound and their clients stay one-sided.
// Thread safety: the service is shared by all workers; its procedures run on any of them.
#pragma once

#include <memory>

#include "farmem/memnode/service.h"

namespace farmem::ds {

std::shared_ptr<memnode::Service> make_ds_service();

}  // namespace farmem::ds
