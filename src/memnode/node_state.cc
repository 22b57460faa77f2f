#include "farmem/memnode/node_state.h"

#include "farmem/common/log.h"

namespace farmem::memnode {

Status NodeState::destroy_object_locked(uint64_t id) {
  FARMEM_TRY(objects.remove(id));
  heap.release(id);
  roots.remove_owned(id);
  return OkStatus();
}

void NodeState::end_session(uint64_t session) {
  std::lock_guard<std::mutex> lock(mu);
  if (sessions.erase(session) == 0) return;
  size_t freed = heap.release(session);
  size_t objects_gone = 0;
  for (uint64_t id : objects.bound_to(session)) {
    if (destroy_object_locked(id).ok()) ++objects_gone;
  }
  if (freed > 0 || objects_gone > 0) {
    log::debug("node {}: session {} ended: {} allocations and {} ephemeral objects released",
               config.node_id, session, freed, objects_gone);
  }
}

bool NodeState::session_open(uint64_t session) {
  std::lock_guard<std::mutex> lock(mu);
  return sessions.count(session) != 0;
}

}  // namespace farmem::memnode
