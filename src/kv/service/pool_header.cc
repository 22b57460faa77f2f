#include "pool_header.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "farmem/kv/wire.h"

namespace farmem::kv::service {

namespace {

using nlohmann::json;

std::string ado_json(const AdoSettings& a) {
  json signals = json::array();
  if (a.post_put) signals.push_back("post-put");
  if (a.post_get) signals.push_back("post-get");
  if (a.post_erase) signals.push_back("post-erase");
  return json{{"plugins", a.plugins}, {"params", a.params}, {"signals", signals}}.dump();
}

Result<AdoSettings> ado_from_json(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["plugins"].is_array() || !j["params"].is_object() ||
      !j["signals"].is_array()) {
    return InvalidArgument("the pool header's ADO settings are not the expected JSON");
  }
  AdoSettings a;
  for (const json& p : j["plugins"]) {
    if (!p.is_string()) return InvalidArgument("an ADO plugin name is not a string");
    a.plugins.push_back(p.get<std::string>());
  }
  for (const auto& [k, v] : j["params"].items()) {
    if (!v.is_string()) return InvalidArgument("an ADO parameter is not a string");
    a.params[k] = v.get<std::string>();
  }
  for (const json& s : j["signals"]) {
    a.post_put |= s == "post-put";
    a.post_get |= s == "post-get";
    a.post_erase |= s == "post-erase";
  }
  return a;
}

uint64_t checksum_of(const uint8_t* block, uint32_t bytes) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  const uint64_t zero = 0;
  XXH3_64bits_update(st, block, offsetof(PoolHeader, checksum));
  XXH3_64bits_update(st, &zero, sizeof(zero));
  XXH3_64bits_update(st, block + sizeof(PoolHeader), bytes - sizeof(PoolHeader));
  const uint64_t sum = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return sum;
}

}  // namespace

Result<uint64_t> write_pool_header(uint8_t* block, const PoolMeta& meta) {
  const std::string ado = ado_json(meta.ado);
  const uint64_t bytes = sizeof(PoolHeader) + meta.name.size() + ado.size();
  if (bytes > kPoolHeaderBlockBytes) {
    return ResourceExhausted(fmt::format(
        "pool '{}': its ADO settings take {} bytes, more than a durable pool's header holds ({})",
        meta.name, ado.size(), kPoolHeaderBlockBytes - sizeof(PoolHeader) - meta.name.size()));
  }
  PoolHeader h{};
  h.magic = kPoolHeaderMagic;
  h.format = kPoolHeaderFormat;
  h.bytes = static_cast<uint32_t>(bytes);
  h.object_id = meta.object_id;
  h.capacity_bytes = meta.capacity_bytes;
  h.table_offset = meta.table_offset;
  h.table_slots = meta.table_slots;
  h.sequence = meta.sequence;
  h.flags = meta.flags;
  h.name_bytes = static_cast<uint32_t>(meta.name.size());
  h.ado_bytes = static_cast<uint32_t>(ado.size());
  std::memcpy(block, &h, sizeof(h));
  std::memcpy(block + sizeof(h), meta.name.data(), meta.name.size());
  std::memcpy(block + sizeof(h) + meta.name.size(), ado.data(), ado.size());
  h.checksum = checksum_of(block, h.bytes);
  std::memcpy(block + offsetof(PoolHeader, checksum), &h.checksum, sizeof(h.checksum));
  return bytes;
}

Result<PoolMeta> read_pool_header(const uint8_t* block, uint64_t object_id) {
  PoolHeader h;
  std::memcpy(&h, block, sizeof(h));
  if (h.magic != kPoolHeaderMagic || h.object_id != object_id) {
    return NotFound("not a pool header of this object");
  }
  if (h.format != kPoolHeaderFormat) {
    return VersionMismatch(
        fmt::format("pool header format {} (this node reads {})", h.format, kPoolHeaderFormat));
  }
  const uint64_t bytes = uint64_t{sizeof(h)} + h.name_bytes + h.ado_bytes;
  if (h.bytes != bytes || bytes > kPoolHeaderBlockBytes || h.name_bytes == 0 ||
      h.name_bytes > wire::kMaxPoolNameBytes || h.reserved != 0 ||
      checksum_of(block, h.bytes) != h.checksum) {
    return ProtocolError("a pool header's sizes or checksum do not hold");
  }
  PoolMeta m;
  m.name.assign(reinterpret_cast<const char*>(block) + sizeof(h), h.name_bytes);
  m.object_id = h.object_id;
  m.capacity_bytes = h.capacity_bytes;
  m.table_offset = h.table_offset;
  m.table_slots = h.table_slots;
  m.sequence = h.sequence;
  m.flags = h.flags;
  FARMEM_ASSIGN_OR_RETURN(
      m.ado, ado_from_json(
                 {reinterpret_cast<const char*>(block) + sizeof(h) + h.name_bytes, h.ado_bytes}));
  return m;
}

}  // namespace farmem::kv::service
