#include "farmem/kv/requests.h"

#include <cstring>

namespace farmem::kv {
namespace {

namespace w = wire;

template <typename T>
std::string fixed_then(const T& fixed, std::string_view a = {}, std::string_view b = {},
                       std::string_view c = {}) {
  std::string out;
  out.reserve(sizeof(fixed) + a.size() + b.size() + c.size());
  out.append(reinterpret_cast<const char*>(&fixed), sizeof(fixed));
  out.append(a);
  out.append(b);
  out.append(c);
  return out;
}

}  // namespace

size_t write_op(uint8_t* out, w::KvOp op, uint8_t flags, std::string_view key,
                std::string_view value) {
  w::KvOpRequest r{};
  r.op = static_cast<uint8_t>(op);
  r.flags = flags;
  r.key_bytes = static_cast<uint32_t>(key.size());
  r.value_bytes = static_cast<uint32_t>(value.size());
  std::memcpy(out, &r, sizeof(r));
  uint8_t* p = out + sizeof(r);
  std::memcpy(p, key.data(), key.size());
  if (!value.empty()) std::memcpy(p + key.size(), value.data(), value.size());
  const size_t body = key.size() + value.size();
  std::memset(p + body, 0, pad8(body) - body);
  return sizeof(r) + pad8(body);
}

std::string encode_ops_header(uint64_t pool, uint32_t count) {
  w::KvOpsHeader h{};
  h.pool = pool;
  h.count = count;
  return fixed_then(h);
}

std::string encode_pool_request(std::string_view name, uint64_t capacity_bytes,
                                uint64_t expected_count, uint32_t flags) {
  w::KvPoolRequest r{};
  r.capacity_bytes = capacity_bytes;
  r.expected_count = expected_count;
  r.flags = flags;
  r.name_bytes = static_cast<uint32_t>(name.size());
  return fixed_then(r, name);
}

std::string encode_pool_ref(uint64_t pool) { return fixed_then(w::KvPoolRef{pool}); }

std::string encode_configure(uint64_t pool, std::string_view command) {
  w::KvConfigureRequest r{};
  r.pool = pool;
  r.command_bytes = static_cast<uint32_t>(command.size());
  return fixed_then(r, command);
}

std::string encode_list(uint32_t start) {
  w::KvListRequest r{};
  r.start = start;
  return fixed_then(r);
}

std::string encode_locate(uint64_t pool, w::LocateMode mode, uint8_t flags, uint64_t offset,
                          uint64_t length, std::string_view key) {
  w::KvLocateRequest r{};
  r.pool = pool;
  r.offset = offset;
  r.length = length;
  r.key_bytes = static_cast<uint32_t>(key.size());
  r.mode = static_cast<uint8_t>(mode);
  r.flags = flags;
  return fixed_then(r, key);
}

std::string encode_release(uint64_t pool, uint64_t token, uint32_t flags) {
  w::KvReleaseRequest r{};
  r.pool = pool;
  r.token = token;
  r.flags = flags;
  return fixed_then(r);
}

std::string encode_find(uint64_t pool, uint64_t start, std::string_view expression) {
  w::KvFindRequest r{};
  r.pool = pool;
  r.start = start;
  r.expression_bytes = static_cast<uint32_t>(expression.size());
  return fixed_then(r, expression);
}

std::string encode_attribute(uint64_t pool, w::Attribute attribute, std::string_view key) {
  w::KvAttributeRequest r{};
  r.pool = pool;
  r.attribute = static_cast<uint32_t>(attribute);
  r.key_bytes = static_cast<uint32_t>(key.size());
  return fixed_then(r, key);
}

std::string encode_ado(uint64_t pool, uint32_t flags, uint64_t value_size, std::string_view key,
                       std::string_view value, std::string_view request) {
  w::KvAdoRequest r{};
  r.pool = pool;
  r.value_size = value_size;
  r.flags = flags;
  r.key_bytes = static_cast<uint32_t>(key.size());
  r.value_bytes = static_cast<uint32_t>(value.size());
  r.request_bytes = static_cast<uint32_t>(request.size());
  return fixed_then(r, key, value, request);
}

}  // namespace farmem::kv
