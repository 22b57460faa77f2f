// kOps messages for tests and the fuzz corpus, from a list of operations (malformed ones too: a
// value on a get, unknown flags), encoded by the client's own encoders (farmem/kv/requests.h,
// which encode every other request as well). Header-only; links farmem_kv_common.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/kv/requests.h"
#include "farmem/kv/wire.h"

namespace farmem::kv::testing {

template <typename T>
std::string bytes_of(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

struct OpSpec {
  wire::KvOp op = wire::KvOp::kGet;
  uint8_t flags = 0;
  std::string key;
  std::string value;
};

inline std::string ops_request(uint64_t pool, const std::vector<OpSpec>& ops) {
  std::string out = encode_ops_header(pool, static_cast<uint32_t>(ops.size()));
  for (const OpSpec& o : ops) {
    std::string op(op_request_bytes(o.key.size(), o.value.size()), '\0');
    write_op(reinterpret_cast<uint8_t*>(op.data()), o.op, o.flags, o.key, o.value);
    out += op;
  }
  return out;
}

}  // namespace farmem::kv::testing
