#include "farmem/memnode/root_table.h"

#include <fmt/format.h>

#include "farmem/fabric/wire.h"

namespace farmem::memnode {

Status RootTable::check_name(std::string_view name) {
  if (name.empty() || name.size() > wire::kMaxRootNameBytes) {
    return InvalidArgument(
        fmt::format("root name must be 1..{} bytes, got {}", wire::kMaxRootNameBytes, name.size()));
  }
  return OkStatus();
}

Status RootTable::check_publish(std::string_view name, bool replace) const {
  FARMEM_TRY(check_name(name));
  if (roots_.find(name) != roots_.end()) {
    if (!replace) return AlreadyExists(fmt::format("root '{}' already exists", name));
    return OkStatus();
  }
  if (roots_.size() >= kMaxRoots) {
    return ResourceExhausted(fmt::format("root table is full ({} names)", kMaxRoots));
  }
  return OkStatus();
}

Status RootTable::publish(std::string_view name, uint64_t address, bool replace, uint64_t owner) {
  FARMEM_TRY(check_publish(name, replace));
  auto it = roots_.find(name);
  if (it != roots_.end()) {
    it->second = Root{address, owner};
    return OkStatus();
  }
  roots_.emplace(std::string(name), Root{address, owner});
  return OkStatus();
}

Result<uint64_t> RootTable::lookup(std::string_view name) const {
  FARMEM_TRY(check_name(name));
  auto it = roots_.find(name);
  if (it == roots_.end()) return NotFound(fmt::format("no root named '{}'", name));
  return it->second.address;
}

Status RootTable::remove(std::string_view name) {
  FARMEM_TRY(check_name(name));
  auto it = roots_.find(name);
  if (it == roots_.end()) return NotFound(fmt::format("no root named '{}'", name));
  roots_.erase(it);
  return OkStatus();
}

}  // namespace farmem::memnode

namespace farmem::memnode {

size_t RootTable::remove_owned(uint64_t owner) {
  size_t n = 0;
  for (auto it = roots_.begin(); it != roots_.end();) {
    if (owner != 0 && it->second.owner == owner) {
      it = roots_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

}  // namespace farmem::memnode
