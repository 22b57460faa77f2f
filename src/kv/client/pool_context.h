// PoolContext: what the pools of one Store share and use of it (the seam between kv::Store and
// kv::Pool): the thread's client, its request coalescer, its location cache and its counters,
// and the RPC path of every pool request that is not a coalesced key operation. The Store owns
// one and gives each Pool it opens a pointer to it; neither class reaches into the other.
//
// A plain struct of the objects themselves, so that a Pool reaches each of them through one
// pointer, as it did through its Store. Preconditions: it outlives the Store's pools (the Store
// destroys it last). Thread safety: the Store's thread (the ThreadClient's) only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/status.h"
#include "farmem/kv/coalescer.h"
#include "farmem/kv/location_cache.h"
#include "farmem/kv/store.h"
#include "farmem/kv/types.h"
#include "farmem/kv/wire.h"
#include "farmem/runtime/task.h"

namespace farmem::kv {

struct PoolContext {
  // The options were checked by Store::open.
  PoolContext(client::ThreadClient* client, const StoreOptions& options);
  PoolContext(const PoolContext&) = delete;
  PoolContext& operator=(const PoolContext&) = delete;

  // An RPC to `node` (the client's deadline); the reply lands in *reply, resized to its length.
  runtime::Task<Status> call(uint16_t node, wire::KvOpcode opcode, std::string request,
                             std::vector<uint8_t>* reply, uint32_t reply_capacity);
  // Whether gets on `node` try the one-sided read first (the mode, resolved for that node).
  bool one_sided(uint16_t node) const;
  // The client's op_timeout_ms in nanoseconds: the bound of an operation of several requests.
  uint64_t op_timeout_ns() const;

  client::ThreadClient* const client;
  const KvMode mode;
  Coalescer coalescer;
  LocationCache cache;
  StoreStats stats;  // the Store's counters, but the coalescing figures (the coalescer's)
};

}  // namespace farmem::kv
