// Wire formats and remote layouts of the key-value service (farmem::kv). Byte-level spec:
// docs/formats/kv.md. Shared by the memory node's kv service (src/kv/service) and the
// client library (src/kv/client); header-only, depends on fabric/wire.h only.
//
// Every struct is little-endian, trivially copyable and pinned by static_asserts. A request is
// one RPC (rpc.md) whose opcode is in [kKvFirstOpcode, kKvLastOpcode]; its payload starts with
// the opcode's fixed struct, followed by the variable parts the struct announces, each padded
// to 8 bytes where the spec says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "farmem/fabric/wire.h"

namespace farmem::kv::wire {

using farmem::wire::kMaxRpcPayloadBytes;

// ---- opcodes (the kv service's range) ----
inline constexpr uint16_t kKvFirstOpcode = 256;
inline constexpr uint16_t kKvLastOpcode = 319;

enum class KvOpcode : uint16_t {
  kPoolCreate = 256,     // KvPoolRequest + name        -> KvPoolReply (creates and opens)
  kPoolOpen = 257,       // KvPoolRequest + name        -> KvPoolReply
  kPoolClose = 258,      // KvPoolRef                   -> empty
  kPoolDelete = 259,     // KvPoolRequest + name        -> empty (kBusy if open elsewhere)
  kPoolConfigure = 260,  // KvConfigureRequest + command -> empty
  kPoolInfo = 261,       // KvPoolRef                   -> KvPoolInfo
  kPoolList = 262,       // KvListRequest               -> KvListReply + entries
  kOps = 263,            // KvOpsHeader + ops           -> KvOpsReplyHeader + replies (coalesced)
  kLocate = 264,         // KvLocateRequest + key       -> KvLocateReply (takes a lock)
  kRelease = 265,        // KvReleaseRequest            -> empty (drops the lock, publishes)
  kFind = 266,           // KvFindRequest + expression  -> KvFindReply + key
  kAttribute = 267,      // KvAttributeRequest + key    -> KvAttributeReply
  kShardStats = 268,     // empty                       -> KvShardStatsReply + shards
  kInvokeAdo = 269,      // KvAdoRequest + key + request          -> KvAdoReply + responses
  kInvokePutAdo = 270,   // KvAdoRequest + key + value + request  -> KvAdoReply + responses
};

// ---- limits ----
inline constexpr uint32_t kMaxPoolNameBytes = 120;  // object name "kv/<name>" <= 128
// Keys travel whole in one request: a kOps operation alone in its message (KvOpsHeader +
// KvOpRequest + key) and a kLocate (KvLocateRequest + key) fill a 64 KiB payload at 64 KiB - 32
// (static_asserts below). Every request and the ADO channel take keys of at most this.
inline constexpr uint32_t kMaxKeyBytes = 64 * 1024 - 32;
inline constexpr uint64_t kMaxValueBytes = 256ull << 20;  // 256 MiB
inline constexpr uint64_t kMinPoolCapacity = 64 * 1024;
inline constexpr uint32_t kMaxPoolsPerNode = 1024;
inline constexpr uint32_t kMaxOpsPerMessage = 256;
inline constexpr uint32_t kMaxConfigureBytes = 4096;
inline constexpr uint32_t kMaxFindExpressionBytes = 4096;
inline constexpr uint32_t kMaxAdoRequestBytes = 60 * 1024;
inline constexpr uint32_t kMaxAdoResponses = 64;

// Pool handle: opaque to clients except for routing, issued by the node.
//   bits 63..56 worker (the pool's shard), 55..32 slot, 31..0 generation (never 0).
inline constexpr unsigned kPoolWorkerShift = 56;
inline constexpr unsigned kPoolSlotShift = 32;
inline constexpr uint64_t kPoolSlotMask = (uint64_t{1} << (kPoolWorkerShift - kPoolSlotShift)) - 1;
inline constexpr uint32_t pool_worker(uint64_t pool) {
  return static_cast<uint32_t>(pool >> kPoolWorkerShift);
}
// The node's side of the layout (the kv service's shards).
inline constexpr uint32_t pool_slot(uint64_t pool) {
  return static_cast<uint32_t>((pool >> kPoolSlotShift) & kPoolSlotMask);
}
inline constexpr uint32_t pool_generation(uint64_t pool) { return static_cast<uint32_t>(pool); }
inline constexpr uint64_t make_pool_handle(uint32_t worker, uint32_t slot, uint32_t generation) {
  return (uint64_t{worker} << kPoolWorkerShift) | (uint64_t{slot} << kPoolSlotShift) | generation;
}
static_assert(pool_worker(make_pool_handle(0xAB, 0xCDEF01, 7)) == 0xAB);
static_assert(pool_slot(make_pool_handle(0xAB, 0xCDEF01, 7)) == 0xCDEF01);
static_assert(pool_generation(make_pool_handle(0xAB, 0xCDEF01, 7)) == 7);

// ---- pools ----
inline constexpr uint32_t kPoolCreateOnly = 1u;  // create: fail kAlreadyExists if it exists
inline constexpr uint32_t kPoolReadOnly = 2u;    // open/create: this handle may not write
// create: a pool this request makes lives only as long as the creating session (deleted when
// that session ends, like an ephemeral node object); opening an existing pool ignores it.
inline constexpr uint32_t kPoolTemporary = 4u;

struct KvPoolRequest {
  uint64_t capacity_bytes;  // create: kMinPoolCapacity..region; open/delete: 0
  uint64_t expected_count;  // create: presizes the index (0 = default); else 0
  uint32_t flags;           // kPoolCreateOnly | kPoolReadOnly | kPoolTemporary
  uint32_t name_bytes;      // 1..kMaxPoolNameBytes, name follows
};
static_assert(sizeof(KvPoolRequest) == 24);

inline constexpr uint32_t kPoolReplyCreated = 1u;  // create made a new pool (else opened one)

struct KvPoolReply {
  uint64_t pool;            // handle
  uint64_t capacity_bytes;  // the pool's capacity
  uint32_t flags;           // kPoolReplyCreated
  uint32_t reserved;        // 0
};
static_assert(sizeof(KvPoolReply) == 24);

struct KvPoolRef {
  uint64_t pool;
};
static_assert(sizeof(KvPoolRef) == 8);

struct KvConfigureRequest {
  uint64_t pool;
  uint32_t command_bytes;  // 1..kMaxConfigureBytes, UTF-8 command follows (kv.md "Configure")
  uint32_t reserved;       // 0
};
static_assert(sizeof(KvConfigureRequest) == 16);

inline constexpr uint32_t kPoolHasIndex = 1u;  // secondary index configured
inline constexpr uint32_t kPoolHasAdo = 2u;    // ADO plugins configured

struct KvPoolInfo {
  uint64_t pool;
  uint64_t count;           // keys stored
  uint64_t used_bytes;      // pool memory in use (index + records + allocator slack)
  uint64_t capacity_bytes;  // pool capacity
  uint64_t index_slots;     // slots of the primary index
  uint32_t open_handles;    // open handles, all sessions
  uint32_t flags;           // kPoolHasIndex | kPoolHasAdo
  uint64_t write_epoch_ns;  // node clock of the last write (0 = never)
};
static_assert(sizeof(KvPoolInfo) == 56);

struct KvListRequest {
  uint32_t start;     // first pool (in name order) to list
  uint32_t reserved;  // 0
};
static_assert(sizeof(KvListRequest) == 8);

struct KvListReply {
  uint32_t entries;  // entries that follow
  uint32_t total;    // pools on the node
};
static_assert(sizeof(KvListReply) == 8);

// One per pool, followed by name_bytes of name padded to 8.
struct KvListEntry {
  uint64_t capacity_bytes;
  uint64_t used_bytes;
  uint64_t count;
  uint32_t open_handles;
  uint32_t name_bytes;
};
static_assert(sizeof(KvListEntry) == 32);

// ---- coalesced get / put / erase ----
enum class KvOp : uint8_t { kGet = 1, kPut = 2, kErase = 3 };

inline constexpr uint8_t kPutCreateOnly = 1u;     // kAlreadyExists if the key exists
inline constexpr uint8_t kPutDontOverwrite = 2u;  // keep an existing value; reply flag kExisted

struct KvOpsHeader {
  uint64_t pool;      // every op of the message is on this pool
  uint32_t count;     // 1..kMaxOpsPerMessage
  uint32_t reserved;  // 0
};
static_assert(sizeof(KvOpsHeader) == 16);

// Followed by key_bytes of key then (put) value_bytes of value, together padded to 8.
struct KvOpRequest {
  uint8_t op;     // KvOp
  uint8_t flags;  // put: kPutCreateOnly | kPutDontOverwrite; others 0
  uint16_t reserved;
  uint32_t key_bytes;    // 1..kMaxKeyBytes
  uint32_t value_bytes;  // put: the value; get/erase: 0
  uint32_t reserved2;    // 0
};
static_assert(sizeof(KvOpRequest) == 16);

struct KvOpsReplyHeader {
  uint32_t count;  // == request count
  uint32_t reserved;
};
static_assert(sizeof(KvOpsReplyHeader) == 8);

inline constexpr uint32_t kReplyExisted = 1u;      // put with kPutDontOverwrite found the key
inline constexpr uint32_t kReplyNeedsLocate = 2u;  // get: value did not fit; use kLocate

// Followed (get, OK, without kReplyNeedsLocate) by value_bytes of value padded to 8.
struct KvOpReply {
  int32_t status;         // farmem::StatusCode
  uint32_t flags;         // kReplyExisted | kReplyNeedsLocate
  uint64_t value_bytes;   // get: the stored value's length
  uint64_t record;        // region offset of the key's current record (0: none)
  uint64_t version;       // that record's version
  uint32_t record_bytes;  // sizeof(KvRecordHeader) + key + value (0 if above 4 GiB)
  uint32_t reserved;
};
static_assert(sizeof(KvOpReply) == 40);

// ---- locate / release: direct transfers, offset ranges, locks ----
enum class LocateMode : uint8_t {
  kRead = 1,    // read lock on an existing value; address of bytes [offset, offset+length)
  kWrite = 2,   // write lock on an existing value (in-place writes of a range)
  kPutNew = 3,  // a new value of `length` bytes for the key, write-locked, published at release
};
inline constexpr uint8_t kLocateCreateOnly = 1u;  // kPutNew: kAlreadyExists if the key exists

struct KvLocateRequest {
  uint64_t pool;
  uint64_t offset;     // kRead/kWrite: first byte of the range; kPutNew: 0
  uint64_t length;     // kRead/kWrite: bytes (0 = to the end); kPutNew: the new value's size
  uint32_t key_bytes;  // key follows
  uint8_t mode;        // LocateMode
  uint8_t flags;       // kLocateCreateOnly
  uint16_t reserved;   // 0
};
static_assert(sizeof(KvLocateRequest) == 32);

struct KvLocateReply {
  uint64_t token;        // names the lock in kRelease
  uint64_t address;      // region offset of byte `offset` of the value
  uint64_t length;       // bytes addressable from `address`
  uint64_t value_bytes;  // the whole value's length
};
static_assert(sizeof(KvLocateReply) == 32);

inline constexpr uint32_t kReleaseAbort = 1u;  // kPutNew: drop the new value, keep the old one

struct KvReleaseRequest {
  uint64_t pool;
  uint64_t token;
  uint32_t flags;  // kReleaseAbort
  uint32_t reserved;
};
static_assert(sizeof(KvReleaseRequest) == 24);

// ---- find (secondary index) ----
struct KvFindRequest {
  uint64_t pool;
  uint64_t start;             // first position to consider
  uint32_t expression_bytes;  // "exact:K" | "prefix:P" | "regex:R" | "next:" (+ optional text)
  uint32_t reserved;
};
static_assert(sizeof(KvFindRequest) == 24);

inline constexpr uint32_t kFindMore = 1u;  // budget spent, no match yet: call again at position

struct KvFindReply {
  uint64_t position;   // the match's position (or, with kFindMore, where to go on)
  uint32_t key_bytes;  // key follows (0 with kFindMore)
  uint32_t flags;
};
static_assert(sizeof(KvFindReply) == 16);

// ---- attributes and statistics ----
enum class Attribute : uint32_t {
  kValueLength = 1,  // key
  kCrc32 = 2,        // key: CRC-32 (zlib) of the value
  kWriteEpoch = 3,   // key: node clock (ns) of the value's last write
  kCount = 4,        // pool
  kUsedBytes = 5,    // pool
  kCapacity = 6,     // pool
};

struct KvAttributeRequest {
  uint64_t pool;
  uint32_t attribute;  // Attribute
  uint32_t key_bytes;  // key follows (0 for pool attributes)
};
static_assert(sizeof(KvAttributeRequest) == 16);

struct KvAttributeReply {
  uint64_t value;
};
static_assert(sizeof(KvAttributeReply) == 8);

struct KvShardStats {
  uint64_t puts, gets, erases;
  uint64_t locates;  // direct transfers, ranges and locks
  uint64_t ado_invocations;
  uint64_t failures;       // requests answered with an error
  uint64_t clients;        // sessions with a pool open on this shard
  uint64_t pools;          // pools on this shard
  uint64_t coalesced_ops;  // ops that arrived in kOps messages
  uint64_t ops_messages;   // kOps messages
};
static_assert(sizeof(KvShardStats) == 80);

struct KvShardStatsReply {
  uint32_t shards;  // KvShardStats that follow, one per worker
  uint32_t reserved;
};
static_assert(sizeof(KvShardStatsReply) == 8);

// ---- Active Data Objects ----
inline constexpr uint32_t kAdoAsync = 1u << 0;           // no responses wanted
inline constexpr uint32_t kAdoCreateOnDemand = 1u << 1;  // create value of value_size if absent
inline constexpr uint32_t kAdoCreateOnly = 1u << 2;      // allocate the value, don't call the ADO
inline constexpr uint32_t kAdoNoOverwrite = 1u << 3;     // invoke_put: keep an existing value
inline constexpr uint32_t kAdoDetached = 1u << 4;        // invoke_put: value not attached to key
inline constexpr uint32_t kAdoReadOnly = 1u << 5;        // read lock only
inline constexpr uint32_t kAdoZeroNewValue = 1u << 6;    // zero a value created on demand
inline constexpr uint32_t kAdoKnownFlags = (1u << 7) - 1;

struct KvAdoRequest {
  uint64_t pool;
  uint64_t value_size;     // kAdoCreateOnDemand: size of the new value
  uint32_t flags;          // kAdo*
  uint32_t key_bytes;      // 0..kMaxKeyBytes (0 = key-less invocation)
  uint32_t value_bytes;    // invoke_put: value follows the key; else 0
  uint32_t request_bytes;  // 0..kMaxAdoRequestBytes, follows the value
};
static_assert(sizeof(KvAdoRequest) == 32);

struct KvAdoReply {
  int32_t plugin_status;  // what the plugin's do_work returned (0 = ok)
  uint32_t responses;     // KvAdoResponse that follow, each with its data padded to 8
};
static_assert(sizeof(KvAdoReply) == 8);

struct KvAdoResponse {
  uint32_t bytes;
  uint32_t layer;  // plugin-defined tag
};
static_assert(sizeof(KvAdoResponse) == 8);

// ---- the record: how a value lives in the exported region (read one-sidedly) ----
// state = (version << 8) | KvRecordState. A record is valid to a one-sided reader iff
// state == (version << 8) | kLive, version equals the header's version field, and checksum is
// XXH3-64 (seed 0) of bytes [8, 24) of the header followed by key and value.
enum KvRecordState : uint8_t {
  kRecordWriting = 0,
  kRecordLive = 1,
  kRecordLocked = 2,
  kRecordDead = 3
};

struct KvRecordHeader {
  uint64_t state;
  uint64_t version;  // node-wide unique, never reused
  uint32_t key_bytes;
  uint32_t value_bytes;  // values above 4 GiB - 1 are not stored
  uint64_t checksum;
};
static_assert(sizeof(KvRecordHeader) == 32);
static_assert(offsetof(KvRecordHeader, version) == 8);
static_assert(offsetof(KvRecordHeader, checksum) == 24);
// The header bytes the checksum covers: [kRecordSummedBegin, kRecordSummedEnd) = version,
// key_bytes, value_bytes (the state word and the checksum itself are not covered).
inline constexpr size_t kRecordSummedBegin = offsetof(KvRecordHeader, version);
inline constexpr size_t kRecordSummedEnd = offsetof(KvRecordHeader, checksum);
inline constexpr size_t kRecordSummedBytes = kRecordSummedEnd - kRecordSummedBegin;
static_assert(kRecordSummedBytes == 16);
static_assert(offsetof(KvRecordHeader, key_bytes) == kRecordSummedBegin + sizeof(uint64_t));
static_assert(offsetof(KvRecordHeader, value_bytes) + sizeof(uint32_t) == kRecordSummedEnd);
inline constexpr uint64_t kRecordAlign = 64;
inline constexpr unsigned kRecordStateBits = 8;  // the state word's low bits: KvRecordState
inline constexpr uint64_t kRecordStateMask = (uint64_t{1} << kRecordStateBits) - 1;
inline constexpr uint64_t kMaxRecordVersion = ~uint64_t{0} >> kRecordStateBits;  // versions: 1..
inline constexpr uint64_t record_state(uint64_t version, KvRecordState s) {
  return (version << kRecordStateBits) | s;
}

static_assert(sizeof(KvOpsHeader) + sizeof(KvOpRequest) + kMaxKeyBytes == kMaxRpcPayloadBytes);
static_assert(sizeof(KvLocateRequest) + kMaxKeyBytes == kMaxRpcPayloadBytes);
static_assert(sizeof(KvAdoRequest) + kMaxKeyBytes == kMaxRpcPayloadBytes);
static_assert(std::is_trivially_copyable_v<KvOpReply>);
static_assert(std::is_trivially_copyable_v<KvRecordHeader>);

}  // namespace farmem::kv::wire
