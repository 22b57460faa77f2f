// The offload agent's messages (docs/formats/agent.md): what host processes send to
// farmem-agent. Opcodes 448..479 (kv owns 256..319, far 320..383; 384..447 are left to the
// paged module's memory-node requests).
//
// Each is one RPC (docs/formats/rpc.md) to the agent's door: the agent is a memory-node server
// whose service answers these opcodes. Addresses are packed GlobalAddresses of memory nodes the
// agent is connected to. Native little-endian structs pinned by static_asserts.
// Thread safety: plain data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "farmem/fabric/wire.h"

namespace farmem::agent::wire {

inline constexpr uint16_t kFirstOpcode = 448;
inline constexpr uint16_t kLastOpcode = 479;

enum class Op : uint16_t {
  kRead = 448,        // ReadRequest -> `bytes` bytes of data
  kWrite = 449,       // WriteRequest + data -> empty (acked once the agent holds the data)
  kFlush = 450,       // empty -> empty, once every earlier write is at its memory node
  kStats = 451,       // empty -> StatsResponse
  kPinStatic = 452,   // PinRequest -> empty, once the range is held whole in the agent
  kInvalidate = 453,  // PinRequest -> empty: cached entries overlapping the range dropped
};

// Largest read (the reply carries the data) and largest write data per message.
inline constexpr uint32_t kMaxReadBytes = farmem::wire::kMaxRpcPayloadBytes;
inline constexpr uint32_t kMaxWriteBytes = 32 * 1024;

struct ReadRequest {
  uint64_t address;  // packed GlobalAddress
  uint32_t bytes;    // 1..kMaxReadBytes
  uint32_t flags;    // kReadFlag* bits (others must be 0)
};
// The read bypasses the dynamic cache: no lookup, no access recorded, nothing staged (static
// entries still serve it). For data the host does not want dynamically cached.
inline constexpr uint32_t kReadNoDynamic = 1u << 0;
inline constexpr uint32_t kReadFlagsKnown = kReadNoDynamic;
static_assert(sizeof(ReadRequest) == 16);

// Followed by `bytes` bytes of data.
struct WriteRequest {
  uint64_t address;  // packed GlobalAddress
  uint32_t bytes;    // 1..kMaxWriteBytes
  uint32_t flags;    // 0
};
static_assert(sizeof(WriteRequest) == 16);

struct PinRequest {
  uint64_t address;  // packed GlobalAddress, a multiple of the agent's entry size
  uint64_t bytes;    // 1..the agent's static budget
};
static_assert(sizeof(PinRequest) == 16);

// Counters since the agent started. "host" = between host processes and the agent; "node" =
// between the agent and memory nodes.
struct StatsResponse {
  uint64_t host_messages_in;   // requests received
  uint64_t host_bytes_in;      // their payload bytes
  uint64_t host_messages_out;  // replies sent
  uint64_t host_bytes_out;     // their payload bytes
  uint64_t node_reads;         // one-sided reads posted to memory nodes
  uint64_t node_read_bytes;
  uint64_t node_writes;  // one-sided writes posted to memory nodes
  uint64_t node_write_bytes;
  uint64_t node_batches;      // Batches waited for (one per node per round, <= 64 ops each)
  uint64_t rounds;            // forwarding rounds that had work
  uint64_t host_reads;        // read requests served
  uint64_t aggregated_reads;  // read misses that shared a Batch with another read
  uint64_t static_hits;       // reads served from the static cache
  uint64_t dynamic_hits;      // reads served from the dynamic cache
  uint64_t dynamic_misses;    // reads looked up in the dynamic cache and missed
  uint64_t staged_entries;    // entries the prefetch workers loaded
  uint64_t staged_bytes;
  uint64_t evictions;            // dynamic entries evicted for budget
  uint64_t cache_bytes;          // bytes held by dynamic entries now
  uint64_t static_bytes;         // bytes held by the static cache now
  uint64_t dynamic_enabled;      // 1 while dynamic caching is on
  uint64_t dynamic_switches;     // times the adaptive model switched it
  uint64_t writes_pending;       // writes acked but not yet at their node
  uint64_t host_bw_bytes_per_s;  // measured host<->agent throughput (EWMA)
  uint64_t node_bw_bytes_per_s;  // measured agent<->node bandwidth while busy (EWMA)
  uint64_t reserved[7];
};
static_assert(sizeof(StatsResponse) == 256);
static_assert(offsetof(StatsResponse, dynamic_enabled) == 160);

}  // namespace farmem::agent::wire
