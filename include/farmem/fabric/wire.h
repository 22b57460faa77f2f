// Wire formats of farmem's RPC (two-sided) messages. Byte-level spec: docs/formats/rpc.md,
// control.md, memops.md; the door (connection set-up) is in door.h and docs/formats/door.md.
// Every struct here is little-endian, trivially copyable, and pinned by static_asserts.
//
// An RPC is one UCX active message (AM id kAmRpcRequest) whose AM header is an RpcHeader and
// whose data is the request payload; the reply is an AM (kAmRpcResponse) with the same header
// layout and the response payload (or, when status != 0, a UTF-8 error message).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace farmem::wire {

// Every layout here is little-endian and copied as raw bytes.
static_assert(std::endian::native == std::endian::little, "farmem wire formats are little-endian");

// The first kRegionHeaderBytes of every exported region are reserved (docs/formats/region.md):
// readable, never allocated, and refused to one-sided writes and atomics.
inline constexpr uint64_t kRegionHeaderBytes = 4096;
inline constexpr uint64_t kRegionMagic = 0x444E4D454D524146ull;  // "FARMEMND"

struct RegionHeader {
  uint64_t magic;    // kRegionMagic
  uint16_t version;  // kProtocolVersion
  uint16_t node_id;
  uint32_t reserved0;
  uint64_t capacity_bytes;
  uint64_t reserved[5];
};
static_assert(sizeof(RegionHeader) == 64);

inline constexpr uint32_t kRpcMagic = 0x50524D46;  // "FMRP" little-endian
inline constexpr uint16_t kProtocolVersion = 2;
inline constexpr uint32_t kMaxRpcPayloadBytes = 64 * 1024;  // requests and responses
inline constexpr uint32_t kMaxErrorMessageBytes = 1024;     // error replies are cut here
inline constexpr uint16_t kAmRpcRequest = 11;
inline constexpr uint16_t kAmRpcResponse = 12;
inline constexpr uint16_t kMaxServerWorkers = 16;

// Opcodes 1..255 belong to the memory node's core service; services register ranges of their
// own from kFirstServiceOpcode up (memnode/service.h).
enum class Opcode : uint16_t {
  kAlloc = 2,
  kFree = 3,
  kRootPublish = 4,
  kRootLookup = 5,
  kRootRemove = 6,
  kStats = 7,
  kEcho = 8,  // returns its payload; used by tests and latency probes
  kObjectCreate = 9,
  kObjectOpen = 10,
  kObjectDestroy = 11,
  kObjectPersist = 12,
  kSessionsAlive = 13,
  kMemOps = 14,   // one-sided operations served by the node (memops.md)
  kPersist = 15,  // make region ranges durable (control.md "Persist")
  kFirstServiceOpcode = 256,
};
inline constexpr uint16_t kLastCoreOpcode = 255;

struct RpcHeader {
  uint32_t magic;          // kRpcMagic
  uint16_t version;        // kProtocolVersion
  uint16_t opcode;         // Opcode
  uint64_t request_id;     // chosen by the client, echoed in the reply
  uint32_t payload_bytes;  // bytes of AM data that follow
  int32_t status;          // reply: farmem::StatusCode; request: 0
  uint64_t reserved;       // 0
};
static_assert(sizeof(RpcHeader) == 32);
static_assert(offsetof(RpcHeader, request_id) == 8);
static_assert(offsetof(RpcHeader, payload_bytes) == 16);
static_assert(offsetof(RpcHeader, status) == 20);
static_assert(offsetof(RpcHeader, reserved) == 24);
static_assert(std::is_trivially_copyable_v<RpcHeader>);

// Who owns an allocation (control.md "Ownership"): 0 = the caller's session (returned when the
// session ends); an object id (kObjectOwnerBit set) = that named object (kept until it is
// destroyed). Session ids never have kObjectOwnerBit set.
inline constexpr uint64_t kObjectOwnerBit = 1ull << 63;
inline constexpr uint64_t kOwnerSession = 0;

struct AllocRequest {
  uint64_t bytes;      // 1..region size
  uint64_t alignment;  // power of two <= 4096, or 0 for the default (64)
  uint64_t owner;      // kOwnerSession or an object id
};
static_assert(sizeof(AllocRequest) == 24);

