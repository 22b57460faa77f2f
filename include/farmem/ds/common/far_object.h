// FarObject: the lifetime of a named far-memory data structure across the memory nodes.
//
// A structure ("hash/users", "btree/orders", ...) owns one memory-node object per node
// (memnode/object_table.h); everything it allocates on a node is owned by that object, so it
// stays when the creating client goes and comes back, all of it, when the structure is
// destroyed. Its root (name -> address, on the node the name hashes to) is owned by the object
// too and disappears with it.
//
// create() makes the objects ephemeral: bound to the creating thread's sessions, so a create
// that fails half-way, or whose process dies, leaves nothing behind. commit() publishes the
// root and, unless the structure is temporary, persists the objects; a temporary structure
// (benchmarks, scratch tables) lives exactly as long as its creator's sessions.
//
// destroy() frees everything; callers must ensure no other handle uses the structure any more
// (other handles' later operations fail or read freed memory).
// Thread safety: a value owned by one thread; the calls are coroutines on that thread's client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/runtime/task.h"

namespace farmem::ds {

class FarObject {
 public:
  FarObject() = default;
  // Creates the (ephemeral) node objects named `name` on every node. kAlreadyExists when a
  // structure of that name exists.
  static runtime::Task<Result<FarObject>> create(client::ThreadClient* c, std::string name,
                                                 bool temporary);
  // Opens an existing structure's objects (kNotFound when there is none), skipping nodes named
  // down (client::ClientOptions::down_nodes).
  static runtime::Task<Result<FarObject>> open(client::ThreadClient* c, std::string name);

  // Publishes the root (owned by the object on the root's node) and persists the objects
  // unless temporary.
  runtime::Task<Status> commit(client::ThreadClient* c, GlobalAddress root);
  // Frees every allocation of the structure on every node and removes its root. Best effort
  // over all nodes; the first error is returned.
  runtime::Task<Status> destroy(client::ThreadClient* c);
  // Opens the structure named `name` and destroys it; when there is none, kNotFound with
  // `not_found` as its message (e.g. "no B+tree named 'x'").
  static runtime::Task<Status> destroy_named(client::ThreadClient* c, std::string name,
                                             std::string not_found);

  const std::string& name() const { return name_; }
  bool temporary() const { return temporary_; }
  // The owner id to allocate with on `node` (wire::kOwnerSession if unknown).
  uint64_t owner(uint16_t node) const;
  bool valid() const { return !ids_.empty(); }

 private:
  std::string name_;
  bool temporary_ = false;
  std::vector<std::pair<uint16_t, uint64_t>> ids_;  // node -> object id
};

}  // namespace farmem::ds
