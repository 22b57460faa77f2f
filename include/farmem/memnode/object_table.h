// ObjectTable: the memory node's named objects, the owners of shared allocations.
//
// An object is a name (1..128 bytes) with a node-local id (wire::kObjectOwnerBit | n). A data
// structure creates one object per node it uses and allocates with the object as owner; its
// memory stays until the object is destroyed. An ephemeral object is bound to the session that
// created it and is destroyed when that session ends (a temporary table, or a create that
// never finished); persist() unbinds it. A pinned object belongs to a service of the node (a kv
// pool's memory): clients may not destroy, persist, free from or allocate into it through the
// core RPCs; only its service does. Bounded at kMaxObjects.
// Thread safety: not thread-safe; the server serialises calls (Server::mu_).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "farmem/common/result.h"

namespace farmem::memnode {

class ObjectTable {
 public:
  static constexpr size_t kMaxObjects = 65536;
  struct Object {
    uint64_t id = 0;
    std::string name;
    uint64_t session = 0;  // the binding session while ephemeral, else 0
    bool pinned = false;   // owned by a service: not for the core RPCs to touch
  };

  Result<Object> create(std::string_view name, uint64_t ephemeral_session, bool pinned = false);
  // Puts back an object a journal recorded, with its id (recovery).
  Status restore(const Object& object);
  // The counter behind ids (snapshots keep it so that ids are never reused).
  uint64_t next_counter() const { return next_; }
  void set_next_counter(uint64_t next) { next_ = std::max(next_, next); }
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [id, o] : by_id_) f(o);
  }
  Result<Object> open(std::string_view name) const;
  Result<Object> find(uint64_t id) const;
  Status persist(uint64_t id);
  Status remove(uint64_t id);
  // Ids of the ephemeral objects bound to `session`.
  std::vector<uint64_t> bound_to(uint64_t session) const;
  size_t size() const { return by_id_.size(); }
  static Status check_name(std::string_view name);

 private:
  uint64_t next_ = 1;
  std::map<std::string, uint64_t, std::less<>> by_name_;
  std::unordered_map<uint64_t, Object> by_id_;
};

}  // namespace farmem::memnode
