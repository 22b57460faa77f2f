// Wire formats of farmem's RPC (two-sided) messages. Byte-level spec: docs/formats/rpc.md.
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
  uint64_t magic;           // kRegionMagic
  uint16_t version;         // kProtocolVersion
  uint16_t node_id;
  uint32_t reserved0;
  uint64_t capacity_bytes;
  uint64_t reserved[5];
};
static_assert(sizeof(RegionHeader) == 64);

inline constexpr uint32_t kRpcMagic = 0x50524D46;  // "FMRP" little-endian
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxRpcPayloadBytes = 64 * 1024;  // requests and responses
inline constexpr uint16_t kAmRpcRequest = 11;
inline constexpr uint16_t kAmRpcResponse = 12;
inline constexpr uint16_t kMaxServerWorkers = 16;

enum class Opcode : uint16_t {
  kHello = 1,
  kAlloc = 2,
  kFree = 3,
  kRootPublish = 4,
  kRootLookup = 5,
  kRootRemove = 6,
  kStats = 7,
  kEcho = 8,  // returns its payload; used by tests and latency probes
  kFirstUser = 256,
};

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
static_assert(std::is_trivially_copyable_v<RpcHeader>);

struct HelloRequest {
  uint32_t magic;           // kRpcMagic
  uint16_t version;         // kProtocolVersion the client speaks
  uint16_t reserved;
  uint64_t client_tag;      // free-form (the client thread's index), logged at debug level
};
static_assert(sizeof(HelloRequest) == 16);

// Followed by rkey_bytes bytes of packed UCX remote key.
struct HelloResponse {
  uint32_t magic;           // kRpcMagic
  uint16_t version;         // kProtocolVersion the server speaks
  uint16_t node_id;         // the memory node's id (unique in a cluster)
  uint64_t region_base;     // remote virtual address of offset 0 of the exported region
  uint64_t region_bytes;    // size of the exported region
  uint32_t rkey_bytes;      // length of the packed rkey that follows this struct
  uint16_t worker_count;    // number of server worker threads (1..kMaxServerWorkers)
  uint16_t worker_index;    // which worker answered
  uint16_t worker_ports[kMaxServerWorkers];  // listening port of each worker
};
static_assert(sizeof(HelloResponse) == 64);
static_assert(offsetof(HelloResponse, worker_ports) == 32);

struct AllocRequest {
  uint64_t bytes;       // 1..region size
  uint64_t alignment;   // power of two <= 4096, or 0 for the default (64)
};
static_assert(sizeof(AllocRequest) == 16);

struct AllocResponse {
  uint64_t offset;      // offset of the block in the region
  uint64_t bytes;       // usable size (>= requested)
};
static_assert(sizeof(AllocResponse) == 16);

struct FreeRequest {
  uint64_t offset;      // exactly an offset returned by kAlloc
};
static_assert(sizeof(FreeRequest) == 8);

inline constexpr uint32_t kMaxRootNameBytes = 128;

// kRootPublish: RootRequest followed by name_bytes bytes of name.
// kRootLookup / kRootRemove: same, address ignored. Lookup replies with RootResponse.
struct RootRequest {
  uint64_t address;     // packed GlobalAddress (docs/formats/global_address.md)
  uint32_t name_bytes;  // 1..kMaxRootNameBytes
  uint32_t flags;       // bit 0: replace an existing name on publish
};
static_assert(sizeof(RootRequest) == 16);

struct RootResponse {
  uint64_t address;
};
static_assert(sizeof(RootResponse) == 8);

struct StatsResponse {
  uint64_t capacity_bytes;  // size of the exported region
  uint64_t used_bytes;      // bytes handed out by the allocator (incl. reserved header)
  uint64_t rpcs_served;     // RPC requests answered, all opcodes
  uint64_t connections;     // endpoints currently connected
  uint64_t roots;           // named roots stored
  uint64_t allocations;     // live allocations
  uint16_t node_id;
  uint16_t worker_count;
  uint32_t reserved;
  uint64_t uptime_ms;
};
static_assert(sizeof(StatsResponse) == 64);

}  // namespace farmem::wire
