// The ADO channel: messages between a memory node's pool worker and the pool's ADO process
// (farmem-ado), over a SOCK_SEQPACKET socket pair (one message per packet, boundaries kept).
// Byte-level spec: docs/formats/ado.md ("Channel"). Shared by the node side
// (src/kv/service/ado_process) and the process side (src/kv/ado/host); depends on common only.
//
// Every message is a MsgHeader followed by the type's fixed struct and its variable parts, all
// native little-endian, at most kMaxMessageBytes. Decoders check every length, bound and
// reserved field and return kProtocolError for anything else; a peer that sends a malformed
// message is treated as failed.
// Thread safety: pure functions and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/kv/ado_plugin.h"
#include "farmem/kv/wire.h"

namespace farmem::kv::ado {

inline constexpr uint32_t kChannelMagic = 0x4F444146;  // "FADO" little-endian
inline constexpr uint32_t kMaxMessageBytes = 136 * 1024;
inline constexpr uint32_t kMaxPlugins = 16;
inline constexpr uint32_t kMaxParams = 256;
inline constexpr uint32_t kMaxNameBytes = 4096;  // a plugin path, a parameter key or value
inline constexpr uint32_t kMaxErrorBytes = 1024;
inline constexpr uint32_t kMaxReplyBytes = 64 * 1024;  // KvAdoReply + responses (the RPC reply)
inline constexpr uint32_t kMaxIterateRefs = FARMEM_ADO_MAX_ITERATE_REFS;
inline constexpr uint32_t kMaxFindKeyBytes = wire::kMaxKeyBytes;
// The fd number of the channel in the ADO process (the node dup2s its end there).
inline constexpr int kChannelFd = 3;

enum class MsgType : uint16_t {
  // node -> ADO
  kLaunch = 1,
  kWork = 2,
  kCallbackReply = 3,
  kEvent = 4,
  kShutdown = 5,
  // ADO -> node
  kLaunchReply = 16,
  kWorkDone = 17,
  kCallback = 18,
};

struct MsgHeader {
  uint32_t magic;      // kChannelMagic
  uint16_t type;       // MsgType
  uint16_t reserved;   // 0
  uint32_t bytes;      // the whole message, header included
  uint32_t reserved2;  // 0
  uint64_t id;         // work id (kWork, kWorkDone, kCallback, kCallbackReply), else 0
};
static_assert(sizeof(MsgHeader) == 24);
static_assert(offsetof(MsgHeader, id) == 16);

// kLaunch: + pool name + plugin_count x (u16 bytes + path) + param_count x (u16 key bytes,
// u16 value bytes, key, value).
struct LaunchMsg {
  uint32_t abi_version;  // FARMEM_ADO_ABI_VERSION
  uint32_t flags;        // FARMEM_ADO_LAUNCH_NEW_POOL | kLaunchDurableNode
  uint64_t pool_capacity_bytes;
  uint64_t region_bytes;  // the node's exported region (the ADO checks its mapping)
  uint16_t node_id;
  uint16_t plugin_count;     // 1..kMaxPlugins
  uint16_t param_count;      // 0..kMaxParams
  uint16_t pool_name_bytes;  // 1..kMaxPoolNameBytes
  uint32_t timeout_ms;       // deadline of a callback's answer in the ADO
  uint32_t reserved;         // 0
  uint64_t undo_offset;      // the pool's undo block (undo_log.h) in the region; 0: none
  uint64_t undo_bytes;       // its size (0 with undo_offset 0)
};
static_assert(sizeof(LaunchMsg) == 56);
static_assert(offsetof(LaunchMsg, undo_offset) == 40);
// LaunchMsg flags beside the plugin ABI's FARMEM_ADO_LAUNCH_NEW_POOL (not passed to plugins).
inline constexpr uint32_t kLaunchDurableNode = 1u << 16;  // tx_add entries must be logged
inline constexpr uint32_t kLaunchKnownFlags = FARMEM_ADO_LAUNCH_NEW_POOL | kLaunchDurableNode;

// A value as the channel names it: a range of the exported region.
struct ValueRange {
  uint64_t offset;
  uint64_t bytes;
};
static_assert(sizeof(ValueRange) == 16);

// kWork: + key + request.
struct WorkMsg {
  uint32_t flags;          // FARMEM_ADO_WORK_*
  uint32_t signal;         // FARMEM_ADO_SIGNAL_*
  uint32_t key_bytes;      // 0..kMaxKeyBytes
  uint32_t request_bytes;  // 0..kMaxAdoRequestBytes
  uint32_t value_count;    // 0..2
  uint32_t reserved;       // 0
  ValueRange values[2];    // unused entries zero
};
static_assert(sizeof(WorkMsg) == 56);

// kEvent: + key.
struct EventMsg {
  uint32_t event;      // FARMEM_ADO_EVENT_*
  uint32_t key_bytes;  // 0..kMaxKeyBytes
};
static_assert(sizeof(EventMsg) == 8);

// kLaunchReply: + message (status != 0).
struct StatusMsg {
  int32_t status;          // farmem::StatusCode (0 = ok)
  uint32_t message_bytes;  // 0..kMaxErrorBytes
};
static_assert(sizeof(StatusMsg) == 8);

inline constexpr uint32_t kDoneEraseTarget = 1u;  // the plugin returned FARMEM_ADO_ERASE_TARGET
inline constexpr uint32_t kDoneNotHandled = 2u;   // every plugin returned FARMEM_ADO_NOT_MINE
inline constexpr uint32_t kDoneKnownFlags = 3u;

// kWorkDone: + the RPC reply to the client: KvAdoReply + responses (KvAdoResponse + data padded
// to 8 each), at most kMaxReplyBytes.
struct DoneMsg {
  uint32_t flags;  // kDone*
  uint32_t reserved;
};
static_assert(sizeof(DoneMsg) == 8);

enum class CallbackOp : uint32_t {
  kCreateKey = 1,  // key; arg0 value bytes                    -> ValueRange
  kOpenKey = 2,    // key; arg0 FARMEM_ADO_LOCK_*              -> ValueRange
  kEraseKey = 3,   // key                                      -> empty
  kResize = 4,     // key; arg0 new bytes                      -> ValueRange
  kAllocate = 5,   // arg0 bytes, arg1 alignment               -> ValueRange
  kFree = 6,       // arg0 offset, arg1 bytes                  -> empty
  kFind = 7,       // key = expression; arg0 start             -> FindReply + key
  kIterate = 8,    // arg0 cursor, arg1 max refs               -> IterateReply + RecordRef[]
  kUnlock = 9,     // key                                      -> empty
  kPoolInfo = 10,  //                                          -> farmem_ado_pool_info
  kLogUndo = 11,   // arg0 region offset, arg1 bytes (undo block) -> empty (logged)
};
inline constexpr uint32_t kLastCallbackOp = 11;

// kCallback: + key (or expression).
struct CallbackMsg {
  uint32_t op;         // CallbackOp
  uint32_t key_bytes;  // 0..kMaxKeyBytes
  uint64_t arg0;
  uint64_t arg1;
};
static_assert(sizeof(CallbackMsg) == 24);

// kCallbackReply: StatusMsg, then (status 0) the op's result, else message_bytes of text.
inline constexpr uint32_t kFindReplyMore = 1u;  // no match within the budget: go on at position

struct FindReply {
  uint64_t position;
  uint32_t key_bytes;
  uint32_t flags;  // kFindReplyMore
};
static_assert(sizeof(FindReply) == 16);

struct IterateReply {
  uint64_t next_cursor;  // UINT64_MAX at the end
  uint32_t count;        // RecordRef that follow, 0..kMaxIterateRefs
  uint32_t reserved;
};
static_assert(sizeof(IterateReply) == 16);

struct RecordRef {
  uint64_t record;   // region offset of a KvRecordHeader
  uint64_t version;  // its version when listed
};
static_assert(sizeof(RecordRef) == 16);
static_assert(sizeof(farmem_ado_pool_info) == 24);
static_assert(std::is_trivially_copyable_v<LaunchMsg> && std::is_trivially_copyable_v<WorkMsg>);

// ---- decoded forms ----
struct Launch {
  uint32_t flags = 0;  // kLaunchKnownFlags
  ValueRange undo{};   // the pool's undo block ({0, 0}: none)
  uint64_t pool_capacity_bytes = 0;
  uint64_t region_bytes = 0;
  uint16_t node_id = 0;
  uint32_t timeout_ms = 0;
  std::string pool_name;
  std::vector<std::string> plugin_paths;
  std::vector<std::pair<std::string, std::string>> params;
};

struct Work {
  uint64_t work_id = 0;
  uint32_t flags = 0;
  uint32_t signal = 0;
  std::string key;
  std::string request;
  uint32_t value_count = 0;
  ValueRange values[2] = {};
};

struct Callback {
  uint64_t work_id = 0;
  CallbackOp op = CallbackOp::kPoolInfo;
  std::string key;
  uint64_t arg0 = 0;
  uint64_t arg1 = 0;
};

struct Done {
  uint64_t work_id = 0;
  uint32_t flags = 0;
  std::string reply;  // KvAdoReply + responses
};

// One received message: its header and a view of the body (after the header).
struct Message {
  MsgHeader header{};
  std::string_view body;
  MsgType type() const { return static_cast<MsgType>(header.type); }
};

// ---- encoders (each returns the whole message) ----
std::string encode_launch(const Launch& l);
std::string encode_work(const Work& w);
std::string encode_event(uint32_t event, std::string_view key);
std::string encode_shutdown();
std::string encode_status(MsgType type, uint64_t id, const Status& status);  // launch reply
// A callback reply: OK with `payload`, or the error status and its message.
std::string encode_callback_reply(uint64_t work_id, const Status& status,
                                  std::string_view payload = {});
std::string encode_callback(const Callback& c);
std::string encode_done(const Done& d);

// ---- decoders ----
// The header of `bytes` (magic, known type, length == bytes.size(), reserved fields).
Result<Message> parse_message(std::string_view bytes);
Result<Launch> decode_launch(const Message& m);
Result<Work> decode_work(const Message& m);
Result<std::pair<uint32_t, std::string>> decode_event(const Message& m);
// Launch reply or callback reply: the status; *payload gets the rest when OK.
Status decode_status(const Message& m, std::string_view* payload);
Result<Callback> decode_callback(const Message& m);
Result<Done> decode_done(const Message& m);
// Checks a KvAdoReply + responses body (counts, lengths, padding) as a client would parse it.
Status validate_reply(std::string_view reply);

// ---- the socket ----
// A connected SOCK_SEQPACKET pair (close-on-exec), buffers sized for kMaxMessageBytes.
Result<std::pair<int, int>> make_channel();
// Sends one message. Non-blocking: kResourceExhausted when the socket is full (try again);
// kPeerFailed when the peer is gone.
Status send_message(int fd, std::string_view message);
// Receives one message into *buffer without blocking: the message's bytes, an empty view when
// nothing is waiting, kPeerFailed at EOF, kProtocolError for an oversized packet.
Result<std::string_view> receive_message(int fd, std::string* buffer);

}  // namespace farmem::kv::ado