struct AllocResponse {
  uint64_t offset;  // offset of the block in the region
  uint64_t bytes;   // usable size (>= requested)
};
static_assert(sizeof(AllocResponse) == 16);

struct FreeRequest {
  uint64_t offset;  // exactly an offset returned by kAlloc
};
static_assert(sizeof(FreeRequest) == 8);

inline constexpr uint32_t kMaxRootNameBytes = 128;
inline constexpr uint32_t kRootFlagReplace = 1u;

// kRootPublish: RootRequest followed by name_bytes bytes of name.
// kRootLookup / kRootRemove: same, address and owner ignored. Lookup replies with RootResponse.
struct RootRequest {
  uint64_t address;     // packed GlobalAddress (docs/formats/global_address.md)
  uint32_t name_bytes;  // 1..kMaxRootNameBytes
  uint32_t flags;       // kRootFlagReplace: replace an existing name on publish
  uint64_t owner;       // publish: 0, or an object id whose destruction removes the root
};
static_assert(sizeof(RootRequest) == 24);

struct RootResponse {
  uint64_t address;
};
static_assert(sizeof(RootResponse) == 8);

struct StatsResponse {
  uint64_t capacity_bytes;  // size of the exported region
  uint64_t used_bytes;      // bytes handed out by the allocator (incl. reserved header)
  uint64_t rpcs_served;     // RPC requests answered, all opcodes
  uint64_t connections;     // sessions currently open
  uint64_t roots;           // named roots stored
  uint64_t allocations;     // live allocations
  uint16_t node_id;
  uint16_t worker_count;
  uint32_t objects;  // named objects
  uint64_t uptime_ms;
  uint64_t sessions_total;  // sessions opened since start
  uint64_t refused;         // door connections refused (junk, wrong key, full, timeout)
  uint64_t rpcs_dropped;    // requests dropped (session gone, flood)
  // Durability (zeros on a volatile node): storage::Durability, records replayed and dropped
  // at the last recovery and how long it took, the live log's bytes, syncs since start.
  uint32_t durability;
  uint32_t recovery_dropped_records;
  uint64_t recovery_records;
  uint64_t recovery_us;
  uint64_t log_bytes;
  uint64_t syncs;
};
static_assert(sizeof(StatsResponse) == 128);
static_assert(offsetof(StatsResponse, uptime_ms) == 56);
static_assert(offsetof(StatsResponse, durability) == 88);
static_assert(offsetof(StatsResponse, syncs) == 120);

// ---- named objects (control.md "Objects") ----
inline constexpr uint32_t kMaxObjectNameBytes = 128;
inline constexpr uint32_t kObjectEphemeral = 1u;  // destroyed when the creating session ends

// kObjectCreate / kObjectOpen: ObjectRequest followed by name_bytes of name (id ignored).
// kObjectDestroy / kObjectPersist: ObjectRequest with the id (name_bytes 0).
struct ObjectRequest {
  uint64_t id;          // destroy/persist: the object id (kObjectOwnerBit set)
  uint32_t name_bytes;  // create/open: 1..kMaxObjectNameBytes
  uint32_t flags;       // create: kObjectEphemeral
};
static_assert(sizeof(ObjectRequest) == 16);

struct ObjectResponse {
  uint64_t id;     // kObjectOwnerBit | node-local number
  uint32_t flags;  // kObjectEphemeral while the object is bound to a session
  uint32_t reserved;
};
static_assert(sizeof(ObjectResponse) == 16);

// kSessionsAlive: count u32, reserved u32, then count session ids (u64); the reply is count
// bytes, 1 = the session is open on this node, 0 = it ended (or never existed).
inline constexpr uint32_t kMaxSessionsPerQuery = 1024;
struct SessionsAliveRequest {
  uint32_t count;
  uint32_t reserved;
};
static_assert(sizeof(SessionsAliveRequest) == 8);

