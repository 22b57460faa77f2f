#include "pool_header.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <string_view>

#include "farmem/kv/wire.h"

namespace farmem::kv::service {

namespace {

// The ADO settings' bytes (kv.md "On a durable memory node"): signals (u8: 1 post-put, 2
// post-get, 4 post-erase), 3 zero bytes, the plugin count (u32) and each plugin as a u32 length
// and its bytes, the parameter count (u32) and each parameter as key then value, each a u32
// length and its bytes. Any bytes at all (names and values come from clients).
constexpr uint8_t kPostPut = 1, kPostGet = 2, kPostErase = 4;

void put_u32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void put_bytes(std::string* out, std::string_view b) {
  put_u32(out, static_cast<uint32_t>(b.size()));
  out->append(b);
}

std::string encode_ado(const AdoSettings& a) {
  std::string out(4, '\0');
  out[0] = static_cast<char>((a.post_put ? kPostPut : 0) | (a.post_get ? kPostGet : 0) |
                             (a.post_erase ? kPostErase : 0));
  put_u32(&out, static_cast<uint32_t>(a.plugins.size()));
  for (const std::string& p : a.plugins) put_bytes(&out, p);
  put_u32(&out, static_cast<uint32_t>(a.params.size()));
  for (const auto& [k, v] : a.params) {
    put_bytes(&out, k);
    put_bytes(&out, v);
  }
  return out;
}

// Reads what encode_ado wrote, every length checked against what is left.
class AdoReader {
 public:
  explicit AdoReader(std::string_view in) : in_(in) {}
  bool u32(uint32_t* v) {
    if (in_.size() < 4) return false;
    std::memcpy(v, in_.data(), 4);
    in_.remove_prefix(4);
    return true;
  }
  bool bytes(std::string* out) {
    uint32_t n;
    if (!u32(&n) || n > in_.size()) return false;
    out->assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

Result<AdoSettings> decode_ado(std::string_view in) {
  const Status bad = ProtocolError("the pool header's ADO settings are malformed");
  if (in.size() < 4 || in[1] != 0 || in[2] != 0 || in[3] != 0 ||
      (static_cast<uint8_t>(in[0]) & ~(kPostPut | kPostGet | kPostErase)) != 0) {
    return bad;
  }
  AdoSettings a;
  const auto signals = static_cast<uint8_t>(in[0]);
  a.post_put = (signals & kPostPut) != 0;
  a.post_get = (signals & kPostGet) != 0;
  a.post_erase = (signals & kPostErase) != 0;
  AdoReader r(in.substr(4));
  uint32_t count;
  if (!r.u32(&count)) return bad;
  for (uint32_t i = 0; i < count; ++i) {
    if (!r.bytes(&a.plugins.emplace_back())) return bad;
  }
  if (!r.u32(&count)) return bad;
  for (uint32_t i = 0; i < count; ++i) {
    std::string k, v;
    if (!r.bytes(&k) || !r.bytes(&v)) return bad;
    a.params[std::move(k)] = std::move(v);
  }
  if (!r.done()) return bad;
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
  const std::string ado = encode_ado(meta.ado);
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
      m.ado,
      decode_ado({reinterpret_cast<const char*>(block) + sizeof(h) + h.name_bytes, h.ado_bytes}));
  return m;
}

}  // namespace farmem::kv::service
