// Encoders of kv requests (docs/formats/kv.md): the bytes a client sends, fixed struct then the
// variable parts it announces. One implementation for the client library (kv/codec.h builds
// its messages with these), the tests and the fuzz corpus. Library farmem_kv_common (common
// only). They encode what they are given, without checking it (a test may build a malformed
// request on purpose); the client checks its arguments first. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/kv/wire.h"

namespace farmem::kv {

inline constexpr size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

// Bytes one operation takes in a kOps request: KvOpRequest, then key and value padded to 8.
inline constexpr size_t op_request_bytes(size_t key_bytes, size_t value_bytes) {
  return sizeof(wire::KvOpRequest) + pad8(key_bytes + value_bytes);
}

// Writes one kOps operation at `out` (room for op_request_bytes(key, value)): KvOpRequest, key,
// value, zero padding to 8. The value is written whatever the op (a get or erase carrying one
// is malformed: the client passes none). Returns the bytes written.
size_t write_op(uint8_t* out, wire::KvOp op, uint8_t flags, std::string_view key,
                std::string_view value);
// A KvOpsHeader for `count` operations on `pool` (the operations follow, from write_op).
std::string encode_ops_header(uint64_t pool, uint32_t count);

std::string encode_pool_request(std::string_view name, uint64_t capacity_bytes,
                                uint64_t expected_count, uint32_t flags);
std::string encode_pool_ref(uint64_t pool);  // close, info
std::string encode_configure(uint64_t pool, std::string_view command);
std::string encode_list(uint32_t start);
std::string encode_locate(uint64_t pool, wire::LocateMode mode, uint8_t flags, uint64_t offset,
                          uint64_t length, std::string_view key);
std::string encode_release(uint64_t pool, uint64_t token, uint32_t flags);
std::string encode_find(uint64_t pool, uint64_t start, std::string_view expression);
std::string encode_attribute(uint64_t pool, wire::Attribute attribute, std::string_view key);
// kInvokeAdo (value empty) or kInvokePutAdo: KvAdoRequest + key + value + request.
std::string encode_ado(uint64_t pool, uint32_t flags, uint64_t value_size, std::string_view key,
                       std::string_view value, std::string_view request);

}  // namespace farmem::kv
