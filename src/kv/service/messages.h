// Parsing and strict validation of kv requests (docs/formats/kv.md): every length exact, every
// reserved field and padding byte zero, every flag known; and the two steps replies are built
// of (a fixed struct, bytes padded to 8). Pure functions over the payload, so that unit tests
// and the fuzz target reach them without a node.
// Thread safety: pure.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/kv/requests.h"
#include "farmem/kv/wire.h"

namespace farmem::kv::service {

using Payload = std::vector<uint8_t>;

// The fixed struct at the start of a payload that must be exactly sizeof(T) + tail bytes.
template <typename T>
Status read_fixed(const Payload& p, T* out, const char* what) {
  if (p.size() < sizeof(T)) {
    return InvalidArgument(std::string(what) + " request is shorter than its fixed part");
  }
  std::memcpy(out, p.data(), sizeof(T));
  return OkStatus();
}

// The bytes after the fixed part, which must be exactly `bytes` long.
Result<std::string_view> exact_tail(const Payload& p, size_t fixed, uint64_t bytes,
                                    const char* what);

struct PoolNameRequest {
  wire::KvPoolRequest fixed{};
  std::string_view name;
};
// create / open / delete (opcode tells which rules apply).
Result<PoolNameRequest> parse_pool_request(const Payload& p, wire::KvOpcode op);
Status check_pool_name(std::string_view name);

// The pool handle every pool-addressed request starts with (routing), or an error.
Result<uint64_t> leading_pool_handle(const Payload& p);

struct OpView {
  wire::KvOpRequest op{};
  std::string_view key;
  std::string_view value;
};
// A kOps message: header plus `count` ops, each key [value] padded to 8 with zeros.
Status parse_ops(const Payload& p, wire::KvOpsHeader* header, std::vector<OpView>* ops);

struct LocateView {
  wire::KvLocateRequest fixed{};
  std::string_view key;
};
Result<LocateView> parse_locate(const Payload& p);
Result<wire::KvReleaseRequest> parse_release(const Payload& p);

struct FindView {
  wire::KvFindRequest fixed{};
  std::string_view expression;
};
Result<FindView> parse_find(const Payload& p);

struct AttributeView {
  wire::KvAttributeRequest fixed{};
  std::string_view key;
  bool per_key = false;
};
Result<AttributeView> parse_attribute(const Payload& p);

struct ConfigureView {
  wire::KvConfigureRequest fixed{};
  std::string_view command;
};
Result<ConfigureView> parse_configure(const Payload& p);
Result<uint64_t> parse_pool_ref(const Payload& p, const char* what);
Result<wire::KvListRequest> parse_list(const Payload& p);

// A configure command (kv.md "Configure commands").
struct ConfigureCommand {
  enum class Kind { kAddIndex, kRemoveIndex, kAdoPlugins, kAdoParam, kAdoSignals };
  Kind kind = Kind::kAddIndex;
  std::vector<std::string> list;  // plugins, or signals
  std::string key, value;         // AdoParam
};
Result<ConfigureCommand> parse_configure_command(std::string_view command);

// ---- replies ----
// Appends a fixed struct of a reply.
template <typename T>
void append(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
// Appends n bytes, then zeros to a multiple of 8.
inline void append_padded(std::string* out, const void* data, size_t n) {
  out->append(static_cast<const char*>(data), n);
  out->append(pad8(n) - n, '\0');
}

}  // namespace farmem::kv::service
