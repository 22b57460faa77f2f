// Persisting a structure's writes on durable memory nodes (memnode: --data-dir).
//
// A one-sided structure makes its writes durable at its commit points with
// ThreadClient::persist, and only where the node keeps data at all (Cluster::durable): on a
// volatile node these calls return at once without a round trip. A structure whose every
// protocol step is persisted before the next one starts leaves, after a node's crash and
// restart, a state that a client's death at some step could have left too (plus, at most, part
// of each client's step in flight), which its recovery already repairs: sessions of the node's
// earlier life read as ended (memnode/node_state.h, boot numbers).
// Thread safety: the ThreadClient's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/client/global_address.h"
#include "farmem/client/thread_client.h"
#include "farmem/runtime/task.h"

namespace farmem::ds {

// Whether writes to `node` need persisting (its welcome said durable).
inline bool node_durable(client::ThreadClient* c, uint16_t node) {
  return c->cluster().durable(node);
}

// Whether any node of the cluster is durable (a structure spanning nodes skips building its
// persist lists when none is).
inline bool any_node_durable(client::ThreadClient* c) {
  for (const client::NodeInfo& n : c->cluster().nodes()) {
    if (n.durable) return true;
  }
  return false;
}

// A range of far memory to persist.
struct PersistRange {
  GlobalAddress addr;
  uint64_t bytes = 0;
};

// Persists every range on a durable node: one persist round trip per node (more when a node has
// over wire::kMaxPersistRanges ranges), each node's ranges logged in the order given; ranges on
// volatile nodes are skipped. `ordered`: ThreadClient::persist's (no wait for the sync).
runtime::Task<Status> persist_all(client::ThreadClient* c, const std::vector<PersistRange>& ranges,
                                  bool ordered = false);

// Persists [addr, addr + bytes) when its node is durable; OK at once otherwise.
runtime::Task<Status> persist_if_durable(client::ThreadClient* c, GlobalAddress addr,
                                         uint64_t bytes);

// A write, then persist_if_durable of what it wrote (on a durable node both in one Batch: one
// message over TCP).
runtime::Task<Status> durable_write(client::ThreadClient* c, GlobalAddress addr, const void* src,
                                    size_t bytes);

}  // namespace farmem::ds
