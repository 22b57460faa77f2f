// The door: how a client thread gets into a memory node (docs/formats/door.md).
//
// A memory node listens on one plain TCP port of its own (not UCX's listener). A client thread
// connects, sends a DoorHello (magic, version, lengths, the cluster key, its UCX worker
// address); the node checks every field within a short deadline, opens a session, creates a
// UCX endpoint to the client's worker and answers with a DoorWelcome (session id, region,
// remote key, its worker's address), or with a DoorWelcome whose status is an error and a
// message (a refusal). The client then creates its endpoint to the node's worker; UCX pairs
// the two. The TCP connection stays open for the session's life: it carries 8-byte heartbeat
// frames, and its end (EOF, reset) ends the session on both sides.
//
// This header holds the message layouts and the blocking socket helpers the client uses, each
// bounded by an absolute deadline (now_ns() clock). Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "farmem/common/result.h"
#include "farmem/fabric/wire.h"

namespace farmem::wire {

inline constexpr uint32_t kDoorMagic = 0x52444D46;  // "FMDR" little-endian
inline constexpr uint32_t kMaxClusterKeyBytes = 256;
inline constexpr uint32_t kMaxWorkerAddressBytes = 16 * 1024;
inline constexpr uint32_t kMaxRkeyBytes = 16 * 1024;
inline constexpr uint32_t kMaxDoorMessageBytes = 1024;

// Client -> node, followed by key_bytes of cluster key and address_bytes of UCX worker address.
struct DoorHello {
  uint32_t magic;          // kDoorMagic
  uint16_t version;        // kProtocolVersion
  uint16_t key_bytes;      // 0..kMaxClusterKeyBytes
  uint32_t address_bytes;  // 1..kMaxWorkerAddressBytes
  uint16_t worker_hint;    // the node worker asked for (taken modulo the worker count)
  uint16_t flags;          // 0
  uint64_t client_tag;     // free-form, for the node's log (pid << 16 | thread index)
  uint64_t reserved;       // 0
};
static_assert(sizeof(DoorHello) == 32);
static_assert(offsetof(DoorHello, client_tag) == 16);
static_assert(std::is_trivially_copyable_v<DoorHello>);

// Node -> client. status 0: followed by rkey_bytes of packed remote key and address_bytes of
// the node worker's UCX address. status != 0 (a farmem::StatusCode): a refusal, followed by
// message_bytes of UTF-8 text; the node then closes the connection.
struct DoorWelcome {
  uint32_t magic;          // kDoorMagic
  uint16_t version;        // kProtocolVersion the node speaks
  uint16_t status;         // 0 or a farmem::StatusCode
  uint32_t message_bytes;  // refusal text, 0..kMaxDoorMessageBytes
  uint32_t rkey_bytes;     // 0..kMaxRkeyBytes
  uint32_t address_bytes;  // 0..kMaxWorkerAddressBytes
  uint16_t node_id;
  uint16_t worker_count;  // 1..kMaxServerWorkers
  uint16_t worker_index;  // the worker that serves this session
  uint16_t durability;    // 0 volatile, 1 process, 2 power (storage::Durability)
  uint16_t reserved1;     // 0
  uint16_t reserved2;     // 0
  uint64_t session_id;    // unique on this node for its lifetime, never kObjectOwnerBit
  uint64_t region_base;   // the node's virtual address of region offset 0
  uint64_t region_bytes;  // size of the exported region
  uint64_t reserved[2];   // 0
};
static_assert(sizeof(DoorWelcome) == 72);
static_assert(offsetof(DoorWelcome, session_id) == 32);
static_assert(offsetof(DoorWelcome, durability) == 26);
static_assert(std::is_trivially_copyable_v<DoorWelcome>);

// After the welcome, both directions carry only these frames.
enum class Beat : uint32_t { kPing = 1, kPong = 2, kBye = 3 };
struct HeartbeatFrame {
  uint32_t kind;  // Beat
  uint32_t seq;   // ping: the client's sequence; pong: echoes it; bye: 0
};
static_assert(sizeof(HeartbeatFrame) == 8);

}  // namespace farmem::wire

namespace farmem::fabric {

// Validates a DoorHello as received (pure; used by the node's door and by the fuzz target).
Status validate_door_hello(const wire::DoorHello& hello);
// Validates the fixed part of a DoorWelcome (magic, version, lengths, worker fields).
Status validate_door_welcome(const wire::DoorWelcome& welcome);
// Constant-time comparison of two cluster keys.
bool keys_equal(std::string_view a, std::string_view b);

// Blocking socket helpers bounded by an absolute deadline (now_ns() clock). They return
// kTimedOut past the deadline, kPeerFailed when the peer closes or resets, kUnavailable when
// a connection is refused.
Result<int> tcp_connect(const std::string& host, uint16_t port, uint64_t deadline_ns);
Status send_all(int fd, const void* data, size_t bytes, uint64_t deadline_ns);
Status recv_exact(int fd, void* data, size_t bytes, uint64_t deadline_ns);
// Sets TCP keepalive (idle, interval, count) and TCP_NODELAY on a connected socket.
void tune_session_socket(int fd);

}  // namespace farmem::fabric
