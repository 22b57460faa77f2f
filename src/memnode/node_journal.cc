#include "farmem/memnode/node_journal.h"

#include <fmt/format.h>

#include <mutex>

namespace farmem::memnode {

Status NodeJournal::load_snapshot(std::string_view bytes) {
  while (!bytes.empty()) {
    FARMEM_ASSIGN_OR_RETURN(const size_t used, apply_one(bytes));
    bytes.remove_prefix(used);
  }
  return OkStatus();
}

Status NodeJournal::apply(std::string_view record) {
  FARMEM_ASSIGN_OR_RETURN(const size_t used, apply_one(record));
  if (used != record.size()) {
    return Internal(fmt::format("a node record carries {} bytes too many", record.size() - used));
  }
  return OkStatus();
}

Result<size_t> NodeJournal::apply_one(std::string_view bytes) {
  std::string_view name;
  size_t used = 0;
  FARMEM_ASSIGN_OR_RETURN(const NodeRecord r, decode_record(bytes, &name, &used));
  std::lock_guard<std::mutex> lock(node_.mu);
  Status s = node_.apply_locked(r, name);
  if (!s.ok()) {
    return Internal(fmt::format("replaying a node record of kind {}: {}", r.kind, s.to_string()));
  }
  return used;
}

std::string NodeJournal::snapshot(const std::function<void()>& rotate) {
  std::lock_guard<std::mutex> lock(node_.mu);
  rotate();
  std::string out = encode_record(NodeRecordKind::kNextObject, node_.objects.next_counter());
  // The boot number (no session exists at a snapshot's start: replaying this releases nothing).
  out += encode_record(NodeRecordKind::kRestart, node_.boot);
  // Objects first: allocations and roots name them as owners.
  node_.objects.for_each([&](const ObjectTable::Object& o) {
    out += encode_record(NodeRecordKind::kObjectCreate, o.id, o.session, 0, o.name,
                         o.pinned ? kNodeRecordPinned : 0);
  });
  node_.heap.for_each([&](uint64_t offset, uint64_t bytes, uint64_t owner) {
    out += encode_record(NodeRecordKind::kAlloc, offset, bytes, owner);
  });
  node_.roots.for_each([&](const std::string& name, uint64_t address, uint64_t owner) {
    out += encode_record(NodeRecordKind::kRootPublish, address, owner, 0, name);
  });
  return out;
}

}  // namespace farmem::memnode
