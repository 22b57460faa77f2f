#include "farmem/memnode/node_state.h"

#include <fmt/format.h>

#include <algorithm>

#include "farmem/common/check.h"
#include "farmem/common/log.h"
#include "farmem/storage/journal.h"

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
  // Nothing waits for this record: if it is lost, recovery releases what every session owned.
  if (auto logged = log_locked(NodeRecordKind::kReleaseOwner, session); !logged.ok()) {
    log::warn("node {}: session {} end not logged: {}", config.node_id, session,
              logged.status().to_string());
  }
  const auto [allocations, objects_bound] = release_session_locked(session);
  if (allocations > 0 || objects_bound > 0) {
    log::debug("node {}: session {} ended: {} allocations and {} ephemeral objects released",
               config.node_id, session, allocations, objects_bound);
  }
}

Result<uint64_t> NodeState::log_locked(NodeRecordKind kind, uint64_t a, uint64_t b, uint64_t c,
                                       std::string_view name, uint8_t flags) {
  if (journal == nullptr) return uint64_t{0};
  return journal->append(encode_record(kind, a, b, c, name, flags));
}

Result<uint64_t> NodeState::commit_locked(NodeRecordKind kind, uint64_t a, uint64_t b,
                                          std::string_view name, uint8_t flags) {
  FARMEM_ASSIGN_OR_RETURN(const uint64_t lsn, log_locked(kind, a, b, 0, name, flags));
  const Status applied = apply_locked(make_record(kind, a, b, 0, name.size(), flags), name);
  FARMEM_ASSERT(applied.ok(), "a checked change failed to apply");
  return lsn;
}

std::pair<size_t, size_t> NodeState::release_session_locked(uint64_t session) {
  const size_t allocations = heap.release(session);
  size_t objects_gone = 0;
  for (uint64_t id : objects.bound_to(session)) {
    if (destroy_object_locked(id).ok()) ++objects_gone;
  }
  return {allocations, objects_gone};
}

Status NodeState::apply_locked(const NodeRecord& r, std::string_view name) {
  switch (static_cast<NodeRecordKind>(r.kind)) {
    case NodeRecordKind::kAlloc:
      return heap.allocate_at(r.a, r.b, r.c);
    case NodeRecordKind::kFree:
      return heap.free(r.a, heap.owner_of(r.a));
    case NodeRecordKind::kReleaseOwner:
      release_session_locked(r.a);
      return OkStatus();
    case NodeRecordKind::kObjectCreate:
      return objects.restore(
          ObjectTable::Object{r.a, std::string(name), r.b, (r.flags & kNodeRecordPinned) != 0});
    case NodeRecordKind::kObjectPersist:
      return objects.persist(r.a);
    case NodeRecordKind::kObjectDestroy:
      return destroy_object_locked(r.a);
    case NodeRecordKind::kRootPublish:
      return roots.publish(name, r.a, /*replace=*/true, r.b);
    case NodeRecordKind::kRootRemove:
      return roots.remove(name);
    case NodeRecordKind::kRestart: {
      boot = std::max(boot, r.a);
      next_session.store((boot << kBootShift) + 1);
      std::vector<uint64_t> gone = heap.session_owners();
      objects.for_each([&](const ObjectTable::Object& o) {
        if (o.session != 0) gone.push_back(o.session);
      });
      for (uint64_t session : gone) release_session_locked(session);
      return OkStatus();
    }
    case NodeRecordKind::kNextObject:
      objects.set_next_counter(r.a);
      return OkStatus();
  }
  return Internal(fmt::format("node record of unknown kind {}", r.kind));
}

bool NodeState::session_open(uint64_t session) {
  std::lock_guard<std::mutex> lock(mu);
  return sessions.count(session) != 0;
}

}  // namespace farmem::memnode
