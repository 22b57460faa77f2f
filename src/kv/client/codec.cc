#include "farmem/kv/codec.h"

#include <fmt/format.h>

#include "farmem/common/check.h"

namespace farmem::kv {
namespace {

namespace w = wire;

Status truncated(std::string_view what, size_t need, size_t have) {
  return ProtocolError(
      fmt::format("kv reply truncated: {} needs {} bytes, {} left", what, need, have));
}

}  // namespace

void OpsRequest::reset(uint64_t pool) {
  w::KvOpsHeader h{};
  h.pool = pool;
  std::memcpy(buf_.get(), &h, sizeof(h));
  bytes_ = sizeof(h);
  count_ = 0;
}

void OpsRequest::add(w::KvOp op, uint8_t flags, std::string_view key, std::string_view value) {
  if (op != w::KvOp::kPut) value = {};
  // The buffer holds one message: callers check fits() first (the coalescer asserts each
  // message's size before it is posted; checking every operation too is for debug builds).
  FARMEM_DCHECK(fits(key.size(), value.size(), w::kMaxOpsPerMessage),
                "a kOps message stays within the wire limits");
  bytes_ += write_op(buf_.get() + bytes_, op, flags, key, value);
  ++count_;
  const uint32_t count = count_;
  std::memcpy(buf_.get() + offsetof(w::KvOpsHeader, count), &count, sizeof(count));
}

Status OpsReplyReader::begin(uint32_t expected_count) {
  w::KvOpsReplyHeader h;
  if (bytes_ < sizeof(h)) return truncated("the kOps reply header", sizeof(h), bytes_);
  std::memcpy(&h, data_, sizeof(h));
  if (h.count != expected_count) {
    return ProtocolError(fmt::format("kOps reply answers {} operations, the request had {}",
                                     h.count, expected_count));
  }
  at_ = sizeof(h);
  return OkStatus();
}

Status OpsReplyReader::next(w::KvOp op, w::KvOpReply* reply, std::string_view* value) {
  if (bytes_ - at_ < sizeof(*reply))
    return truncated("an operation reply", sizeof(*reply), bytes_ - at_);
  std::memcpy(reply, data_ + at_, sizeof(*reply));
  at_ += sizeof(*reply);
  *value = {};
  if (op != w::KvOp::kGet || reply->status != 0 || (reply->flags & w::kReplyNeedsLocate) != 0) {
    return OkStatus();
  }
  if (reply->value_bytes > bytes_ - at_ || pad8(reply->value_bytes) > bytes_ - at_) {
    return truncated("a get's value", pad8(reply->value_bytes), bytes_ - at_);
  }
  *value = std::string_view(reinterpret_cast<const char*>(data_ + at_), reply->value_bytes);
  at_ += pad8(reply->value_bytes);
  return OkStatus();
}

Status reply_size_error(size_t expected, size_t got) {
  return ProtocolError(fmt::format("kv reply of {} bytes, expected {}", got, expected));
}

Status decode_list(const uint8_t* data, size_t bytes, uint16_t node, std::vector<PoolListing>* out,
                   uint32_t* entries, uint32_t* total) {
  w::KvListReply h;
  if (bytes < sizeof(h)) return truncated("the list reply header", sizeof(h), bytes);
  std::memcpy(&h, data, sizeof(h));
  size_t at = sizeof(h);
  for (uint32_t i = 0; i < h.entries; ++i) {
    w::KvListEntry e;
    if (bytes - at < sizeof(e)) return truncated("a list entry", sizeof(e), bytes - at);
    std::memcpy(&e, data + at, sizeof(e));
    at += sizeof(e);
    if (e.name_bytes > bytes - at || pad8(e.name_bytes) > bytes - at) {
      return truncated("a pool name", pad8(e.name_bytes), bytes - at);
    }
    PoolListing p;
    p.node = node;
    p.name.assign(reinterpret_cast<const char*>(data + at), e.name_bytes);
    p.capacity_bytes = e.capacity_bytes;
    p.used_bytes = e.used_bytes;
    p.count = e.count;
    p.open_handles = e.open_handles;
    out->push_back(std::move(p));
    at += pad8(e.name_bytes);
  }
  if (at != bytes) return reply_size_error(at, bytes);
  *entries = h.entries;
  *total = h.total;
  return OkStatus();
}

Status decode_find(const uint8_t* data, size_t bytes, w::KvFindReply* reply, std::string* key) {
  if (bytes < sizeof(*reply)) return truncated("the find reply", sizeof(*reply), bytes);
  std::memcpy(reply, data, sizeof(*reply));
  if (bytes - sizeof(*reply) != reply->key_bytes) {
    return reply_size_error(sizeof(*reply) + reply->key_bytes, bytes);
  }
  key->assign(reinterpret_cast<const char*>(data + sizeof(*reply)), reply->key_bytes);
  return OkStatus();
}

Status decode_shard_stats(const uint8_t* data, size_t bytes, std::vector<w::KvShardStats>* out) {
  w::KvShardStatsReply h;
  if (bytes < sizeof(h)) return truncated("the shard stats header", sizeof(h), bytes);
  std::memcpy(&h, data, sizeof(h));
  const size_t want = sizeof(h) + size_t{h.shards} * sizeof(w::KvShardStats);
  if (bytes != want) return reply_size_error(want, bytes);
  out->resize(h.shards);
  if (h.shards > 0) std::memcpy(out->data(), data + sizeof(h), bytes - sizeof(h));
  return OkStatus();
}

Status decode_ado(const uint8_t* data, size_t bytes, AdoResult* out) {
  w::KvAdoReply h;
  if (bytes < sizeof(h)) return truncated("the ADO reply header", sizeof(h), bytes);
  std::memcpy(&h, data, sizeof(h));
  if (h.responses > w::kMaxAdoResponses) {
    return ProtocolError(
        fmt::format("ADO reply with {} responses (at most {})", h.responses, w::kMaxAdoResponses));
  }
  out->plugin_status = h.plugin_status;
  out->responses.clear();
  size_t at = sizeof(h);
  for (uint32_t i = 0; i < h.responses; ++i) {
    w::KvAdoResponse r;
    if (bytes - at < sizeof(r)) return truncated("an ADO response", sizeof(r), bytes - at);
    std::memcpy(&r, data + at, sizeof(r));
    at += sizeof(r);
    if (r.bytes > bytes - at || pad8(r.bytes) > bytes - at) {
      return truncated("an ADO response's data", pad8(r.bytes), bytes - at);
    }
    out->responses.push_back(
        AdoResponse{r.layer, std::string(reinterpret_cast<const char*>(data + at), r.bytes)});
    at += pad8(r.bytes);
  }
  if (at != bytes) return reply_size_error(at, bytes);
  return OkStatus();
}

Status op_status(int32_t code, w::KvOp op, std::string_view pool_name, size_t key_bytes) {
  if (code == 0) return OkStatus();
  const char* what = op == w::KvOp::kGet ? "get" : op == w::KvOp::kPut ? "put" : "erase";
  if (code < 0 || code > static_cast<int32_t>(kLastStatusCode)) {
    return ProtocolError(
        fmt::format("{} in pool '{}': unknown status code {}", what, pool_name, code));
  }
  const auto c = static_cast<StatusCode>(code);
  std::string why;
  switch (c) {
    case StatusCode::kNotFound:
      why = "no such key";
      break;
    case StatusCode::kAlreadyExists:
      why = "the key exists (create-only)";
      break;
    case StatusCode::kBusy:
      why = "the key is locked by another session";
      break;
    case StatusCode::kResourceExhausted:
      why = "pool full";
      break;
    default:
      why = std::string(status_code_name(c));
      break;
  }
  return Status(
      c, fmt::format("{} of a {}-byte key in pool '{}': {}", what, key_bytes, pool_name, why));
}

}  // namespace farmem::kv
