#include "farmem/ds/common/far_object.h"

#include <fmt/format.h>

#include "farmem/client/cluster.h"

namespace farmem::ds {

using runtime::Task;

Task<Result<FarObject>> FarObject::create(client::ThreadClient* c, std::string name,
                                          bool temporary) {
  FarObject o;
  o.name_ = std::move(name);
  o.temporary_ = temporary;
  for (const client::NodeInfo& n : c->cluster().nodes()) {
    auto id = co_await c->object_create(n.node_id, o.name_, /*ephemeral=*/true);
    if (!id.ok()) {
      (void)co_await o.destroy(c);  // what was created so far
      if (id.status().code() == StatusCode::kAlreadyExists) {
        co_return AlreadyExists(fmt::format("a structure named '{}' already exists", o.name_));
      }
      co_return id.status();
    }
    o.ids_.emplace_back(n.node_id, *id);
  }
  co_return o;
}

Task<Result<FarObject>> FarObject::open(client::ThreadClient* c, std::string name) {
  FarObject o;
  o.name_ = std::move(name);
  for (const client::NodeInfo& n : c->cluster().nodes()) {
    if (n.down) continue;  // named down: its part is unreachable (and never used)
    auto id = co_await c->object_open(n.node_id, o.name_);
    FARMEM_CO_TRY(id);
    o.ids_.emplace_back(n.node_id, *id);
  }
  co_return o;
}

Task<Status> FarObject::commit(client::ThreadClient* c, GlobalAddress root) {
  const uint16_t home = c->cluster().root_node(name_);
  Status s = co_await c->publish_root(name_, root, /*replace=*/false, owner(home));
  FARMEM_CO_TRY(s);
  if (temporary_) co_return OkStatus();
  for (const auto& [node, id] : ids_) {
    Status p = co_await c->object_persist(node, id);
    FARMEM_CO_TRY(p);
  }
  co_return OkStatus();
}

Task<Status> FarObject::destroy(client::ThreadClient* c) {
  Status first;
  for (const auto& [node, id] : ids_) {
    Status s = co_await c->object_destroy(node, id);
    if (!s.ok() && first.ok()) first = s;
  }
  ids_.clear();
  co_return first;
}

Task<Status> FarObject::destroy_named(client::ThreadClient* c, std::string name,
                                      std::string not_found) {
  auto object = co_await open(c, std::move(name));
  if (!object.ok()) {
    if (object.status().code() == StatusCode::kNotFound) co_return NotFound(not_found);
    co_return object.status();
  }
  Status s = co_await object->destroy(c);
  co_return s;
}

uint64_t FarObject::owner(uint16_t node) const {
  for (const auto& [n, id] : ids_) {
    if (n == node) return id;
  }
  return wire::kOwnerSession;
}

}  // namespace farmem::ds
