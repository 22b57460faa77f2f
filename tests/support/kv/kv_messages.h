// Encoders of kv requests (docs/formats/kv.md) for tests and the fuzz corpus: byte strings
// exactly as a well-behaved client sends them. Header-only; depends on kv/wire.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/kv/wire.h"

namespace farmem::kv::testing {

namespace kw = farmem::kv::wire;

template <typename T>
std::string bytes_of(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

inline std::string padded(std::string s) {
  s.append((8 - s.size() % 8) % 8, '\0');
  return s;
}

inline std::string pool_request(std::string_view name, uint64_t capacity, uint32_t flags,
                                uint64_t expected = 0) {
  kw::KvPoolRequest r{capacity, expected, flags, static_cast<uint32_t>(name.size())};
  return bytes_of(r) + std::string(name);
}

inline std::string pool_ref(uint64_t pool) { return bytes_of(kw::KvPoolRef{pool}); }

struct OpSpec {
  kw::KvOp op = kw::KvOp::kGet;
  uint8_t flags = 0;
  std::string key;
  std::string value;
};

inline std::string ops_request(uint64_t pool, const std::vector<OpSpec>& ops) {
  std::string out = bytes_of(kw::KvOpsHeader{pool, static_cast<uint32_t>(ops.size()), 0});
  for (const OpSpec& o : ops) {
    kw::KvOpRequest r{};
    r.op = static_cast<uint8_t>(o.op);
    r.flags = o.flags;
    r.key_bytes = static_cast<uint32_t>(o.key.size());
    r.value_bytes = static_cast<uint32_t>(o.value.size());
    out += bytes_of(r) + padded(o.key + o.value);
  }
  return out;
}

inline std::string locate_request(uint64_t pool, std::string_view key, kw::LocateMode mode,
                                  uint64_t offset = 0, uint64_t length = 0, uint8_t flags = 0) {
  kw::KvLocateRequest r{};
  r.pool = pool;
  r.offset = offset;
  r.length = length;
  r.key_bytes = static_cast<uint32_t>(key.size());
  r.mode = static_cast<uint8_t>(mode);
  r.flags = flags;
  return bytes_of(r) + std::string(key);
}

inline std::string release_request(uint64_t pool, uint64_t token, uint32_t flags = 0) {
  return bytes_of(kw::KvReleaseRequest{pool, token, flags, 0});
}

inline std::string find_request(uint64_t pool, std::string_view expression, uint64_t start) {
  kw::KvFindRequest r{pool, start, static_cast<uint32_t>(expression.size()), 0};
  return bytes_of(r) + std::string(expression);
}

inline std::string attribute_request(uint64_t pool, kw::Attribute a, std::string_view key) {
  kw::KvAttributeRequest r{pool, static_cast<uint32_t>(a), static_cast<uint32_t>(key.size())};
  return bytes_of(r) + std::string(key);
}

inline std::string configure_request(uint64_t pool, std::string_view command) {
  kw::KvConfigureRequest r{pool, static_cast<uint32_t>(command.size()), 0};
  return bytes_of(r) + std::string(command);
}

inline std::string list_request(uint32_t start) { return bytes_of(kw::KvListRequest{start, 0}); }

}  // namespace farmem::kv::testing