// ---- persist (control.md "Persist") ----
// kPersist: PersistRequest, then count PersistRange. The empty reply comes once the bytes the
// ranges held when the node read them are durable at the node's level (at once on a volatile
// node). Ranges lie in the region, not below kRegionHeaderBytes.
inline constexpr uint32_t kMaxPersistRanges = 256;
// Answer once the ranges are in the node's log, in order, without waiting for its sync: on a
// power node they become stable with the next sync, together with every record before them, and
// a later persist that did wait covers them.
inline constexpr uint32_t kPersistOrdered = 1;
struct PersistRequest {
  uint32_t count;  // 1..kMaxPersistRanges
  uint32_t flags;  // 0 or kPersistOrdered
};
static_assert(sizeof(PersistRequest) == 8);
struct PersistRange {
  uint64_t offset;
  uint64_t bytes;
};
static_assert(sizeof(PersistRange) == 16);

// ---- served one-sided operations (memops.md) ----
// kPersist: the range as it is at that point of the message is logged on a durable node, and
// the reply waits until it is stable (a no-op on a volatile node).
// kCall: runs a procedure a node-side library registered (memnode/procedure.h) at that point of
// the message; its arguments follow the MemOp like a write's data, its answer (CallReplyHeader
// and result) fills a reply slot of the capacity the client reserved.
enum class MemOpKind : uint8_t {
  kRead = 1,
  kWrite = 2,
  kCas = 3,
  kFaa = 4,
  kPersist = 5,
  kCall = 6
};

// kMemOps request: MemOpsHeader, then per operation a MemOp followed (writes and calls only) by
// its data padded to a multiple of 8. The reply holds, in operation order, each read's data
// padded to a multiple of 8, each CAS/FAA's old value (8 bytes) and each call's reply slot;
// writes and persists add nothing.
struct MemOpsHeader {
  uint32_t count;     // 1..kMaxMemOpsPerMessage
  uint32_t reserved;  // 0
};
static_assert(sizeof(MemOpsHeader) == 8);

struct MemOp {
  uint8_t kind;        // MemOpKind
  uint8_t reserved0;   // 0
  uint16_t reserved1;  // 0
  uint32_t bytes;      // read/write/call: 1..kMaxMemOpBytes; CAS/FAA: 8; persist: see below
  uint64_t offset;     // in the region; writes and atomics not below kRegionHeaderBytes; call: 0
  uint64_t operand0;   // CAS: expected; FAA: addend; call: procedure id; otherwise 0
  uint64_t operand1;   // CAS: desired; call: reply slot bytes; otherwise 0
};
static_assert(sizeof(MemOp) == 32);
static_assert(offsetof(MemOp, offset) == 8);

inline constexpr uint32_t kMaxMemOpsPerMessage = 256;
// A read or write larger than this is split into several operations by the client.
inline constexpr uint32_t kMaxMemOpBytes = 32 * 1024;
// A persist names 1..kMaxMemOpPersistBytes; the persists of one message add up to at most
// kMaxMemOpsPersistBytes (the node copies them as the message runs).
inline constexpr uint32_t kMaxMemOpPersistBytes = 1 << 20;
inline constexpr uint32_t kMaxMemOpsPersistBytes = 1 << 20;
inline constexpr uint32_t pad8(uint32_t n) { return (n + 7u) & ~7u; }

// What one operation adds to the kMemOps reply (see above); calls: their reply slot.
inline constexpr uint64_t memop_reply_bytes(const MemOp& op) {
  switch (static_cast<MemOpKind>(op.kind)) {
    case MemOpKind::kRead:
      return pad8(op.bytes);
    case MemOpKind::kCas:
    case MemOpKind::kFaa:
      return 8;
    case MemOpKind::kCall:
      return op.operand1;
    default:
      return 0;
  }
}

// A call's reply slot (MemOp.operand1 bytes: a multiple of 8, kMinCallReplyBytes..
// kMaxCallReplyBytes): this header, then `bytes` bytes (the result, or on an error its message,
// cut to the slot), then zeros.
struct CallReplyHeader {
  uint16_t code;      // StatusCode: 0 = the procedure succeeded
  uint16_t reserved;  // 0
  uint32_t bytes;     // result (or message) bytes that follow
};
static_assert(sizeof(CallReplyHeader) == 8);
inline constexpr uint32_t kMinCallReplyBytes = sizeof(CallReplyHeader);
inline constexpr uint32_t kMaxCallReplyBytes = kMaxMemOpBytes + sizeof(CallReplyHeader);
inline constexpr uint64_t kMaxProcedureId = 0xFFFF;

}  // namespace farmem::wire
