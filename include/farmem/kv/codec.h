// The client's side of the kv wire formats (docs/formats/kv.md, kv/wire.h): builds kOps messages
// (with the encoders of kv/requests.h, which also encode every other request) and checks and
// decodes replies. Pure functions and buffers, no I/O: unit-tested without a node.
//
// Every decoder checks lengths against the bytes received and answers kProtocolError for a
// reply that does not match the format (short, long, counts that overrun, bad padding length),
// never reading past `bytes`. Thread safety: value types; an OpsRequest belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/common/status.h"
#include "farmem/kv/requests.h"
#include "farmem/kv/types.h"
#include "farmem/kv/wire.h"

namespace farmem::kv {

// Whether a put of this size fits in a kOps message by itself (else it goes through locate).
inline constexpr bool put_fits_message(size_t key_bytes, size_t value_bytes) {
  return sizeof(wire::KvOpsHeader) + op_request_bytes(key_bytes, value_bytes) <=
         wire::kMaxRpcPayloadBytes;
}
// Reply bytes of one operation: KvOpReply, then (get) the value padded to 8.
inline constexpr size_t op_reply_bytes(size_t value_bytes) {
  return sizeof(wire::KvOpReply) + pad8(value_bytes);
}
// The largest value a get can receive in a kOps reply (alone in its message).
inline constexpr size_t kMaxReplyValueBytes =
    (wire::kMaxRpcPayloadBytes - sizeof(wire::KvOpsReplyHeader) - sizeof(wire::KvOpReply)) &
    ~size_t{7};

// A kOps request under construction, in a buffer of wire::kMaxRpcPayloadBytes allocated once.
class OpsRequest {
 public:
  OpsRequest() : buf_(new uint8_t[wire::kMaxRpcPayloadBytes]) { reset(0); }
  // Starts a message for `pool` with no operations.
  void reset(uint64_t pool);
  // Whether one more operation with these sizes fits (at most max_ops operations, at most
  // wire::kMaxOpsPerMessage, within the payload limit).
  bool fits(size_t key_bytes, size_t value_bytes, uint32_t max_ops) const {
    return count_ < max_ops && count_ < wire::kMaxOpsPerMessage &&
           bytes_ + op_request_bytes(key_bytes, value_bytes) <= wire::kMaxRpcPayloadBytes;
  }
  // Precondition: fits(key.size(), value.size(), ...). `value` is sent for puts only.
  void add(wire::KvOp op, uint8_t flags, std::string_view key, std::string_view value);
  uint32_t count() const { return count_; }
  const uint8_t* data() const { return buf_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t bytes_ = 0;
  uint32_t count_ = 0;
};

// Walks a kOps reply: begin(), then next() once per operation of the request, in order.
class OpsReplyReader {
 public:
  OpsReplyReader(const uint8_t* data, size_t bytes) : data_(data), bytes_(bytes) {}
  Status begin(uint32_t expected_count);
  // The reply of the next operation, which was an `op`; *value is the value carried by an OK
  // get without kReplyNeedsLocate (empty otherwise).
  Status next(wire::KvOp op, wire::KvOpReply* reply, std::string_view* value);

 private:
  const uint8_t* data_;
  size_t bytes_;
  size_t at_ = 0;
};

// ---- replies ----
Status reply_size_error(size_t expected, size_t got);
// A reply that is exactly one T.
template <typename T>
Status decode_fixed(const void* data, size_t bytes, T* out) {
  if (bytes != sizeof(T)) return reply_size_error(sizeof(T), bytes);
  std::memcpy(out, data, sizeof(T));
  return OkStatus();
}
// kPoolList: appends the entries to *out (node set to `node`); *total = pools on the node.
Status decode_list(const uint8_t* data, size_t bytes, uint16_t node, std::vector<PoolListing>* out,
                   uint32_t* entries, uint32_t* total);
// kFind: the position, flags (wire::kFindMore) and key.
Status decode_find(const uint8_t* data, size_t bytes, wire::KvFindReply* reply, std::string* key);
Status decode_shard_stats(const uint8_t* data, size_t bytes, std::vector<wire::KvShardStats>* out);
Status decode_ado(const uint8_t* data, size_t bytes, AdoResult* out);

// The Status a kOps operation's status code stands for (OK for 0), with a message naming the
// operation and pool; kProtocolError for a code that is not a StatusCode.
Status op_status(int32_t code, wire::KvOp op, std::string_view pool_name, size_t key_bytes);

}  // namespace farmem::kv
