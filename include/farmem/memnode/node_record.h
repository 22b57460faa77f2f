// NodeRecord: one change to a memory node's metadata (heap, objects, roots) as its journal
// keeps it (docs/formats/node_journal.md). A durable node logs each change it acknowledges and
// replays them at recovery through NodeState::apply_locked, the same code its handlers use; a
// checkpoint's snapshot is a sequence of the same records that rebuilds the tables.
// Thread safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem::memnode {

enum class NodeRecordKind : uint8_t {
  kAlloc = 1,          // a: offset, b: block bytes, c: owner
  kFree = 2,           // a: offset
  kReleaseOwner = 3,   // a: a session that ended (its allocations and ephemeral objects go)
  kObjectCreate = 4,   // a: id, b: binding session (0: none), flags: kNodeRecordPinned; name
  kObjectPersist = 5,  // a: id
  kObjectDestroy = 6,  // a: id
  kRootPublish = 7,    // a: address, b: owner object (0: none); name
  kRootRemove = 8,     // name
  kRestart = 9,        // a: the boot number; the node restarted: every session is gone
  kNextObject = 10,    // a: the object counter (snapshots only)
};
// Kinds 128..255 are the node's services' (not yet used).
inline constexpr uint8_t kNodeRecordPinned = 1;

struct NodeRecord {
  uint8_t kind;
  uint8_t flags;
  uint16_t reserved;  // 0
  uint32_t name_bytes;
  uint64_t a;
  uint64_t b;
  uint64_t c;
};
static_assert(sizeof(NodeRecord) == 32);
static_assert(offsetof(NodeRecord, name_bytes) == 4);
static_assert(offsetof(NodeRecord, a) == 8);
static_assert(offsetof(NodeRecord, b) == 16);
static_assert(offsetof(NodeRecord, c) == 24);

inline constexpr size_t kMaxNodeRecordNameBytes = 4096;

// The header of a record whose name is `name_bytes` long.
inline NodeRecord make_record(NodeRecordKind kind, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                              size_t name_bytes = 0, uint8_t flags = 0) {
  return NodeRecord{
      static_cast<uint8_t>(kind), flags, 0, static_cast<uint32_t>(name_bytes), a, b, c};
}

// A record with its name as logged: the 32 bytes, then the name.
std::string encode_record(NodeRecordKind kind, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                          std::string_view name = {}, uint8_t flags = 0);
// The record at the start of `bytes` and its name; *used: how many bytes they took.
Result<NodeRecord> decode_record(std::string_view bytes, std::string_view* name, size_t* used);

}  // namespace farmem::memnode
