#include "farmem/memnode/object_table.h"

#include <fmt/format.h>

#include "farmem/common/check.h"
#include "farmem/fabric/wire.h"

namespace farmem::memnode {

Status ObjectTable::check_name(std::string_view name) {
  if (name.empty() || name.size() > wire::kMaxObjectNameBytes) {
    return InvalidArgument(fmt::format("object name must be 1..{} bytes, got {}",
                                       wire::kMaxObjectNameBytes, name.size()));
  }
  return OkStatus();
}

Result<ObjectTable::Object> ObjectTable::create(std::string_view name, uint64_t ephemeral_session,
                                                bool pinned) {
  FARMEM_TRY(check_name(name));
  if (by_name_.count(name) != 0) {
    return AlreadyExists(fmt::format("an object named '{}' already exists", name));
  }
  if (by_id_.size() >= kMaxObjects) {
    return ResourceExhausted(fmt::format("object table is full ({} objects)", kMaxObjects));
  }
  Object o{wire::kObjectOwnerBit | next_++, std::string(name), ephemeral_session, pinned};
  const bool named = by_name_.emplace(o.name, o.id).second;
  const bool numbered = by_id_.emplace(o.id, o).second;
  FARMEM_ASSERT(named && numbered, "object names and ids must be unique");
  return o;
}

Status ObjectTable::restore(const Object& o) {
  FARMEM_TRY(check_name(o.name));
  if ((o.id & wire::kObjectOwnerBit) == 0 || by_id_.count(o.id) != 0 ||
      by_name_.count(o.name) != 0) {
    return Internal(fmt::format("object '{}' ({:#x}) cannot be restored twice", o.name, o.id));
  }
  by_name_.emplace(o.name, o.id);
  by_id_.emplace(o.id, o);
  next_ = std::max(next_, (o.id & ~wire::kObjectOwnerBit) + 1);
  return OkStatus();
}

Result<ObjectTable::Object> ObjectTable::open(std::string_view name) const {
  FARMEM_TRY(check_name(name));
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return NotFound(fmt::format("no object named '{}'", name));
  auto o = by_id_.find(it->second);
  FARMEM_ASSERT(o != by_id_.end(), "a named object has no id entry");
  return o->second;
}

Result<ObjectTable::Object> ObjectTable::find(uint64_t id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return NotFound(fmt::format("no object with id {:#x}", id));
  return it->second;
}

Status ObjectTable::persist(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return NotFound(fmt::format("no object with id {:#x}", id));
  it->second.session = 0;
  return OkStatus();
}

Status ObjectTable::remove(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return NotFound(fmt::format("no object with id {:#x}", id));
  const size_t erased = by_name_.erase(it->second.name);
  FARMEM_ASSERT(erased == 1, "an object has no name entry");
  by_id_.erase(it);
  return OkStatus();
}

std::vector<uint64_t> ObjectTable::bound_to(uint64_t session) const {
  std::vector<uint64_t> ids;
  for (const auto& [id, o] : by_id_) {
    if (o.session == session) ids.push_back(id);
  }
  return ids;
}

}  // namespace farmem::memnode
